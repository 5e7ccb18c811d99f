"""`sandbox start --kafka-version`: the releases the CLI routes plans for, and one sentence for others."""

from __future__ import annotations

import pytest

from kafka_coop.errors import InvalidInput
from kafka_coop.sandbox import SUPPORTED_KAFKA_TEXT, check_kafka_version, has_java_member


@pytest.mark.parametrize(
    "version", ["3.7.2", "3.8.1", "3.9.0", "4.0.0", "4.1.1", "4.2.0", "4.4.0", " 4.4.0 "]
)
def test_a_supported_release_is_taken(version: str) -> None:
    assert check_kafka_version(version) == version.strip()


@pytest.mark.parametrize(
    "version", ["3.6.2", "2.8.0", "4.3.0", "4.5.0", "5.0.0", "latest", "4.4", "4.4.0-rc1"]
)
def test_a_release_outside_the_tested_ones_is_refused_naming_them(version: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_kafka_version(version)
    assert caught.value.message == (
        f"Kafka {version!r} is not a release the sandbox is tested on: it runs {SUPPORTED_KAFKA_TEXT}."
    )


@pytest.mark.parametrize(
    ("version", "java"), [("3.7.2", False), ("4.0.0", False), ("4.1.1", True), ("4.4.0", True)]
)
def test_the_java_member_runs_from_kafka_clients_4_1(version: str, java: bool) -> None:
    """It closes through CloseOptions (KIP-1092, 4.1): `sandbox prepare` skips it before, naming why."""
    assert has_java_member(version) is java

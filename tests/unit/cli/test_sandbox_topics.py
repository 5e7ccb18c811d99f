"""`sandbox start --topic NAME[:PARTITIONS]`: a topic Kafka would refuse is bad input (exit 2, one
sentence), told before anything starts, never as an unreachable cluster after the broker is up."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult


def _start(invoke_cli: Callable[..., CliResult], tmp_path: Path, topic: str) -> CliResult:
    # port 1: never bound, so a start that got past the topic check would fail on it, not run a broker
    return invoke_cli("sandbox", "start", "--dir", str(tmp_path / "sb"), "--port", "1", "--topic", topic)


@pytest.mark.parametrize(
    ("topic", "says"),
    [
        ("my orders:3", "'my orders'"),
        ("orders/eu", "a-z, A-Z, 0-9"),
        (".", "'.' and '..'"),
        ("..:2", "'.' and '..'"),
        ("x" * 250, "at most 249"),
        ("orders:0", "at least 1"),
        ("orders:-1", "at least 1"),
        ("orders:two", "whole number"),
        (":3", "no topic name"),
    ],
    ids=["space", "slash", "dot", "dot-dot", "too-long", "zero-partitions", "negative", "words", "no-name"],
)
def test_a_topic_kafka_would_refuse_is_exit_2_before_anything_starts(
    invoke_cli: Callable[..., CliResult], tmp_path: Path, topic: str, says: str
) -> None:
    result = _start(invoke_cli, tmp_path, topic)
    assert result.code == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and says in errors[0], result.stderr
    assert "reach" not in result.stderr
    assert not (tmp_path / "sb").exists(), "nothing was started or written"


def test_a_topic_of_every_legal_character_is_accepted(
    invoke_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """Past the topic check the start goes on (and fails on port 1, which is below the free ports)."""
    result = _start(invoke_cli, tmp_path, "Orders_v2.eu-1:3")
    assert "topic" not in result.stderr.lower(), result.stderr

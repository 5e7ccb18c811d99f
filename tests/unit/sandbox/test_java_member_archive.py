"""The Java member's AppCDS archive: one per group protocol, each trained on its own protocol's start."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_coop._jvm import cache_options
from kafka_coop._vocab import GroupProtocol
from kafka_coop.sandbox import _java


@pytest.fixture
def trained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[GroupProtocol]:
    """Training runs recorded instead of started (no JVM): each writes a non-empty archive."""
    jar = tmp_path / "classes" / _java.MEMBER_JAR
    jar.parent.mkdir()
    monkeypatch.setattr(_java, "java_member_classpath", lambda _version, cache=None: str(jar))
    monkeypatch.setattr(_java.shutil, "which", lambda _name: "/bin/sh")
    runs: list[GroupProtocol] = []

    def train(
        _java_bin: str, _classpath: str, archive: Path, protocol: GroupProtocol, **_how: object
    ) -> bool:
        runs.append(protocol)
        archive.write_bytes(b"archive")
        return True

    monkeypatch.setattr(_java, "_train_archive", train)
    return runs


def test_a_kip848_member_gets_an_archive_trained_with_the_consumer_protocol(
    trained: list[GroupProtocol],
) -> None:
    classic = _java.java_member_archive("4.1.1")
    consumer = _java.java_member_archive("4.1.1", group_protocol="consumer")
    assert classic is not None and consumer is not None
    assert classic != consumer
    assert trained == ["classic", "consumer"]


def test_each_protocols_archive_is_trained_once(trained: list[GroupProtocol]) -> None:
    for _ in range(2):
        _java.java_member_archive("4.1.1")
        _java.java_member_archive("4.1.1", group_protocol="consumer")
    assert trained == ["classic", "consumer"]


def test_an_aot_cache_is_kept_apart_from_the_appcds_archive(trained: list[GroupProtocol]) -> None:
    """A JDK 25 AOT cache and an AppCDS archive are different files a JVM maps with different options."""
    cds = _java.java_member_archive("4.1.1")
    aot = _java.java_member_archive("4.1.1", kind="aot")
    assert cds is not None and aot is not None
    assert (cds.suffix, aot.suffix) == (".jsa", ".aot")
    assert cache_options(cds) == [f"-XX:SharedArchiveFile={cds}"]
    assert cache_options(aot, "aot") == [f"-XX:AOTCache={aot}"]


def test_other_jvm_options_get_their_own_archive(trained: list[GroupProtocol]) -> None:
    """An archive is only valid for the options it was made with (a C2 run cannot map a C1 one)."""
    c1 = _java.java_member_archive("4.1.1")
    c2 = _java.java_member_archive("4.1.1", options=("-Xmx192m", "-XX:+UseSerialGC"))
    assert c1 != c2
    assert trained == ["classic", "classic"]

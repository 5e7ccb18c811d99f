"""The Spark driver's AppCDS archive: written by a training child, mapped once made, keyed by options."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_coop.analytics._spark_cds import QUIET, TRAINING_ENV, archive_options, archive_path

pytestmark = pytest.mark.spark  # needs the spark extra (PySpark)

OPTIONS = "-Dlog4j2.configurationFile=file:/tmp/x -XX:+UseParallelGC"


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KAFKA_COOP_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(TRAINING_ENV, raising=False)
    return tmp_path


def test_a_driver_starts_without_an_archive_until_one_was_made() -> None:
    assert archive_options(OPTIONS) == []


def test_a_made_archive_is_mapped_and_the_jvm_stays_quiet_about_it() -> None:
    archive = archive_path(OPTIONS)
    assert archive is not None
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"archive")
    assert archive_options(OPTIONS) == [f"-XX:SharedArchiveFile={archive}", *QUIET]


def test_the_training_child_writes_the_archive_where_its_parent_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TRAINING_ENV, str(tmp_path / "x.partial"))
    assert archive_options(OPTIONS) == [f"-XX:ArchiveClassesAtExit={tmp_path / 'x.partial'}", *QUIET]


def test_other_driver_options_get_another_archive(cache: Path) -> None:
    first, second = archive_path(OPTIONS), archive_path(OPTIONS + " -Xss4m")
    assert first is not None and second is not None
    assert first != second and first.parent == second.parent == cache / "spark-cds"

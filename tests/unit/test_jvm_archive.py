"""A training run's output becomes an AppCDS archive only whole and only from a run that succeeded."""

from __future__ import annotations

from pathlib import Path

from kafka_coop._jvm_archive import partial_path, publish


def test_a_written_training_output_is_renamed_into_place(tmp_path: Path) -> None:
    archive = tmp_path / "a.jsa"
    partial = partial_path(archive)
    partial.write_bytes(b"classes")
    assert publish(partial, archive)
    assert archive.read_bytes() == b"classes" and not partial.exists()


def test_an_empty_training_output_is_dropped(tmp_path: Path) -> None:
    archive = tmp_path / "a.jsa"
    partial = partial_path(archive)
    partial.write_bytes(b"")
    assert not publish(partial, archive)
    assert not archive.exists() and not partial.exists()


def test_the_output_of_a_failed_training_run_is_dropped(tmp_path: Path) -> None:
    archive = tmp_path / "a.jsa"
    partial = partial_path(archive)
    partial.write_bytes(b"classes")
    assert not publish(partial, archive, trained=False)
    assert not archive.exists() and not partial.exists()


def test_a_training_run_that_wrote_nothing_publishes_nothing(tmp_path: Path) -> None:
    archive = tmp_path / "a.jsa"
    assert not publish(partial_path(archive), archive)
    assert not archive.exists()

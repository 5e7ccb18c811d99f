"""The cache publishes whole or not at all: a training run's archive, a built directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_coop._jvm import build_once, built_note, is_built, partial_path, publish_file


def test_a_written_training_output_is_renamed_into_place(tmp_path: Path) -> None:
    archive = tmp_path / "a.jsa"
    partial = partial_path(archive)
    partial.write_bytes(b"classes")
    assert publish_file(partial, archive)
    assert archive.read_bytes() == b"classes" and not partial.exists()


def test_an_empty_training_output_is_dropped(tmp_path: Path) -> None:
    archive = tmp_path / "a.jsa"
    partial = partial_path(archive)
    partial.write_bytes(b"")
    assert not publish_file(partial, archive)
    assert not archive.exists() and not partial.exists()


def test_the_output_of_a_failed_training_run_is_dropped(tmp_path: Path) -> None:
    archive = tmp_path / "a.jsa"
    partial = partial_path(archive)
    partial.write_bytes(b"classes")
    assert not publish_file(partial, archive, succeeded=False)
    assert not archive.exists() and not partial.exists()


def test_a_training_run_that_wrote_nothing_publishes_nothing(tmp_path: Path) -> None:
    archive = tmp_path / "a.jsa"
    assert not publish_file(partial_path(archive), archive)
    assert not archive.exists()


def test_a_built_directory_is_published_with_what_its_build_returned(tmp_path: Path) -> None:
    target = tmp_path / "lib"
    built = build_once(target, lambda staging: (staging / "a.jar").write_text("x") and "a.jar\n")
    assert built == target and (target / "a.jar").exists() and built_note(target) == "a.jar\n"


def test_a_finished_build_is_not_built_again(tmp_path: Path) -> None:
    target = tmp_path / "lib"
    build_once(target, lambda staging: "first")
    assert build_once(target, lambda staging: "second") == target
    assert built_note(target) == "first"


def test_a_failed_build_leaves_nothing_behind(tmp_path: Path) -> None:
    def fail(staging: Path) -> str:
        (staging / "half.jar").write_text("x")
        raise RuntimeError("maven failed")

    with pytest.raises(RuntimeError):
        build_once(tmp_path / "lib", fail)
    assert not is_built(tmp_path / "lib") and list(tmp_path.iterdir()) == []


def test_a_build_another_process_finished_first_is_kept(tmp_path: Path) -> None:
    target = tmp_path / "lib"

    def race(staging: Path) -> str:
        target.mkdir()  # another process publishes its build while ours runs
        (target / ".complete").write_text("theirs")
        return "ours"

    build_once(target, race)
    assert built_note(target) == "theirs" and not partial_path(target).exists()

"""`kafka-coop prepare-spark` on this machine's PySpark and JDK: it makes what the Spark engine would
otherwise pay for in its first report, and a second run finds all of it cached."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult

pytestmark = pytest.mark.spark  # needs the spark extra (PySpark)


def test_prepare_spark_makes_the_decoder_and_the_driver_class_archive_in_an_empty_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., CliResult]
) -> None:
    monkeypatch.setenv("KAFKA_COOP_CACHE_DIR", str(tmp_path / "cache"))
    result = run_cli("prepare-spark", "--no-kafka-connector", "--output", "json", timeout=400)
    assert result.code == 0, result.stderr
    made = json.loads(result.stdout)
    assert made["kafka_connector"] is None
    assert made["class_archive_made"] is True
    for part in ("decoder_jar", "class_archive"):
        path = Path(made[part])
        assert path.is_relative_to(tmp_path / "cache") and path.stat().st_size > 0
    assert "Training the Spark driver's class archive" in result.stderr  # the long wait is announced

    again = run_cli("prepare-spark", "--no-kafka-connector", "--output", "json")
    assert again.code == 0, again.stderr
    assert json.loads(again.stdout) == {**made, "class_archive_made": False}
    assert "Training" not in again.stderr


def test_prepare_spark_on_a_set_up_machine_finds_the_connector_and_archive_cached(
    run_cli: Callable[..., CliResult],
) -> None:
    """`make setup` ran it on this machine; the table names each part and says it was cached."""
    result = run_cli("prepare-spark")
    assert result.code == 0, result.stderr
    assert "spark-kafka-" in result.stdout
    assert result.stdout.count("(cached)") == 2

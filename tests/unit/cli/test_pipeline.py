"""`kafka-coop pipeline run` and `report`'s pipeline options: bad input is one sentence and exit 2,
before any broker or Spark is reached (click's CliRunner, in this process)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult

UNREACHABLE = "127.0.0.1:1"  # never dialled: each case fails before the cluster is asked


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["events"], "is not an events topic"),
        (["kafka://"], "is not an events topic"),
        (["kafka://e", "--trigger", "soon"], "--trigger 'soon' is not a positive duration"),
        (["kafka://e", "--watermark", "0s"], "--watermark '0s' is not a positive duration"),
        (["kafka://e", "--window", "-1m"], "--window '-1m' is not a positive duration"),
        (["kafka://e", "--idle", "never"], "--idle 'never' is not a positive duration"),
    ],
)
def test_pipeline_run_bad_arguments_are_one_sentence_and_exit_2(
    tmp_path: Path, invoke_cli: Callable[..., CliResult], args: list[str], message: str
) -> None:
    result = invoke_cli(
        "pipeline", "run", *args, "--out", str(tmp_path / "out"), "--bootstrap-server", UNREACHABLE
    )
    assert (result.code, message in result.stderr, "Traceback" in result.stderr) == (2, True, False), (
        result.stderr
    )
    assert not (tmp_path / "out").exists()


def test_pipeline_run_passes_its_durations_to_the_pipeline_in_milliseconds(
    tmp_path: Path, invoke_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--idle` reaches the job as `idle_ms`, beside the watermark and the window (the run is stubbed:
    only what the command hands over is judged)."""
    import kafka_coop.analytics as analytics
    from kafka_coop.analytics import PipelineConfig
    from kafka_coop.analytics._pipeline import RunResult

    given: list[PipelineConfig] = []

    def run_pipeline(config: PipelineConfig, on_batch: object = None) -> RunResult:
        given.append(config)
        return RunResult(batches=0, last_batch=None, interrupted=False, stopped_by="stop")

    monkeypatch.setattr(analytics, "run_pipeline", run_pipeline)
    result = invoke_cli(
        "pipeline", "run", "kafka://e", "--out", str(tmp_path / "out"), "--bootstrap-server", UNREACHABLE,
        "--idle", "30s", "--watermark", "500ms", "--window", "2m",
    )  # fmt: skip
    assert result.code == 0, result.stderr
    assert [(c.idle_ms, c.watermark_ms, c.window_ms) for c in given] == [(30_000, 500, 120_000)]


def test_pipeline_run_with_an_unwritable_output_is_one_sentence_and_exit_2(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    result = invoke_cli(
        "pipeline", "run", "kafka://e", "--out", str(blocked / "out"), "--bootstrap-server", UNREACHABLE
    )
    assert (result.code, "Cannot write to --out" in result.stderr) == (2, True), result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--group", "g"], "select from the live pipeline's output only"),
        (["--since", "yesterday"], "--since 'yesterday' is not a time"),
    ],
)
def test_report_pipeline_options_on_event_files_are_one_sentence_and_exit_2(
    tmp_path: Path, invoke_cli: Callable[..., CliResult], args: list[str], message: str
) -> None:
    events = tmp_path / "e.jsonl"
    events.write_text("\n")
    result = invoke_cli("report", str(events), *args, "--out", str(tmp_path / "out"))
    assert (result.code, message in result.stderr) == (2, True), result.stderr
    assert not (tmp_path / "out").exists()

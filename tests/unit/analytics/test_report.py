"""`run_report` with the Python engine: what it writes, and that a failed run writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_coop.analytics import PhaseWindow, Summary, run_report, summarize
from kafka_coop.errors import InvalidInput
from tests.unit.analytics.test_engine import EAGER, KILLED


def write(path: Path, events: list[dict[str, object]], extra: str = "") -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + extra)
    return path


def test_report_writes_summary_plot_and_malformed_lines(tmp_path: Path) -> None:
    source = write(tmp_path / "events.jsonl", EAGER, extra="{torn\n")
    result = run_report([source], tmp_path / "out", engine="python")
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["malformed.jsonl", "summary.json", "unowned.png"]
    stored = Summary.model_validate_json((out / "summary.json").read_text())
    assert stored == result.summary == summarize(EAGER).model_copy(update={"malformed": 1})
    assert json.loads((out / "malformed.jsonl").read_text()) == {
        "path": str(source),
        "line": len(EAGER) + 1,
        "reason": "invalid JSON",
    }
    assert (out / "unowned.png").read_bytes()[:4] == b"\x89PNG"
    assert result.engine == "python"


def test_phases_can_be_given_as_a_file(tmp_path: Path) -> None:
    source = write(tmp_path / "e.jsonl", KILLED)
    phases = tmp_path / "phases.json"
    phases.write_text(json.dumps({"phases": [{"name": "kill", "start_ms": 0, "end_ms": 6000}]}))
    result = run_report([source], tmp_path / "out", engine="python", phases=phases)
    [phase] = result.summary.phases
    assert phase == summarize(KILLED, [PhaseWindow(name="kill", start_ms=0, end_ms=6000)]).phases[0]


def test_no_events_at_all_is_invalid_input_and_writes_nothing(tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text("not json\n")
    with pytest.raises(
        InvalidInput, match=r"no valid rebalance events \(1 malformed lines, the first at .*bad.jsonl:1"
    ):
        run_report([source], tmp_path / "out", engine="python")
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.jsonl"], "no temporary directory left behind"


def test_a_missing_source_fails_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="No such file"):
        run_report([tmp_path / "nope.jsonl"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_new_report_replaces_the_old_one_in_place(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_report([write(tmp_path / "a.jsonl", EAGER, extra="x\n")], out, engine="python")
    run_report([write(tmp_path / "b.jsonl", KILLED)], out, engine="python")
    assert sorted(p.name for p in out.iterdir()) == ["summary.json", "unowned.png"]
    assert Summary.model_validate_json((out / "summary.json").read_text()) == summarize(KILLED)


def test_kafka_sources_need_a_bootstrap_server(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="need --bootstrap-server"):
        run_report(["kafka://events"], tmp_path / "out", engine="python")

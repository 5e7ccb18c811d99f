"""Pure helpers of the rolling-bounce bench (bench/harness/figures.py, bench/_rolling_figures.py,
bench/_rolling_scenarios.py): record-log parsing, latency/duplicate/loss stats, ratios and the
unowned-partition timeline."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench._rolling_figures import heartbeat_model_notes
from bench._rolling_scenarios import BY_NAME, SCENARIOS, schedule, selected_scenarios
from bench.harness.figures import (
    ProcessedRecord,
    median_pause,
    parse_record_line,
    pause_figures,
    percentile,
    ratio,
    read_record_logs,
    record_stats,
    reduction,
    split_pause,
    unowned_steps,
)


def rec(partition: int, offset: int, produced: int, processed: int, topic: str = "t") -> ProcessedRecord:
    return ProcessedRecord("c", topic, partition, offset, produced, processed)


def test_parse_record_line_both_member_kinds_and_torn_lines() -> None:
    assert parse_record_line("m1 t 3 17 1000 1250") == ProcessedRecord("m1", "t", 3, 17, 1000, 1250)
    assert parse_record_line("m1 t 3 17 1000") is None  # torn by a kill
    assert parse_record_line("m1 t x 17 1000 1250") is None
    assert parse_record_line("") is None


def test_read_record_logs_skips_missing_files_and_bad_lines(tmp_path: Path) -> None:
    a = tmp_path / "a.txt"
    a.write_text("m t 0 0 10 20\nm t 0 1 11 2")  # second line torn
    records = read_record_logs([a, tmp_path / "missing.txt"])
    assert records == [ProcessedRecord("m", "t", 0, 0, 10, 20)]


def test_percentile_nearest_rank() -> None:
    assert percentile([], 99) is None
    assert percentile([5.0], 99) == 5.0
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 99) == 99.0
    assert percentile(values, 50) == 50.0
    assert percentile(values, 100) == 100.0
    assert percentile(list(reversed(values)), 1) == 1.0


def test_record_stats_latency_uses_first_delivery_and_window() -> None:
    records = [
        rec(0, 0, produced=100, processed=110),  # before the window
        rec(0, 1, produced=200, processed=260),
        rec(0, 1, produced=200, processed=900),  # redelivered after a rebalance: a duplicate
        rec(1, 0, produced=300, processed=305),
        rec(1, 1, produced=1000, processed=1001),  # after the window
        rec(0, 0, produced=100, processed=120, topic="other"),  # another scenario's topic
    ]
    stats = record_stats(records, topic="t", acked={0: 2, 1: 2}, window=(150, 500))
    assert stats.produced == 4
    assert stats.processed == 4
    assert stats.deliveries == 5
    assert stats.duplicates == 1
    assert stats.duplicated_records == 1
    assert stats.lost == 0
    assert stats.window_records == 2  # (0,1) and (1,0)
    assert stats.latency_p50_ms == 5.0
    assert stats.latency_p99_ms == 60.0  # first delivery, not the duplicate's 700
    assert stats.latency_max_ms == 60.0


def test_record_stats_counts_lost_and_triple_deliveries() -> None:
    records = [rec(0, 0, 1, 2), rec(0, 0, 1, 3), rec(0, 0, 1, 4), rec(0, 2, 1, 5)]
    stats = record_stats(records, topic="t", acked={0: 3, 1: 1}, window=(0, 10))
    assert stats.duplicates == 2
    assert stats.duplicated_records == 1
    assert stats.lost == 2
    assert stats.lost_examples == [(0, 1), (1, 0)]


def test_record_stats_empty_window_has_no_latency() -> None:
    stats = record_stats([rec(0, 0, 1, 2)], topic="t", acked={0: 1}, window=(100, 200))
    assert stats.window_records == 0
    assert stats.latency_p99_ms is None


def test_ratio_and_reduction() -> None:
    assert ratio(50.0, 200.0) == 0.25
    assert ratio(5.0, 0.0) is None
    assert reduction(37_138.0, 3_522.0) == pytest.approx(
        10.545, abs=1e-3
    )  # docs/protocols.md "Reference figures"
    assert reduction(100.0, 0.0) is None


def test_unowned_steps() -> None:
    steps = unowned_steps([(1000, 1500), (1200, 1500), (2000, 2100), (3000, 3000)], origin_ms=1000)
    assert steps == [(0, 1), (200, 2), (500, 0), (1000, 1), (1100, 0)]
    assert unowned_steps([], 0) == []


def test_scenarios_and_baselines() -> None:
    names = {s.name for s in SCENARIOS}
    assert len(names) == len(SCENARIOS) == 16
    for s in SCENARIOS:
        assert s.baseline in names
        if s.case == "bounce":
            assert s.baseline.endswith("eager-dynamic") and s.baseline.startswith(s.name.split("-")[0])
    assert [s.name for s in selected_scenarios("py-coop-static, slow-eager")] == [
        "py-coop-static",
        "slow-eager",
    ]
    assert selected_scenarios("all") == list(SCENARIOS)
    with pytest.raises(ValueError, match="unknown scenario"):
        selected_scenarios("nope")


def test_split_pause_own_vs_collateral() -> None:
    steps = [(["a"], 1000, 2000), (["b", "c"], 3000, 4000)]
    pauses = [
        ("a", 900, 1500),  # a's own restart, clipped to its step: 500
        ("b", 1200, 1300),  # b paused while a restarted: collateral 100
        ("b", 3100, 3600),  # b's own step: 500
        ("c", 2500, 3200),  # starts between steps; 200 inside c's own step
        ("a", 3500, 3600),  # a during b/c's step: collateral 100
    ]
    assert split_pause(pauses, steps) == (1200, 200)
    assert split_pause([], steps) == (0, 0)


def _event(ts: int, seq: int, kind: str, owned: bool, process: str) -> dict[str, object]:
    parts = [["t", 0]] if kind in ("assigned", "revoked") else []
    return {
        "v": 1, "ts_ms": ts, "seq": seq, "group": "g", "member_id": f"id-{process}", "instance_id": None,
        "client_id": "m0", "protocol": "eager", "kind": kind, "partitions": parts,
        "owned": [["t", 0]] if owned else [], "callback_ms": 0.0, "committed": None, "error": None,
        "commit_ms": None, "process": process,
    }  # fmt: skip


def test_a_dynamic_members_restart_is_its_own_pause_across_its_two_processes() -> None:
    """The bench's member is its slot (client.id): the gap from the old process's revoke to the new
    process's assignment is the restarted member's own pause, not a vanished owner and a stranger."""
    events = [
        _event(100, 0, "started", False, "A"), _event(200, 1, "assigned", True, "A"),
        _event(1000, 2, "revoked", False, "A"), _event(1100, 3, "closed", False, "A"),
        _event(1500, 0, "started", False, "B"), _event(2000, 1, "assigned", True, "B"),
    ]  # fmt: skip
    figures = pause_figures(events, (900, 2100), [(["m0"], 900, 2100)])
    assert (figures.pause_ms, figures.own_pause_ms, figures.collateral_pause_ms) == (1000, 1000, 0)
    assert figures.pause_ms_by_member == {"m0": 1000}


def test_the_floor_pair_repeats_interleaved_right_after_its_first_run() -> None:
    picked = selected_scenarios("py-eager-dynamic,py-coop-static,py-consumer-static,py-eager-static")
    order = [(scn.name, repeat) for scn, repeat in schedule(picked, 3)]
    assert order == [
        ("py-eager-dynamic", 0),
        ("py-coop-static", 0),
        ("py-consumer-static", 0),
        ("py-coop-static", 1),
        ("py-consumer-static", 1),
        ("py-coop-static", 2),
        ("py-consumer-static", 2),
        ("py-eager-static", 0),
    ]
    assert [s.name for s, _ in schedule(selected_scenarios("py-coop-static"), 3)] == ["py-coop-static"]


def test_median_pause_of_a_scenarios_runs() -> None:
    runs = [{"scenario": "a", "pause_ms": v} for v in (5, 1, 3)] + [{"scenario": "b", "pause_ms": 2}]
    assert (median_pause(runs, "a"), median_pause(runs, "b"), median_pause(runs, "c")) == (3.0, 2.0, None)
    assert median_pause([*runs, {"scenario": "a", "pause_ms": 4}], "a") == 3.5


def test_the_heartbeat_model_predicts_from_the_static_restart_and_the_heartbeat() -> None:
    def run(name: str, own_ms: int) -> dict[str, object]:
        return {"scenario": name, "own_pause_ms": own_ms, "steps": [{}] * 10, "members": 10}

    notes = heartbeat_model_notes([run("py-eager-static", 3000), run("py-eager-dynamic", 29000)])
    assert notes == [
        "heartbeat model, py-eager-dynamic (heartbeat.interval.ms 3000): own pause per restart predicted "
        "3.00 s (restart 0.30 s + 3 s x 9/10), measured 2.90 s"
    ]
    assert BY_NAME["py-eager-dynamic-hb1s"].label == "python eager dynamic hb 1 s (idle)"

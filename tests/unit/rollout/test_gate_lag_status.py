"""verify-group's lag-status check: Burrow's statuses over the looks of one run, as pass / warn / fail."""

from __future__ import annotations

from typing import Any

from kafka_coop.inspection import GroupSnapshot, PartitionLag, lag_series
from kafka_coop.rollout import evaluate, load_migration
from kafka_coop.rollout._gate import LAG_EVIDENCE_S
from tests.unit.rollout.test_gate import member, snapshot


def look(taken_ms: int, committed: int, end: int, *, owned: bool = True, **overrides: Any) -> GroupSnapshot:
    owner = member("a").model_copy(update={"assignment": (("t", 0),) if owned else ()})
    lag = (PartitionLag(topic="t", partition=0, committed=committed, end_offset=end, lag=end - committed),)
    return snapshot(owner, lag=lag, taken_ms=taken_ms, **overrides)


def check(report: Any) -> Any:
    return next(c for c in report.checks if c.name == "lag-status")


def test_lag_series_takes_each_partitions_samples_in_time_order() -> None:
    series = lag_series([look(2_000, 5, 10), look(1_000, 3, 10)])
    assert [(s.ts_ms, s.committed) for s in series[("t", 0)]] == [(1_000, 3), (2_000, 5)]


def test_a_healthy_window_passes_and_the_report_carries_the_partitions() -> None:
    report = evaluate(look(3_000, 10, 10), previous=look(1_000, 2, 10))
    assert check(report).status == "pass"
    assert report.lag is not None and report.lag.partitions[0].status == "OK"


def test_an_offset_that_did_not_move_over_a_short_window_is_not_judged() -> None:
    """Members commit every 5 s: over 2 s an unmoved offset says nothing, so there is no verdict (not a
    warning that --strict would turn into a failed gate), and the check says what would judge it."""
    report = evaluate(look(3_000, 4, 50), previous=look(1_000, 4, 50))
    assert (check(report).status, report.status) == ("not-judged", "pass")
    assert check(report).reason.startswith("not judged: the offsets of t-0 did not move over 2 s")
    assert "--lag-window 10" in check(report).hint
    assert report.lag is not None and report.lag.partitions[0].status == "NOT_JUDGED"
    assert not report.failed(strict=True)


def test_a_stall_over_the_evidence_window_fails_the_gate() -> None:
    end = 1_000 + int(LAG_EVIDENCE_S * 1000)
    report = evaluate(look(end, 4, 50), previous=look(1_000, 4, 50))
    assert check(report).status == "fail"
    assert check(report).reason.startswith("STALLED: t-0 over 10 s (2 samples)")


def test_a_rewind_fails_whatever_the_window() -> None:
    report = evaluate(look(1_500, 3, 50), previous=look(1_000, 40, 50))
    assert check(report).status == "fail"
    assert "went back 40 -> 3" in check(report).reason


def test_a_stopped_group_passes_where_the_phase_expects_it_empty() -> None:
    spec = load_migration("cooperative-to-eager-cutover")
    stopped = [look(t, 4, 50, owned=False, exists=False, members=()) for t in (1_000, 20_000)]
    report = evaluate(stopped[1], previous=stopped[0], spec=spec, phase=1)
    assert check(report).status == "pass"
    assert check(report).reason.startswith("stopped, as this phase expects")


def test_the_window_grows_with_the_looks_of_a_wait() -> None:
    looks = [look(t, 4 + t // 1000, 100 + t // 100) for t in (1_000, 3_000, 5_000, 7_000)]
    report = evaluate(looks[-1], previous=looks[-2], history=looks[:-2])
    assert report.lag is not None
    assert (report.lag.window_s, report.lag.partitions[0].samples) == (6.0, 4)
    assert report.lag.status == "WARNING"


def test_lag_growth_within_the_tolerance_passes_and_says_the_tolerance_decided() -> None:
    """Issue 27: "lag 9 -> 50 ... PASS" read as a contradiction; the reason names what allowed it."""
    report = evaluate(look(3_000, 10, 60), previous=look(1_000, 10, 19))
    growth = next(c for c in report.checks if c.name == "lag-not-growing")
    assert growth.status == "pass"
    assert (
        growth.reason == "lag 9 -> 50 in 2.0 s: grew by 41, within the tolerance of 100 (100 records or 10%)"
    )

"""`run_gate`, the gate as a library call: its looks (scripted here, no broker), its wait, its report.

verify-group renders what it returns and the plan runner reads it, so these rows hold what both rely
on: the report is the last look's, a wait re-looks until a pass or the timeout, progress is told once
per look that did not pass, and the first look measures the lag trend unless told not to.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import pytest

from kafka_coop.admin import ClusterAdmin
from kafka_coop.inspection import GroupSnapshot
from kafka_coop.rollout import GateProgress, group_missing, load_migration, run_gate
from tests.unit.rollout.test_gate import COOP, lagging, member, snapshot

ADMIN = cast(ClusterAdmin, SimpleNamespace(bootstrap="nowhere:9092"))
REBALANCING = snapshot(*COOP, state="preparing_rebalance")
STABLE = snapshot(*COOP)


class Looks:
    """The cluster's answers, one per look, in order; the last one repeats."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *answers: GroupSnapshot) -> None:
        self.answers: Iterator[GroupSnapshot] = iter(answers)
        self.last = answers[-1]
        self.trend_looks = 0
        self.plain_looks = 0
        monkeypatch.setattr("kafka_coop.rollout.live._verify.take_snapshot", self.take_snapshot)
        monkeypatch.setattr("kafka_coop.rollout.live._verify.snapshot_with_lag_trend", self.with_trend)
        monkeypatch.setattr("kafka_coop.rollout.live._verify.open_client", lambda *_a, **_k: None)

    def next(self) -> GroupSnapshot:
        """Each look is taken later than the one before it, as the cluster's looks are (the gate's
        consistent-looks check compares a look only with earlier ones)."""
        self.last = next(self.answers, self.last)
        self.looks = getattr(self, "looks", 0) + 1
        return self.last.model_copy(update={"taken_ms": self.last.taken_ms + self.looks})

    def take_snapshot(self, *_args: Any, **_kwargs: Any) -> GroupSnapshot:
        self.plain_looks += 1
        return self.next()

    def with_trend(self, *_args: Any, **_kwargs: Any) -> tuple[GroupSnapshot | None, GroupSnapshot]:
        self.trend_looks += 1
        return lagging(100, taken_ms=5_000), self.next()


def test_without_wait_one_look_gives_the_typed_report_of_that_look(monkeypatch: pytest.MonkeyPatch) -> None:
    Looks(monkeypatch, REBALANCING, STABLE)
    told: list[GateProgress] = []
    report = run_gate(ADMIN, "orders", on_progress=told.append)
    assert (report.group, report.status, told) == ("orders", "fail", [])
    assert {c.name: c.status for c in report.checks}["no-rebalance-in-progress"] == "fail"


def test_a_wait_looks_again_until_the_gate_passes_and_tells_each_look_that_did_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looks = Looks(monkeypatch, REBALANCING, REBALANCING, STABLE)
    told: list[GateProgress] = []
    report = run_gate(ADMIN, "orders", wait=True, interval_s=0.1, timeout_s=30, on_progress=told.append)
    assert report.status == "pass"
    assert [(p.attempt, p.report.status) for p in told] == [(1, "fail"), (2, "fail")]
    assert all(0 < p.left_s <= 30 for p in told)
    # the third look is the first stable one: a confirming look right after it, not a whole interval
    assert (looks.trend_looks, looks.plain_looks) == (1, 3)


def test_a_wait_that_runs_out_returns_the_last_failing_report(monkeypatch: pytest.MonkeyPatch) -> None:
    Looks(monkeypatch, REBALANCING)
    report = run_gate(ADMIN, "orders", wait=True, interval_s=0.1, timeout_s=0.35)
    assert report.failed()


def test_with_strict_a_warning_is_waited_out_like_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    dynamic = snapshot(member("a", static=False), member("b", static=False))
    # two looks each: every run confirms its first look with a second (consistent-looks)
    Looks(monkeypatch, dynamic, dynamic, STABLE)
    assert run_gate(ADMIN, "orders", wait=True, interval_s=0.1).status == "warn"
    Looks(monkeypatch, dynamic, dynamic, STABLE)
    assert run_gate(ADMIN, "orders", wait=True, interval_s=0.1, strict=True).status == "pass"


def test_the_first_look_measures_the_lag_trend_and_a_zero_window_takes_one_sample(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    Looks(monkeypatch, lagging(90))
    trend = {c.name: c.reason for c in run_gate(ADMIN, "orders").checks}["lag-not-growing"]
    looks = Looks(monkeypatch, lagging(90))
    single = {c.name: c.reason for c in run_gate(ADMIN, "orders", lag_window_s=0).checks}["lag-not-growing"]
    assert (trend.startswith("lag 100 -> 90 in 5.0 s"), single) == (True, "lag 90 (one sample)")
    assert (looks.trend_looks, looks.plain_looks) == (0, 2)  # the look, and the one that confirms it


def test_a_group_that_is_not_there_is_missing_unless_the_phase_expects_it_empty(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cutover = load_migration("eager-to-cooperative-cutover")
    empty_at = next(n for n in range(1, len(cutover.phases) + 1) if cutover.expect_at(n).empty)
    Looks(monkeypatch, snapshot())
    assert group_missing(run_gate(ADMIN, "orders")) is True
    expected_empty = run_gate(ADMIN, "orders", spec=cutover, phase=empty_at)
    assert group_missing(expected_empty) is False

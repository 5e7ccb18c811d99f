"""A gate run on a live group (shell): look, evaluate, and with `wait` look again until it passes.

`verify-group` renders what this returns, and the plan runner calls it in-process, so both get the one
typed GateReport; nothing is rendered to text and parsed back. The checks themselves are `_gate`'s
(pure); this module only takes the looks (inspection's shell) and keeps the clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from pydantic import BaseModel, ConfigDict

from kafka_coop.admin import ClusterAdmin
from kafka_coop.coordinator import CoordinatorClient, open_client
from kafka_coop.inspection import GroupSnapshot, snapshot_with_lag_trend, take_snapshot
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC
from kafka_coop.rollout._gate import GateReport, evaluate
from kafka_coop.rollout._looks import ONE_LOOK
from kafka_coop.rollout._spec import MigrationSpec

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_INTERVAL_S = 2.0
# The confirming look: longer than KIP-1263's default assignment interval (1 s), so a group epoch bumped
# just before the first look shows its new target assignment in the second.
CONFIRM_LOOK_S = 1.2
# A classic group's rebalance shows in its state and generation: a short pause between the looks will do.
CONFIRM_CLASSIC_S = 0.3


class GateProgress(BaseModel):
    """One look of a `wait` that did not pass yet: the next look comes `interval_s` later."""

    model_config = ConfigDict(frozen=True)

    attempt: int
    report: GateReport
    left_s: float  # what is left of the run's timeout


def group_missing(report: GateReport) -> bool:
    """The group was not there (and the target did not expect it empty): callers say so in their words."""
    return any(c.name == "group-exists" and c.status == "fail" for c in report.checks)


def _unconfirmed(report: GateReport) -> bool:
    """Every check passed but the one that asks a second look to confirm this one: the first look of a
    run, or the first consistent look after inconsistent ones (a --wait that saw the rebalance end)."""
    looks = [c for c in report.checks if c.name == "consistent-looks"]
    others = [c for c in report.checks if c.name != "consistent-looks"]
    return (
        bool(looks)
        and looks[0].status == "fail"
        and looks[0].reason.startswith((ONE_LOOK, "the look before was not consistent"))
        and not any(c.status == "fail" for c in others)
    )


def run_gate(
    admin: ClusterAdmin,
    group: str,
    *,
    conf: Mapping[str, str] | None = None,
    spec: MigrationSpec | None = None,
    phase: int | None = None,
    expect_members: int | None = None,
    wait: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = DEFAULT_INTERVAL_S,
    lag_window_s: float | None = None,
    strict: bool = False,
    manifests_topic: str | None = DEFAULT_MANIFEST_TOPIC,
    on_progress: Callable[[GateProgress], None] | None = None,
    on_look: Callable[[GroupSnapshot], None] | None = None,
) -> GateReport:
    """The gate's report on `group` against the target (a migration phase and/or a member count).

    Every read retries a moving coordinator within `timeout_s`; with `wait`, looks repeat `interval_s`
    apart until the report passes (warnings fail it with `strict`) or the timeout runs out, and the
    last report is returned either way. `lag_window_s`: None measures the lag trend over the time the
    first look takes, N over at least N seconds, 0 takes one sample. `manifests_topic` None reads none.
    `on_look` sees every look judged (a live view refreshes on them while the gate waits).
    """
    deadline = time.monotonic() + timeout_s
    # The first look opens its own coordinator connection, alongside its other reads: an unreachable
    # cluster is told within --timeout, not after a connection's wait and then the look's. Only a
    # --wait loop keeps one open for the looks after it.
    coordinator: CoordinatorClient | None = None

    def budget() -> float:
        """Every read of a look retries a moving coordinator, but never past --timeout."""
        return max(1.0, deadline - time.monotonic())

    def look() -> GroupSnapshot:
        return seen(
            take_snapshot(
                admin,
                group,
                conf=conf,
                manifests_topic=manifests_topic or None,
                timeout_s=budget(),
                coordinator=coordinator,
            )
        )

    def seen(snap: GroupSnapshot) -> GroupSnapshot:
        if on_look is not None:
            on_look(snap)
        return snap

    def judge(snap: GroupSnapshot, previous: GroupSnapshot | None, seen: list[GroupSnapshot]) -> GateReport:
        """The checks on the newest look, against the earlier ones (two consistent looks asked)."""
        return evaluate(
            snap,
            spec=spec,
            phase=phase,
            expect_members=expect_members,
            previous=previous,
            history=seen[:-1],
            two_looks=True,
            alive_since_ms=seen[0].taken_ms if wait and seen else None,
        )

    try:
        previous: GroupSnapshot | None = None
        history: list[GroupSnapshot] = []  # every look of this run: the lag window grows with --wait
        attempt = 0
        while True:
            attempt += 1
            if attempt == 1 and (lag_window_s is None or lag_window_s > 0):
                # The first lag sample goes out with the look's other reads, the second is read after all
                # of them answered (and at least --lag-window seconds later when given): the window is
                # measured, and the check's reason states it.
                previous, snap = snapshot_with_lag_trend(
                    admin,
                    group,
                    min_window_s=lag_window_s or 0.0,
                    conf=conf,
                    manifests_topic=manifests_topic or None,
                    timeout_s=budget(),
                    coordinator=coordinator,
                )
                seen(snap)
            else:
                snap = look()  # later rounds compare with the previous round, --interval apart
            history += [s for s in (previous, snap) if s is not None and s not in history]
            report = judge(snap, previous, history)
            pause = CONFIRM_LOOK_S if snap.coordinator_view.group_epoch is not None else CONFIRM_CLASSIC_S
            if _unconfirmed(report) and time.monotonic() + pause < deadline:
                # everything else passed on one look: a second, `pause` later, must find the group
                # where the first did (rollout/_looks.py)
                time.sleep(pause)
                snap = look()  # `previous` stays: the lag trend keeps the window the first look measured
                history.append(snap)
                report = judge(snap, previous, history)
            if not wait or not report.failed(strict) or time.monotonic() + interval_s > deadline:
                break
            if coordinator is None:
                coordinator = open_client(admin.bootstrap, conf, timeout_s=min(budget(), 10.0))
            left = deadline - time.monotonic()
            if on_progress is not None:
                on_progress(GateProgress(attempt=attempt, report=report, left_s=left))
            previous = snap
            time.sleep(interval_s)
    finally:
        if coordinator is not None:
            coordinator.close()
    return report

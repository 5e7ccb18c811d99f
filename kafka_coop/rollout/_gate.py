"""Gate evaluation (pure): a GroupSnapshot, optionally a migration phase -> named checks.

The general checks (the group exists, is stable, no id is used twice, lag is not growing) read the
snapshot; whether the group is in a phase's state is decided by the phase-matching engine (`_match`)
over the snapshot's fleet description, the same engine the planner uses. A fact we could not see
(`unknown`) never passes a phase check silently: it warns "not proven" and says what would prove it.
`verify-group` exits 1 on any fail (raising GateFailed), and with --strict on any warn.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from kafka_coop._vocab import plural, verb
from kafka_coop.identity import duplicate_instance_ids
from kafka_coop.inspection import GroupLagStatus, GroupSnapshot, MemberSnapshot, evaluate_group, lag_series
from kafka_coop.rollout._checks import Check, Status, worst
from kafka_coop.rollout._fleet import fleet_from_snapshot, known_defect_notes
from kafka_coop.rollout._kip848 import STATIC_BOUNCE_ADVICE
from kafka_coop.rollout._looks import ONE_LOOK, consistent_looks_check
from kafka_coop.rollout._match import match_phase
from kafka_coop.rollout._reconcile import reconciliation_check
from kafka_coop.rollout._requirements import requirement_checks, requirement_facts
from kafka_coop.rollout._spec import MigrationSpec

LAG_GROWTH_TOLERANCE = 0.10  # growth above 10% (and 100 records) between two samples is "growing"
LAG_GROWTH_FLOOR = 100
# STALLED and STOPPED say "no commit moved the offset during the window": members commit every
# auto.commit.interval.ms (5 s by default), so only a window of two intervals is evidence enough to
# judge; a shorter one is "not judged" (neither a pass nor a warning).
LAG_EVIDENCE_S = 10.0


class GateTarget(BaseModel):
    """What the group is checked against: a migration phase and/or an expected member count."""

    model_config = ConfigDict(frozen=True)

    migration: str | None = None
    phase: int | None = None
    expect_members: int | None = None


class GateReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    group: str
    target: GateTarget
    status: Status
    checks: tuple[Check, ...]
    taken_ms: int
    lag: GroupLagStatus | None = None  # Burrow's per-partition statuses, with window and evidence

    def failed(self, strict: bool = False) -> bool:
        return self.status == "fail" or (strict and self.status == "warn")

    def summary(self) -> str:
        """The checks that did not pass, in one line: `name status (members)`."""
        bad = [c for c in self.checks if c.status not in ("pass", "not-judged")]
        if not bad:
            return "all checks pass"
        return "; ".join(f"{c.name} {c.status}" + (f" ({len(c.members)})" if c.members else "") for c in bad)


def _names(members: Sequence[MemberSnapshot]) -> tuple[str, ...]:
    return tuple(m.name for m in members)


def _general_checks(snap: GroupSnapshot, previous: GroupSnapshot | None, expect_empty: bool) -> list[Check]:
    checks: list[Check] = []
    if not snap.exists and not expect_empty:
        checks.append(
            Check(
                name="group-exists",
                status="fail",
                reason=f"group {snap.group} has no members",
                hint="Check the group name (kafka-coop describe --all) and that its members run.",
            )
        )
        return checks
    in_rebalance = snap.state in ("preparing_rebalance", "completing_rebalance")
    checks.append(
        Check(
            name="no-rebalance-in-progress",
            status="fail" if in_rebalance else "pass",
            reason=f"group is {snap.state}" if in_rebalance else "no rebalance in progress",
            hint="Wait for the rebalance to finish (--wait re-checks)." if in_rebalance else "",
        )
    )
    if not expect_empty:
        stable = snap.state == "stable"
        checks.append(
            Check(
                name="group-stable",
                status="pass" if stable else "fail",
                reason=f"group is {snap.state}",
                hint="" if stable else "Wait for the group to settle (--wait re-checks).",
            )
        )
    dupes = duplicate_instance_ids((m.member_id, m.instance_id) for m in snap.members)
    checks.append(
        Check(
            name="unique-instance-ids",
            status="fail" if dupes else "pass",
            reason=f"group.instance.id used more than once: {', '.join(sorted(dupes))}"
            if dupes
            else "no duplicates",
            members=tuple(sorted(dupes)),
            hint="Give every member its own group.instance.id (e.g. '{pod}')." if dupes else "",
        )
    )
    dynamic = [m for m in snap.members if not m.instance_id]
    if snap.members:
        checks.append(
            Check(
                name="static-membership",
                status="warn" if dynamic else "pass",
                reason=(
                    f"{len(dynamic)} of {plural(len(snap.members), 'member')} "
                    f"{verb(len(dynamic), 'has', 'have')} no group.instance.id: "
                    "every bounce of theirs rebalances the group"
                    if dynamic
                    else "every member is static"
                ),
                members=_names(dynamic),
                hint="Set group.instance.id on every member (static membership)." if dynamic else "",
            )
        )
        protocols = {
            m.rebalance_protocol.value for m in snap.members if m.rebalance_protocol.value != "unknown"
        }
        assignor_lists = {m.assignors.value for m in snap.members if m.assignors.source == "declared"}
        mixed = len(protocols) > 1 or len(assignor_lists) > 1
        checks.append(
            Check(
                name="members-agree",
                status="warn" if mixed else "pass",
                reason=(
                    f"members differ: protocols {sorted(protocols)}, declared assignor lists "
                    f"{sorted(list(a) for a in assignor_lists)} (expected only mid-rollout)"
                    if mixed
                    else "members agree on protocol and assignors"
                ),
            )
        )
    checks.append(_lag_check(snap, previous))
    return checks


def _unconfirmed_while_failing(checks: list[Check]) -> list[Check]:
    """A look awaiting its confirming second one is no failure of its own while other checks fail: it is
    not judged until they pass (verify-group takes the second look then)."""
    others_fail = any(c.status == "fail" for c in checks if c.name != "consistent-looks")
    return [
        c.model_copy(
            update={
                "status": "not-judged",
                "reason": "not judged yet: other checks fail; a second look confirms this one once they pass",
            }
        )
        if others_fail and c.name == "consistent-looks" and c.reason.startswith(ONE_LOOK)
        else c
        for c in checks
    ]


def _static_bounce_hint(snap: GroupSnapshot) -> list[str]:
    """A consumer-protocol group short of members, with static ones: a restarted member may be refused
    while its killed predecessor's session lasts (UNRELEASED_INSTANCE_ID)."""
    if snap.group_type != "consumer" or not any(m.instance_id for m in snap.members):
        return []
    return [f"Under the consumer protocol, {STATIC_BOUNCE_ADVICE}."]


def _lag_check(snap: GroupSnapshot, previous: GroupSnapshot | None) -> Check:
    now = snap.total_lag
    if now is None:
        return Check(name="lag-not-growing", status="pass", reason="no committed offsets yet")
    if previous is None or previous.total_lag is None:
        return Check(name="lag-not-growing", status="pass", reason=f"lag {now} (one sample)")
    before = previous.total_lag
    seconds = max(0.001, (snap.taken_ms - previous.taken_ms) / 1000)
    allowed = max(LAG_GROWTH_FLOOR, int(before * LAG_GROWTH_TOLERANCE))
    tolerance = f"the tolerance of {allowed} ({LAG_GROWTH_FLOOR} records or {LAG_GROWTH_TOLERANCE:.0%})"
    growing = now - before > allowed
    if growing:
        why = f": grew by {now - before}, more than {tolerance}: consumers are falling behind"
    elif now > before:
        why = f": grew by {now - before}, within {tolerance}"
    else:
        why = ""
    return Check(
        name="lag-not-growing",
        status="warn" if growing else "pass",
        reason=f"lag {before} -> {now} in {seconds:.1f} s{why}",
        hint="Let the consumers catch up before the next bounce." if growing else "",
    )


def _parts(group_lag: GroupLagStatus, status: str) -> str:
    names = [f"{p.topic}-{p.partition}" for p in group_lag.partitions if p.status == status]
    return ", ".join(names[:5]) + (f" (+{len(names) - 5})" if len(names) > 5 else "")


def lag_status_check(group_lag: GroupLagStatus, *, expect_empty: bool) -> Check:
    """Burrow's group status as a gate check: REWIND, STALLED and STOPPED fail (the last two are only
    given over a window of LAG_EVIDENCE_S, else NOT_JUDGED: no verdict); WARNING warns; STOPPED passes
    where the phase expects no members."""
    status, window = group_lag.status, group_lag.window_s
    samples = max((p.samples for p in group_lag.partitions), default=0)
    where = f"over {window:g} s ({samples} samples)"
    if status == "OK":
        return Check(name="lag-status", status="pass", reason=f"every partition OK {where}")
    worst_part = group_lag.worst(1)[0]
    if status == "NOT_JUDGED":
        return Check(
            name="lag-status",
            status="not-judged",
            reason=f"not judged: the offsets of {_parts(group_lag, status)} did not move {where}, "
            f"too short a window to tell a stall from the members' commit interval",
            hint=f"--lag-window {LAG_EVIDENCE_S:g} (or --wait) judges it.",
        )
    reason = f"{status}: {_parts(group_lag, status)} {where}; e.g. {worst_part.evidence}"
    if status == "STOPPED" and expect_empty:
        return Check(name="lag-status", status="pass", reason=f"stopped, as this phase expects: {reason}")
    verdict: Status = "fail" if status in ("REWIND", "STALLED", "STOPPED") else "warn"
    hint = {
        "REWIND": "A committed offset went back: an offset reset or a member committing stale offsets.",
        "STALLED": "A member owns these partitions but does not commit: look for a stuck poll loop.",
        "STOPPED": "No member owns these partitions and nobody commits: start the consumers.",
        "WARNING": "The consumers commit but fall behind: let them catch up before the next bounce.",
    }[status]
    return Check(name="lag-status", status=verdict, reason=reason, hint=hint)


def evaluate(
    snap: GroupSnapshot,
    *,
    spec: MigrationSpec | None = None,
    phase: int | None = None,
    expect_members: int | None = None,
    previous: GroupSnapshot | None = None,
    history: Sequence[GroupSnapshot] = (),
    two_looks: bool = False,
) -> GateReport:
    """All checks that apply to this target, in a stable order. `history`: earlier looks (oldest first;
    `previous` is added if missing), whose committed offsets form the lag window with this one.
    A look taken while the group moves never passes; `two_looks` (verify-group) also asks an earlier
    look in `history` to confirm it (rollout/_looks.py)."""
    expect_empty = spec is not None and phase is not None and spec.expect_at(phase).empty
    checks = _general_checks(snap, previous, expect_empty)
    earlier = [*history, *([previous] if previous is not None and previous not in history else [])]
    if snap.exists and not expect_empty:
        looks = consistent_looks_check(snap, earlier, two_looks=two_looks)
        if looks is not None:
            checks.append(looks)
    reconciled = reconciliation_check(snap, earlier, snap.broker.consumer_heartbeat_ms)
    if reconciled is not None:
        checks.append(reconciled)
    group_lag: GroupLagStatus | None = None
    if snap.lag:
        owned = {tp for m in snap.members for tp in m.assignment}
        group_lag = evaluate_group(lag_series([*earlier, snap]), owned=owned, judge_after_s=LAG_EVIDENCE_S)
        if group_lag.partitions:
            checks.append(lag_status_check(group_lag, expect_empty=expect_empty))
    fleet = fleet_from_snapshot(snap)
    if expect_members is not None:
        n = len(snap.members)
        checks.append(
            Check(
                name="member-count",
                status="pass" if n == expect_members else "fail",
                reason=f"{plural(n, 'member')}, expected {expect_members}",
                hint=" ".join(
                    [*known_defect_notes(fleet), *_static_bounce_hint(snap)] if n < expect_members else []
                ),
            )
        )
    if spec is not None and phase is not None:
        if phase != 0:
            spec.phase(phase)  # raises InvalidInput for a phase the migration does not have
        checks.extend(match_phase(fleet, spec, phase).checks)
        if phase == 0:
            checks.extend(requirement_checks(spec.requires, requirement_facts(fleet)))
    checks = _unconfirmed_while_failing(checks)
    return GateReport(
        group=snap.group,
        target=GateTarget(migration=spec.name if spec else None, phase=phase, expect_members=expect_members),
        status=worst(c.status for c in checks),
        checks=tuple(checks),
        taken_ms=snap.taken_ms,
        lag=group_lag,
    )

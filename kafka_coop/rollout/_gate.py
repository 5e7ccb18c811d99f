"""Gate evaluation (pure): a GroupSnapshot, optionally a migration phase -> named checks.

Each check is pass / warn / fail with one reason and the members it concerns. A fact we could not see
(`unknown`) never passes a phase check silently: it warns "not proven" and says what would prove it.
`verify-group` exits 1 on any fail, and with --strict on any warn.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kafka_coop.inspect import GroupSnapshot, MemberSnapshot, version_at_least
from kafka_coop.rollout._spec import MemberConfig, MigrationSpec, Requirements

Status = Literal["pass", "warn", "fail"]
_RANK: dict[Status, int] = {"pass": 0, "warn": 1, "fail": 2}
LAG_GROWTH_TOLERANCE = 0.10  # growth above 10% (and 100 records) between two samples is "growing"
LAG_GROWTH_FLOOR = 100


class Check(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    status: Status
    reason: str
    members: tuple[str, ...] = ()


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

    def failed(self, strict: bool = False) -> bool:
        return self.status == "fail" or (strict and self.status == "warn")


def _names(members: Sequence[MemberSnapshot]) -> tuple[str, ...]:
    return tuple(m.name for m in members)


def _general_checks(snap: GroupSnapshot, previous: GroupSnapshot | None, expect_empty: bool) -> list[Check]:
    checks: list[Check] = []
    if not snap.exists and not expect_empty:
        checks.append(
            Check(name="group-exists", status="fail", reason=f"group {snap.group_id} has no members")
        )
        return checks
    in_rebalance = snap.state in ("preparing_rebalance", "completing_rebalance")
    checks.append(
        Check(
            name="no-rebalance-in-progress",
            status="fail" if in_rebalance else "pass",
            reason=f"group is {snap.state}" if in_rebalance else "no rebalance in progress",
        )
    )
    if not expect_empty:
        stable = snap.state == "stable"
        checks.append(
            Check(
                name="group-stable",
                status="pass" if stable else "fail",
                reason=f"group is {snap.state}",
            )
        )
    counts = Counter(m.instance_id for m in snap.members if m.instance_id)
    dupes = sorted(i for i, n in counts.items() if n > 1)
    checks.append(
        Check(
            name="unique-instance-ids",
            status="fail" if dupes else "pass",
            reason=f"group.instance.id used more than once: {', '.join(dupes)}" if dupes else "no duplicates",
            members=tuple(dupes),
        )
    )
    dynamic = [m for m in snap.members if not m.instance_id]
    if snap.members:
        checks.append(
            Check(
                name="static-membership",
                status="warn" if dynamic else "pass",
                reason=(
                    f"{len(dynamic)} of {len(snap.members)} members have no group.instance.id: "
                    "every bounce of theirs rebalances the group"
                    if dynamic
                    else "every member is static"
                ),
                members=_names(dynamic),
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


def _lag_check(snap: GroupSnapshot, previous: GroupSnapshot | None) -> Check:
    now = snap.total_lag
    if now is None:
        return Check(name="lag-not-growing", status="pass", reason="no committed offsets yet")
    if previous is None or previous.total_lag is None:
        return Check(name="lag-not-growing", status="pass", reason=f"lag {now} (one sample)")
    before = previous.total_lag
    seconds = max(0.001, (snap.taken_ms - previous.taken_ms) / 1000)
    growing = now - before > max(LAG_GROWTH_FLOOR, before * LAG_GROWTH_TOLERANCE)
    return Check(
        name="lag-not-growing",
        status="warn" if growing else "pass",
        reason=f"lag {before} -> {now} in {seconds:.1f} s"
        + (": consumers are falling behind" if growing else ""),
    )


def _every_member(
    name: str,
    snap: GroupSnapshot,
    wanted: str,
    value: Callable[[MemberSnapshot], tuple[str, str]],
    how_to_prove: str,
) -> Check:
    wrong: list[str] = []
    unknown: list[str] = []
    for m in snap.members:
        got, source = value(m)
        if source == "unknown" or got == "unknown":
            unknown.append(m.name)
        elif got != wanted:
            wrong.append(f"{m.name}={got}")
    if wrong:
        return Check(
            name=name,
            status="fail",
            reason=f"expected {wanted}; found {', '.join(wrong)}",
            members=tuple(w.split("=")[0] for w in wrong),
        )
    if unknown:
        return Check(
            name=name,
            status="warn",
            reason=f"{wanted} not proven for {len(unknown)} member(s): {how_to_prove}",
            members=tuple(unknown),
        )
    return Check(name=name, status="pass", reason=f"every member is {wanted}")


def _member_config(snap: GroupSnapshot, configs: dict[str, MemberConfig]) -> Check:
    wrong: list[str] = []
    undeclared: list[str] = []
    for m in snap.members:
        family = m.client_family.value
        want = configs.get(family) if family != "unknown" else None
        if m.manifest is None:
            undeclared.append(m.name)
            continue
        if want is None:
            if family not in configs:
                wrong.append(f"{m.name}: {family} members have no config in this migration")
            continue
        got_protocol = m.manifest.group_protocol
        if got_protocol != want.group_protocol:
            wrong.append(f"{m.name}: group.protocol {got_protocol}, expected {want.group_protocol}")
        elif (
            want.group_protocol == "classic"
            and want.assignors
            and tuple(m.manifest.assignors) != want.assignors
        ):
            wrong.append(f"{m.name}: assignors {list(m.manifest.assignors)}, expected {list(want.assignors)}")
        elif want.static_membership and not m.instance_id:
            wrong.append(f"{m.name}: no group.instance.id, the phase runs static members")
    if wrong:
        return Check(
            name="member-config",
            status="fail",
            reason="; ".join(wrong),
            members=tuple(w.split(":")[0] for w in wrong),
        )
    if undeclared:
        return Check(
            name="member-config",
            status="warn",
            reason=f"{len(undeclared)} member(s) publish no manifest, so their assignor list cannot be seen "
            "(only the selected protocol is on the wire); run them with kafka-coop manifests",
            members=tuple(undeclared),
        )
    return Check(name="member-config", status="pass", reason="every member declares this phase's config")


def _phase_checks(snap: GroupSnapshot, spec: MigrationSpec, phase: int) -> list[Check]:
    expect = spec.expect_at(phase)
    checks: list[Check] = []
    if expect.empty:
        checks.append(
            Check(
                name="group-empty",
                status="pass" if not snap.members else "fail",
                reason="no members: safe to start the new config"
                if not snap.members
                else f"{len(snap.members)} member(s) still in the group",
                members=_names(snap.members),
            )
        )
        return checks
    if expect.group_type is not None:
        checks.append(
            Check(
                name="group-type",
                status="pass" if snap.type == expect.group_type else "fail",
                reason=f"group type {snap.type}, expected {expect.group_type}",
            )
        )
    if expect.selected_assignor is not None and snap.type == "classic":
        ok = snap.assignor in expect.selected_assignor
        checks.append(
            Check(
                name="selected-assignor",
                status="pass" if ok else "fail",
                reason=f"group selected {snap.assignor or 'nothing'}, "
                f"expected {' or '.join(expect.selected_assignor)}",
            )
        )
    if expect.member_type is not None:
        checks.append(
            _every_member(
                "member-type",
                snap,
                expect.member_type,
                lambda m: (m.member_type.value, m.member_type.source),
                "the member type is not visible; run them with kafka-coop manifests",
            )
        )
    if expect.rebalance_protocol is not None:
        checks.append(
            _every_member(
                "member-protocol",
                snap,
                expect.rebalance_protocol,
                lambda m: (m.rebalance_protocol.value, m.rebalance_protocol.source),
                "no wire signal decides it; kafka-coop manifests declare it",
            )
        )
    checks.append(_member_config(snap, {k: v for k, v in spec.config_at(phase).items()}))
    if phase == 0:
        checks.extend(requirement_checks(spec.requires, _facts_of(snap)))
    return checks


class RequirementFacts(BaseModel):
    """What a migration's broker/group prerequisites are judged on; from a snapshot or a fleet file."""

    model_config = ConfigDict(frozen=True)

    kafka_version: str = "unknown"
    version_signal: str = ""
    rebalance_protocols: tuple[str, ...] | None = None
    migration_policy: str | None = None
    group_max_size: int | None = None
    group_consumer_max_size: int | None = None
    member_count: int = 0
    assignor: str = ""
    carrying_user_data: tuple[str, ...] = ()  # members whose assignment carries userData
    user_data_unseen: tuple[str, ...] = ()  # members whose assignment bytes were not visible


def _facts_of(snap: GroupSnapshot) -> RequirementFacts:
    broker = snap.broker
    return RequirementFacts(
        kafka_version=broker.kafka_version.value,
        version_signal=broker.kafka_version.signal,
        rebalance_protocols=broker.rebalance_protocols,
        migration_policy=broker.migration_policy,
        group_max_size=broker.group_max_size,
        group_consumer_max_size=broker.group_consumer_max_size,
        member_count=len(snap.members),
        assignor=snap.assignor,
        carrying_user_data=_names([m for m in snap.members if m.assignment_user_data]),
        user_data_unseen=_names(
            [m for m in snap.members if snap.type == "classic" and m.assignment_user_data is None]
        ),
    )


def requirement_checks(req: Requirements, facts: RequirementFacts) -> list[Check]:
    """A migration's prerequisites (broker version, protocols, policy, userData, size) as checks."""
    checks: list[Check] = []
    if req.broker_min is not None:
        ok = version_at_least(facts.kafka_version, req.broker_min)
        want = f"{req.broker_min[0]}.{req.broker_min[1]}"
        checks.append(
            Check(
                name="broker-version",
                status="pass" if ok else ("warn" if ok is None else "fail"),
                reason=f"broker is {facts.kafka_version}, the path needs >= {want}"
                + (f" ({facts.version_signal})" if facts.version_signal else ""),
            )
        )
        protocols = facts.rebalance_protocols
        enabled = protocols is not None and "consumer" in protocols
        checks.append(
            Check(
                name="consumer-protocol-enabled",
                status="pass" if enabled else ("warn" if protocols is None else "fail"),
                reason="group.coordinator.rebalance.protocols = "
                + (",".join(protocols) if protocols else "unknown"),
            )
        )
    if req.policy_allows is not None:
        policy = facts.migration_policy
        allowed = policy in ("bidirectional", req.policy_allows)
        checks.append(
            Check(
                name="migration-policy",
                status="pass" if allowed else ("warn" if policy is None else "fail"),
                reason=(
                    f"group.consumer.migration.policy = {policy or 'unknown'}; this {req.policy_allows} "
                    + (
                        "is allowed"
                        if allowed
                        else f"is refused by the broker: set it to {req.policy_allows} or bidirectional"
                    )
                ),
            )
        )
    if req.no_assignment_user_data:
        carrying, unseen = facts.carrying_user_data, facts.user_data_unseen
        if unseen and not carrying:
            checks.append(
                Check(
                    name="no-custom-user-data",
                    status="warn",
                    reason=f"the assignment bytes of {len(unseen)} member(s) were not visible (the group "
                    "answers DescribeGroups with them only while Stable); re-run to prove it",
                    members=unseen,
                )
            )
        else:
            checks.append(
                Check(
                    name="no-custom-user-data",
                    status="fail" if carrying else "pass",
                    reason=(
                        f"{len(carrying)} member assignment(s) carry userData (written by the group leader's "
                        f"{facts.assignor or 'selected'} assignor; librdkafka's cooperative-sticky can): "
                        "the broker refuses to convert the group "
                        '("userData from a custom assignor would be lost")'
                        if carrying
                        else "no assignment carries custom userData"
                    ),
                    members=carrying,
                )
            )
    if req.size_limit is not None:
        limit = (
            facts.group_consumer_max_size
            if req.size_limit == "group.consumer.max.size"
            else facts.group_max_size
        )
        ok_size = limit is None or facts.member_count <= limit
        checks.append(
            Check(
                name="group-size",
                status="pass" if ok_size else "fail",
                reason=f"{facts.member_count} members, {req.size_limit} = "
                + (str(limit) if limit is not None else "unknown"),
            )
        )
    return checks


def evaluate(
    snap: GroupSnapshot,
    *,
    spec: MigrationSpec | None = None,
    phase: int | None = None,
    expect_members: int | None = None,
    previous: GroupSnapshot | None = None,
) -> GateReport:
    """All checks that apply to this target, in a stable order."""
    expect_empty = spec is not None and phase is not None and spec.expect_at(phase).empty
    checks = _general_checks(snap, previous, expect_empty)
    if expect_members is not None:
        n = len(snap.members)
        checks.append(
            Check(
                name="member-count",
                status="pass" if n == expect_members else "fail",
                reason=f"{n} members, expected {expect_members}",
            )
        )
    if spec is not None and phase is not None:
        if phase != 0:
            spec.phase(phase)  # raises InvalidInput for a phase the migration does not have
        checks.extend(_phase_checks(snap, spec, phase))
    status: Status = max((c.status for c in checks), key=_RANK.__getitem__, default="pass")
    return GateReport(
        group=snap.group_id,
        target=GateTarget(migration=spec.name if spec else None, phase=phase, expect_members=expect_members),
        status=status,
        checks=tuple(checks),
        taken_ms=snap.taken_ms,
    )

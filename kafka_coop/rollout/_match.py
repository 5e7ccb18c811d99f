"""Phase matching, the one engine: is a fleet in the state a migration's phase N leaves it in?

The planner asks it to find where a fleet is on a path; `verify-group --phase N` asks it whether a
live group may go on to phase N+1. Both ask this module, over the same fleet description (from a
GroupSnapshot or a fleet file), so a plan and its own gates cannot disagree.

Every fact is judged three ways: it holds (pass), it is not visible so it is not proven (warn: a fact we
could not see never passes silently), or it is wrong (fail). The planner reads these as yes / maybe /
no: a phase that only may be met counts as not yet done, so a plan never skips a step it cannot prove.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kafka_coop._vocab import ConfiguredFamily, plural, verb
from kafka_coop.families import Family, catalog
from kafka_coop.inspection import MemberSnapshot
from kafka_coop.rollout._checks import Check, Status, worst
from kafka_coop.rollout._fleet import FleetDescription, declared_assignors, wire_assignors
from kafka_coop.rollout._spec import Expect, MemberConfig, MigrationPhase, MigrationSpec

Match = Literal["yes", "maybe", "no"]
FleetState = Literal["eager", "cooperative", "consumer", "mixed", "unknown", "empty"]
MATCH_OF: dict[Status, Match] = {"pass": "yes", "warn": "maybe", "fail": "no"}

MANIFEST_HINT = "Run the members with kafka-coop manifests: they declare their config."


@dataclass(frozen=True)
class Finding:
    """One member's standing on one check: `detail` says it in a sentence, `got` is the value seen."""

    check: str
    status: Status
    member: str
    detail: str
    got: str = ""


# --- one member ----------------------------------------------------------------------------------------
def _expect_findings(member: MemberSnapshot, expect: Expect) -> list[Finding]:
    out: list[Finding] = []
    label, member_type, protocol = member.name, member.member_type.value, member.rebalance_protocol.value
    if expect.member_type is not None:
        if member_type == "unknown":
            out.append(Finding("member-type", "warn", label, f"the member type of {label} is not visible"))
        elif member_type != expect.member_type:
            detail = f"{label} is a {member_type} member, expected {expect.member_type}"
            out.append(Finding("member-type", "fail", label, detail, got=member_type))
    if expect.rebalance_protocol is not None:
        if protocol == "unknown":
            out.append(Finding("member-protocol", "warn", label, f"the protocol of {label} is not visible"))
        elif protocol != expect.rebalance_protocol:
            detail = f"{label} runs {protocol}, expected {expect.rebalance_protocol}"
            out.append(Finding("member-protocol", "fail", label, detail, got=protocol))
    return out


def _config_findings(member: MemberSnapshot, config: MemberConfig, selected: str | None) -> list[Finding]:
    label, member_type = member.name, member.member_type.value
    if member_type == "unknown":
        detail = f"{label} does not show whether it runs group.protocol={config.group_protocol}"
        return [Finding("member-config", "warn", label, detail)]
    if member_type != config.group_protocol:
        detail = f"{label}: group.protocol {member_type}, expected {config.group_protocol}"
        return [Finding("member-config", "fail", label, detail)]
    out: list[Finding] = []
    if config.group_protocol == "classic" and config.assignors:
        assignors = declared_assignors(member)
        if assignors is None and wire_assignors(member, selected) == config.assignors:
            pass  # the broker's view settles it (wire_assignors): no manifest needed
        elif assignors is None:
            detail = f"{label} does not declare its assignor list"
            out.append(Finding("member-config", "warn", label, detail))
        elif assignors != config.assignors:
            detail = f"{label}: assignors {list(assignors)}, expected {list(config.assignors)}"
            return [Finding("member-config", "fail", label, detail)]
    if config.static_membership and member.instance_id is None:
        detail = f"{label}: no group.instance.id, the phase runs static members"
        return [Finding("member-config", "fail", label, detail)]
    return out


def why_not(family: Family, config: MemberConfig, *, version: str | None = None) -> str:
    """'' if the family (at `version`, when known) can run a phase's config, else why not (families.yaml)."""
    return family.why_not(
        config.assignors,
        consumer=config.group_protocol == "consumer",
        static=config.static_membership,
        version=version,
    )


def member_findings(
    member: MemberSnapshot,
    configs: Mapping[ConfiguredFamily, MemberConfig] | None,
    expect: Expect,
    *,
    selected: str | None = None,
) -> list[Finding]:
    """Does one member look as `expect` says and run its family's config in `configs`?

    A member of an unknown family is held to every family's config (they agree on what is visible:
    group protocol, assignors, static membership). A family the migration has no config of its own for
    (kafka-python, franz-go...) is held to the same, if it can run it at all (families.yaml); if it
    cannot, it fails with the reason. `configs=None` checks `expect` only. `selected`: the group's
    selected assignor, which settles some lists the member does not declare (`wire_assignors`).
    """
    out = _expect_findings(member, expect)
    if configs is None:
        return out
    family = member.client_family.value
    own = [config for name, config in configs.items() if name == family]
    if own:
        candidates = own
    elif family == "unknown":
        candidates = list(configs.values())
    else:
        known = catalog().get(family)
        version = member.client_version.value
        candidates = [
            c for c in configs.values() if known is not None and not why_not(known, c, version=version)
        ]
        if not candidates:
            first = next(iter(configs.values()), None)
            why = why_not(known, first, version=version) if known and first else "no config"
            detail = f"{member.name}: {why}"
            return [*out, Finding("member-config", "fail", member.name, detail)]
    per_config = [_config_findings(member, config, selected) for config in candidates]
    return out + max(per_config, key=lambda fs: worst(f.status for f in fs), default=[])


def member_match(
    member: MemberSnapshot,
    configs: Mapping[ConfiguredFamily, MemberConfig] | None,
    expect: Expect,
    *,
    selected: str | None = None,
) -> tuple[Match, str]:
    """The planner's view of one member: yes / maybe / no and the first reason for the worst."""
    findings = member_findings(member, configs, expect, selected=selected)
    status = worst(f.status for f in findings)
    why = next((f.detail for f in findings if f.status == status), "")
    return MATCH_OF[status], why


# --- the group -----------------------------------------------------------------------------------------
def _every_member(
    name: str, wanted: str, findings: Sequence[Finding], how_to_prove: str, hint: str, size: int = 0
) -> Check:
    wrong = [f for f in findings if f.check == name and f.status == "fail"]
    unseen = [f for f in findings if f.check == name and f.status == "warn"]
    if wrong:
        # member types between the phases of classic -> consumer: how far the rolling bounce got
        count = (
            f"{size - len(wrong)} of {plural(size, 'member')} "
            f"{verb(size - len(wrong), 'is', 'are')} {wanted}; "
            if name == "member-type" and size
            else ""
        )
        return Check(
            name=name,
            status="fail",
            reason=f"{count}expected {wanted}; found {', '.join(f'{f.member}={f.got}' for f in wrong)}",
            members=tuple(f.member for f in wrong),
            hint=f"Bounce these members onto the phase's config ({wanted}).",
        )
    if unseen:
        return Check(
            name=name,
            status="warn",
            reason=f"{wanted} not proven for {plural(len(unseen), 'member')}: {how_to_prove}",
            members=tuple(f.member for f in unseen),
            hint=hint,
        )
    return Check(name=name, status="pass", reason=f"every member is {wanted}")


def _member_config(findings: Sequence[Finding]) -> Check:
    wrong = [f for f in findings if f.check == "member-config" and f.status == "fail"]
    unseen = [f for f in findings if f.check == "member-config" and f.status == "warn"]
    if wrong:
        return Check(
            name="member-config",
            status="fail",
            reason="; ".join(f.detail for f in wrong),
            members=tuple(dict.fromkeys(f.member for f in wrong)),
            hint="Bounce these members onto the phase's config (upgrade-plan prints it).",
        )
    if unseen:
        return Check(
            name="member-config",
            status="warn",
            reason=f"{plural(len(unseen), 'member')} "
            f"{verb(len(unseen), 'does', 'do')} not show this phase's config (only the selected protocol "
            "is on the wire): " + "; ".join(f.detail for f in unseen),
            members=tuple(dict.fromkeys(f.member for f in unseen)),
            hint=MANIFEST_HINT,
        )
    return Check(name="member-config", status="pass", reason="every member runs this phase's config")


def _group_checks(fleet: FleetDescription, expect: Expect) -> list[Check]:
    checks: list[Check] = []
    if expect.group_type is not None:
        reason = f"group type {fleet.group_type}, expected {expect.group_type}"
        if fleet.group_type == "unknown":
            checks.append(Check(name="group-type", status="warn", reason=reason + " (not visible)"))
        else:
            ok = fleet.group_type == expect.group_type
            checks.append(Check(name="group-type", status="pass" if ok else "fail", reason=reason))
    if expect.selected_assignor is not None and fleet.group_type == "classic":
        selected = fleet.selected_assignor
        reason = f"group selected {selected or 'nothing'}, expected {' or '.join(expect.selected_assignor)}"
        if selected is None:
            checks.append(Check(name="selected-assignor", status="warn", reason=reason + " (not visible)"))
        else:
            ok = selected in expect.selected_assignor
            checks.append(Check(name="selected-assignor", status="pass" if ok else "fail", reason=reason))
    return checks


class PhaseMatch(BaseModel):
    """The verdict on one phase: the gate's checks and the planner's yes / maybe / no with reasons."""

    model_config = ConfigDict(frozen=True)

    checks: tuple[Check, ...]
    match: Match
    reasons: tuple[str, ...]  # the no's first reason, or every maybe's


def match_phase(fleet: FleetDescription, spec: MigrationSpec, k: int) -> PhaseMatch:
    """Is the fleet in the state phase k leaves it in (0 = the start)? Checks in a stable order."""
    expect = spec.expect_at(k)
    if expect.empty:
        names = tuple(m.name for m in fleet.members)
        empty = Check(
            name="group-empty",
            status="pass" if not fleet.members else "fail",
            reason="no members: safe to start the new config"
            if not fleet.members
            else f"{plural(fleet.size, 'member')} still in the group",
            members=names,
            hint="" if not fleet.members else "Wait for every member to stop (static ones: their session).",
        )
        running = (
            ()
            if not fleet.members
            else (f"{plural(fleet.size, 'member')} {verb(fleet.size, 'is', 'are')} running",)
        )
        return PhaseMatch(checks=(empty,), match=MATCH_OF[empty.status], reasons=running)
    if not fleet.members:
        none = Check(name="group-has-members", status="fail", reason="the group has no members")
        return PhaseMatch(checks=(none,), match="no", reasons=(none.reason,))
    checks = _group_checks(fleet, expect)
    configs = spec.config_at(k)
    findings = [
        f
        for m in fleet.members
        for f in member_findings(m, configs, expect, selected=fleet.selected_assignor)
    ]
    if expect.member_type is not None:
        checks.append(
            _every_member(
                "member-type",
                expect.member_type,
                findings,
                "the member type is not visible; run them with kafka-coop manifests",
                MANIFEST_HINT,
                fleet.size,
            )
        )
    if expect.rebalance_protocol is not None:
        checks.append(
            _every_member(
                "member-protocol",
                expect.rebalance_protocol,
                findings,
                "no wire signal decides it; kafka-coop manifests declare it",
                MANIFEST_HINT,
            )
        )
    checks.append(_member_config(findings))
    status = worst(c.status for c in checks)
    if status == "fail":
        group_fail = next((c.reason for c in checks if c.status == "fail" and not c.members), None)
        member_fail = next((f.detail for f in findings if f.status == "fail"), None)
        reasons: tuple[str, ...] = (group_fail or member_fail or "",)
    else:
        reasons = tuple(dict.fromkeys(f.detail for f in findings if f.status == "warn"))
        reasons += tuple(c.reason for c in checks if c.status == "warn" and not c.members)
    return PhaseMatch(checks=tuple(checks), match=MATCH_OF[status], reasons=reasons)


def phase_match(fleet: FleetDescription, spec: MigrationSpec, k: int) -> tuple[Match, list[str]]:
    """The planner's view of `match_phase`: yes / maybe / no and the reasons."""
    result = match_phase(fleet, spec, k)
    return result.match, list(result.reasons)


# --- where is the fleet --------------------------------------------------------------------------------
def detect_state(fleet: FleetDescription) -> FleetState:
    if fleet.size == 0:
        return "empty"
    types = {m.member_type.value for m in fleet.members}
    protocols = {m.rebalance_protocol.value for m in fleet.members}
    if types == {"consumer"}:
        return "consumer"
    if "consumer" in types:
        return "mixed"
    if protocols == {"eager"}:
        return "eager"
    if protocols == {"cooperative"}:
        return "cooperative"
    return "unknown" if "unknown" in protocols else "mixed"


class Position(BaseModel):
    model_config = ConfigDict(frozen=True)

    done: int  # phases done
    in_progress: int | None = None  # a rolling bounce underway: its number
    moved: int = 0  # members already on the in-progress phase's config
    assumed: bool = False  # `done` rests on facts that are not visible (maybe)
    reasons: tuple[str, ...] = ()


def locate(fleet: FleetDescription, spec: MigrationSpec) -> Position | None:
    """Where the fleet is on `spec`, or None if it is on no phase of it (with nothing underway).

    The highest phase it provably meets; else the lowest it may meet (assumed); else a rolling bounce
    caught halfway: every member on the config before it or after it, some of each.
    """
    matches = [match_phase(fleet, spec, k) for k in range(len(spec.phases) + 1)]
    proven = [k for k, m in enumerate(matches) if m.match == "yes"]
    if proven:
        return Position(done=max(proven))
    possible = [k for k, m in enumerate(matches) if m.match == "maybe"]
    if possible:
        k = min(possible)
        return Position(done=k, assumed=True, reasons=tuple(dict.fromkeys(matches[k].reasons)))
    for k, phase in enumerate(spec.phases):
        if phase.action != "rolling-bounce":
            continue
        before, after = spec.config_at(k), spec.config_at(k + 1)
        moved = 0
        for member in fleet.members:
            selected = fleet.selected_assignor
            on_before = member_match(member, before, spec.expect_at(k), selected=selected)[0]
            on_after = member_match(member, after, _loose(phase), selected=selected)[0]
            if on_after == "yes" and on_before == "no":
                moved += member.count
            elif on_before == "no" and on_after == "no":
                break
        else:
            if 0 < moved < fleet.size:
                return Position(done=k, in_progress=k + 1, moved=moved)
    return None


def _loose(phase: MigrationPhase) -> Expect:
    """A member's own view of a phase: the group-level parts of `expect` only hold once all moved."""
    return Expect(member_type=phase.expect.member_type)

"""The planner (pure): a fleet description and a target -> a phased `Plan`, or blockers with reasons.

Paths are data (migrations/*.yaml); the planner only chooses among them. For each candidate it asks
three questions, in this order, and keeps the reason of every "no" for the plan's warnings:
1. Can every client family in the fleet take it? (`families`, `excludes`: librdkafka cannot take the
   two-bounce path because it refuses mixed assignor lists.)
2. Where is the fleet on it? The highest phase whose expectations the fleet *provably* meets; a phase
   that only may be met (member lists not visible without manifests) counts as not yet done, so a plan
   never skips a step it cannot prove. A fleet split between phase k and k+1 is mid-bounce (k+1 in
   progress).
3. Do the broker and the group meet its prerequisites (version, policy, userData, size)?
Live paths (a pause per member) are preferred to cutovers (a full stop); the pause is stated up front.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kafka_coop._vocab import ASSIGNOR_REBALANCE_MODE
from kafka_coop.inspect import version_at_least
from kafka_coop.rollout._fleet import FleetDescription, FleetMember
from kafka_coop.rollout._gate import Check, RequirementFacts, requirement_checks
from kafka_coop.rollout._spec import (
    Action,
    Expect,
    Family,
    MemberConfig,
    MigrationSpec,
    PauseClass,
    Phase,
)

Direction = Literal["upgrade", "downgrade"]
Target = Literal["cooperative", "consumer", "eager", "classic"]
FleetState = Literal["eager", "cooperative", "consumer", "mixed", "unknown", "empty"]
PlanStatus = Literal["ready", "in-progress", "done", "blocked"]
Match = Literal["yes", "maybe", "no"]

TARGETS: dict[Direction, tuple[Target, ...]] = {
    "upgrade": ("cooperative", "consumer"),
    "downgrade": ("eager", "classic"),
}
GATE_TIMEOUT_S = 300
STATIC_ID_HINT = "<unique per member, stable across restarts>"


class FamilyConfig(BaseModel):
    """One client family's config in a phase: the typed form, and what to set and remove."""

    model_config = ConfigDict(frozen=True)

    member: MemberConfig
    set: dict[str, str]
    remove: tuple[str, ...] = ()
    kafka_coop: dict[str, str] | None = None  # CoopConsumer settings (librdkafka family)


class PlanPhase(BaseModel):
    model_config = ConfigDict(frozen=True)

    n: int
    title: str
    action: Action
    status: Literal["done", "in-progress", "todo"]
    progress: str | None = None
    gate: str  # the verify-group command that must pass before this phase starts
    config: dict[Family, FamilyConfig]
    expect: Expect
    pause: PauseClass
    pause_note: str
    rollback: str
    notes: tuple[str, ...] = ()


class Blocker(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    reason: str
    hint: str = ""


class Alternative(BaseModel):
    model_config = ConfigDict(frozen=True)

    migration: str
    command: str
    why: str


class FleetSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: Literal["live", "file"]
    group_type: str
    state: str | None
    selected_assignor: str | None
    members: int
    families: dict[str, int]
    protocols: dict[str, int]
    member_types: dict[str, int]
    static: int
    lists_declared: int  # members whose assignor list is known (manifest or fleet file)


class Plan(BaseModel):
    """The contract `upgrade-plan --output json` writes and `verify-group --plan` and runners read."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    v: Literal[1] = 1
    group: str
    direction: Direction
    to: Target
    from_: FleetState = Field(alias="from")
    status: PlanStatus
    migration: str | None = None
    title: str | None = None
    summary: str | None = None
    fleet: FleetSummary
    position: int = 0  # phases already done
    preconditions: tuple[Check, ...] = ()
    phases: tuple[PlanPhase, ...] = ()
    final_gate: str | None = None
    warnings: tuple[str, ...] = ()
    blockers: tuple[Blocker, ...] = ()
    alternatives: tuple[Alternative, ...] = ()

    @property
    def blocked(self) -> bool:
        return bool(self.blockers)


class GateCommand(BaseModel):
    """How printed gate commands reach the cluster (never secrets: only the file that holds them)."""

    model_config = ConfigDict(frozen=True)

    bootstrap: str | None = None
    command_config: str | None = None
    timeout_s: int = GATE_TIMEOUT_S

    def render(self, group: str, migration: str | None, phase: int | None, members: int | None) -> str:
        """The gate command; without a migration it checks health only (mid-bounce, no phase holds)."""
        parts = ["kafka-coop", "verify-group", group]
        if self.bootstrap:
            parts += ["--bootstrap-server", self.bootstrap]
        if self.command_config:
            parts += ["--command-config", self.command_config]
        if migration is not None and phase is not None:
            parts += ["--migration", migration, "--phase", str(phase)]
        if members is not None:
            parts += ["--expect-members", str(members)]
        parts += ["--wait", "--timeout", str(self.timeout_s)]
        return shlex.join(parts)


# --- where is the fleet -------------------------------------------------------------------------------
def detect_state(fleet: FleetDescription) -> FleetState:
    if fleet.size == 0:
        return "empty"
    types = {m.member_type for m in fleet.members}
    protocols = {m.protocol for m in fleet.members}
    if types == {"consumer"}:
        return "consumer"
    if "consumer" in types:
        return "mixed"
    if protocols == {"eager"}:
        return "eager"
    if protocols == {"cooperative"}:
        return "cooperative"
    return "unknown" if "unknown" in protocols else "mixed"


def _worst(a: Match, b: Match) -> Match:
    order = {"yes": 0, "maybe": 1, "no": 2}
    return a if order[a] >= order[b] else b


def member_match(member: FleetMember, config: MemberConfig | None, expect: Expect) -> tuple[Match, str]:
    """Does one member run `config` and look as `expect` says? `maybe` when that is not visible."""
    result: Match = "yes"
    why = ""
    if expect.member_type is not None:
        if member.member_type == "unknown":
            result = "maybe"
        elif member.member_type != expect.member_type:
            return "no", f"{member.label} is a {member.member_type} member, expected {expect.member_type}"
    if expect.rebalance_protocol is not None:
        if member.protocol == "unknown":
            result = "maybe"
        elif member.protocol != expect.rebalance_protocol:
            return "no", f"{member.label} runs {member.protocol}, expected {expect.rebalance_protocol}"
    if config is not None:
        if member.member_type not in ("unknown", config.group_protocol):
            return (
                "no",
                f"{member.label} is on group.protocol={member.member_type}, not {config.group_protocol}",
            )
        if config.group_protocol == "classic" and config.assignors:
            if member.assignors is None:
                result, why = _worst(result, "maybe"), f"{member.label} does not declare its assignor list"
            elif member.assignors != config.assignors:
                return (
                    "no",
                    f"{member.label} runs {list(member.assignors)}, expected {list(config.assignors)}",
                )
        if config.static_membership and not member.static:
            return "no", f"{member.label} has no group.instance.id"
    return result, why


def phase_match(fleet: FleetDescription, spec: MigrationSpec, k: int) -> tuple[Match, list[str]]:
    """Is the fleet in the state phase k leaves it in (0 = the start)?"""
    expect = spec.expect_at(k)
    if expect.empty:
        return ("yes", []) if fleet.size == 0 else ("no", [f"{fleet.size} members are running"])
    if fleet.size == 0:
        return "no", ["the group has no members"]
    if expect.group_type is not None and fleet.group_type not in ("unknown", expect.group_type):
        return "no", [f"the group is {fleet.group_type}, expected {expect.group_type}"]
    result: Match = "yes" if fleet.group_type != "unknown" or expect.group_type is None else "maybe"
    reasons: list[str] = []
    if expect.selected_assignor is not None and fleet.group_type == "classic":
        if fleet.selected_assignor is None:
            result = _worst(result, "maybe")
        elif fleet.selected_assignor not in expect.selected_assignor:
            return "no", [
                f"the group selected {fleet.selected_assignor}, "
                f"expected {' or '.join(expect.selected_assignor)}"
            ]
    configs = spec.config_at(k)
    for member in fleet.members:
        config = configs.get(member.family) if member.family != "unknown" else None
        got, why = member_match(member, config, expect)
        if got == "no":
            return "no", [why]
        if got == "maybe" and why:
            reasons.append(why)
        result = _worst(result, got)
    return result, reasons


class Position(BaseModel):
    model_config = ConfigDict(frozen=True)

    done: int  # phases done
    in_progress: int | None = None  # a rolling bounce underway: its number
    moved: int = 0  # members already on the in-progress phase's config
    assumed: bool = False  # `done` rests on facts that are not visible (maybe)
    reasons: tuple[str, ...] = ()


def locate(fleet: FleetDescription, spec: MigrationSpec) -> Position | None:
    """Where the fleet is on `spec`, or None if it is on no phase of it (with nothing underway)."""
    matches = [phase_match(fleet, spec, k) for k in range(len(spec.phases) + 1)]
    proven = [k for k, (m, _) in enumerate(matches) if m == "yes"]
    if proven:
        return Position(done=max(proven))
    possible = [k for k, (m, _) in enumerate(matches) if m == "maybe"]
    if possible:
        k = min(possible)
        return Position(done=k, assumed=True, reasons=tuple(dict.fromkeys(matches[k][1])))
    for k, phase in enumerate(spec.phases):
        if phase.action != "rolling-bounce":
            continue
        before, after = spec.config_at(k), spec.config_at(k + 1)
        moved = 0
        for member in fleet.members:
            family = member.family if member.family != "unknown" else None
            on_before = member_match(member, before.get(family) if family else None, spec.expect_at(k))[0]
            on_after = member_match(member, after.get(family) if family else None, _loose(phase))[0]
            if on_after == "yes" and on_before == "no":
                moved += member.count
            elif on_before == "no" and on_after == "no":
                break
        else:
            if 0 < moved < fleet.size:
                return Position(done=k, in_progress=k + 1, moved=moved)
    return None


def _loose(phase: Phase) -> Expect:
    """A member's own view of a phase: the group-level parts of `expect` only hold once all moved."""
    return Expect(member_type=phase.expect.member_type)


# --- config and pause wording -------------------------------------------------------------------------
def _kafka_coop_settings(config: MemberConfig) -> dict[str, str]:
    settings: dict[str, str] = {}
    if config.group_protocol == "consumer":
        settings["rebalance"] = "consumer"
        if config.remote_assignor:
            settings["remote_assignor"] = config.remote_assignor
    elif len(config.assignors) == 1:
        settings["rebalance"] = ASSIGNOR_REBALANCE_MODE[config.assignors[0]]
    elif config.assignors:
        settings["assignors"] = ",".join(config.assignors)
    if config.static_membership:
        settings["instance_id"] = STATIC_ID_HINT
    return settings


def family_config(family: Family, config: MemberConfig) -> FamilyConfig:
    values = config.librdkafka_conf() if family == "librdkafka" else config.java_properties()
    if config.static_membership:
        values["group.instance.id"] = STATIC_ID_HINT
    return FamilyConfig(
        member=config,
        set=values,
        remove=config.remove,
        kafka_coop=_kafka_coop_settings(config) if family == "librdkafka" else None,
    )


def pause_note(phase: Phase, protocol_before: str | None, size: int, static: bool) -> str:
    if phase.pause == "full-stop":
        note = (
            f"Full stop: all {size} members are down from the first stop until the group is Stable on the "
            "new config; every partition is unowned for that whole time (kafka-coop report measures it)."
        )
        if static and phase.action in ("stop-all", "stop-all-start-all"):
            note += (
                " Static members do not leave the group when they stop: it empties only when their "
                "session.timeout.ms runs out (45 s by default), and the next gate waits for that."
            )
        return note
    if phase.pause == "none":
        return "No pause."
    if protocol_before == "eager":
        return (
            f"Each of the {size} restarts rebalances the group and, under EAGER, every member revokes "
            "everything: expect one group-wide pause per restart until the phase completes."
        )
    if static:
        return (
            "Only the restarting member's partitions pause: with static membership a member back within "
            "its session timeout causes no rebalance."
        )
    return (
        "Incremental: each restart moves only the restarting member's partitions (out when it leaves, "
        "back when it joins); the other members keep consuming."
    )


# --- the planner --------------------------------------------------------------------------------------
class _Fit(BaseModel):
    model_config = ConfigDict(frozen=True)

    spec: MigrationSpec
    source: str  # the name or file the gate commands pass to --migration
    position: Position | None
    rejected: str | None


def _fit(fleet: FleetDescription, spec: MigrationSpec, source: str) -> _Fit:
    families = fleet.families()
    for family, why in spec.excludes.items():
        if families.get(family):
            return _Fit(
                spec=spec,
                source=source,
                position=None,
                rejected=f"{families[family]} {family} member(s): {why}",
            )
    unknown = families.get("unknown", 0)
    if unknown and set(spec.families) != {"librdkafka", "java"}:
        return _Fit(
            spec=spec,
            source=source,
            position=None,
            rejected=f"the client family of {unknown} member(s) is unknown and this path is only for "
            f"{', '.join(spec.families)} members",
        )
    missing = [f for f in families if f != "unknown" and f not in spec.families]
    if missing:
        return _Fit(
            spec=spec, source=source, position=None, rejected=f"it has no config for {missing} members"
        )
    position = locate(fleet, spec)
    if position is None:
        _, start_why = phase_match(fleet, spec, 0)
        return _Fit(
            spec=spec,
            source=source,
            position=None,
            rejected="the group is on none of its phases" + (f": {start_why[0]}" if start_why else ""),
        )
    return _Fit(spec=spec, source=source, position=position, rejected=None)


def _facts(fleet: FleetDescription) -> RequirementFacts:
    broker = fleet.broker
    live = fleet.source == "live"
    return RequirementFacts(
        kafka_version=broker.version or "unknown",
        version_signal=broker.version_source,
        rebalance_protocols=broker.rebalance_protocols,
        migration_policy=broker.migration_policy,
        group_max_size=broker.group_max_size,
        group_consumer_max_size=broker.group_consumer_max_size,
        member_count=fleet.size,
        assignor=fleet.selected_assignor or "",
        carrying_user_data=tuple(m.label for m in fleet.members if m.assignment_user_data),
        user_data_unseen=tuple(
            m.label
            for m in fleet.members
            if m.assignment_user_data is None
            and m.member_type == "classic"
            and (live or m.protocol != "eager")
        ),
    )


def _summary(fleet: FleetDescription) -> FleetSummary:
    return FleetSummary(
        source=fleet.source,
        group_type=fleet.group_type,
        state=fleet.state,
        selected_assignor=fleet.selected_assignor,
        members=fleet.size,
        families=dict(fleet.count_by("family")),
        protocols=dict(fleet.count_by("protocol")),
        member_types=dict(fleet.count_by("member_type")),
        static=sum(m.count for m in fleet.members if m.static),
        lists_declared=sum(m.count for m in fleet.members if m.assignors is not None),
    )


def _already_there(state: FleetState, direction: Direction, to: Target) -> bool:
    return (
        (to == "cooperative" and state == "cooperative")
        or (to == "consumer" and state == "consumer")
        or (to == "eager" and state == "eager")
        or (to == "classic" and state in ("eager", "cooperative"))
    )


def _wrong_way(state: FleetState, to: Target, group: str) -> Blocker | None:
    if to == "cooperative" and state == "consumer":
        return Blocker(
            name="beyond-target",
            reason="the group already runs the consumer protocol (KIP-848), which is incremental like "
            "cooperative",
            hint=f"To go back to classic cooperative: kafka-coop downgrade-plan {group} --to classic.",
        )
    if to == "eager" and state == "consumer":
        return Blocker(
            name="two-steps",
            reason="the group runs the consumer protocol; eager is two migrations away",
            hint=f"First kafka-coop downgrade-plan {group} --to classic, then --to eager.",
        )
    return None


def _alternatives(
    fleet: FleetDescription, chosen: MigrationSpec | None, fits: Sequence[_Fit], to: Target, gate: GateCommand
) -> list[Alternative]:
    out: list[Alternative] = []
    for fit in fits:
        if fit.rejected is None and chosen is not None and fit.spec.name != chosen.name:
            out.append(
                Alternative(
                    migration=fit.spec.name,
                    command=_plan_command(fleet.group, fit.spec, gate, migration=fit.source),
                    why=fit.spec.title,
                )
            )
    librdkafka = fleet.families().get("librdkafka", 0)
    version_ok = fleet.broker.version is None or version_at_least(fleet.broker.version, (4, 0)) is not False
    if to == "cooperative" and librdkafka and version_ok:
        parts = ["kafka-coop", "upgrade-plan", fleet.group, "--to", "consumer"]
        if gate.bootstrap:
            parts += ["--bootstrap-server", gate.bootstrap]
        out.append(
            Alternative(
                migration="classic-to-consumer",
                command=shlex.join(parts),
                why="the only LIVE path off eager for librdkafka members: KIP-848 (group.protocol=consumer, "
                "broker >= 4.0); rebalances become incremental without a full stop",
            )
        )
    return out


def _plan_command(group: str, spec: MigrationSpec, gate: GateCommand, migration: str) -> str:
    verb = "upgrade-plan" if spec.direction == "upgrade" else "downgrade-plan"
    parts = ["kafka-coop", verb, group, "--to", spec.to, "--migration", migration]
    if gate.bootstrap:
        parts += ["--bootstrap-server", gate.bootstrap]
    return shlex.join(parts)


def _phases(fleet: FleetDescription, fit: _Fit, gate: GateCommand) -> list[PlanPhase]:
    spec, position = fit.spec, fit.position
    assert position is not None
    families = {f for f in fleet.families() if f != "unknown"} or set(spec.families)
    out: list[PlanPhase] = []
    for phase in spec.phases:
        before = spec.expect_at(phase.n - 1)
        members_before = None if before.empty else fleet.size
        if phase.n <= position.done:
            status: Literal["done", "in-progress", "todo"] = "done"
        elif phase.n == position.in_progress:
            status = "in-progress"
        else:
            status = "todo"
        protocol_before = before.rebalance_protocol or _single(fleet.protocols())
        static = phase.config.get(
            "librdkafka", phase.config.get("java", MemberConfig())
        ).static_membership or (fleet.size > 0 and all(m.static for m in fleet.members))
        if phase.action in ("stop-all", "stop-all-start-all"):
            static = any(m.static for m in fleet.members)  # what delays the empty group is who stops
        out.append(
            PlanPhase(
                n=phase.n,
                title=phase.title,
                action=phase.action,
                status=status,
                progress=f"{position.moved} of {fleet.size} members already on this phase's config"
                if status == "in-progress"
                else None,
                gate=gate.render(fleet.group, None, None, fleet.size)
                if status == "in-progress"
                else gate.render(fleet.group, fit.source, phase.n - 1, members_before),
                config={f: family_config(f, c) for f, c in phase.config.items() if f in families},
                expect=phase.expect,
                pause=phase.pause,
                pause_note=pause_note(phase, protocol_before, fleet.size, static),
                rollback=phase.rollback,
                notes=phase.notes,
            )
        )
    return out


def _single(counts: object) -> str | None:
    keys = list(counts) if isinstance(counts, dict) else []
    return keys[0] if len(keys) == 1 else None


def make_plan(
    fleet: FleetDescription,
    direction: Direction,
    to: Target,
    migrations: Sequence[tuple[str, MigrationSpec]],
    *,
    gate: GateCommand | None = None,
    forced: bool = False,
) -> Plan:
    """Choose a path among `migrations` (name or file, spec) for `fleet` and lay out its phases.

    `forced`: the caller named one migration; every reason it does not fit becomes a blocker.
    """
    gate = gate or GateCommand()
    state = detect_state(fleet)
    summary = _summary(fleet)
    base = {"group": fleet.group, "direction": direction, "to": to, "from": state, "fleet": summary}
    if to not in TARGETS[direction]:
        other = "upgrade-plan" if direction == "downgrade" else "downgrade-plan"
        return Plan(
            **base,
            status="blocked",
            blockers=(
                Blocker(
                    name="target",
                    reason=f"{direction} goes to {' or '.join(TARGETS[direction])}, not {to}",
                    hint=f"Use kafka-coop {other} for --to {to}.",
                ),
            ),
        )
    if state == "empty":
        return Plan(
            **base,
            status="blocked",
            blockers=(
                Blocker(
                    name="no-members",
                    reason=f"group {fleet.group} has no running members, so there is no fleet to migrate",
                    hint="Start the members on the target config, or plan from a fleet file (--fleet).",
                ),
            ),
        )
    if not forced and _already_there(state, direction, to):
        return Plan(
            **base,
            status="done",
            warnings=(f"every member already runs {state}: nothing to do",),
        )
    wrong = None if forced else _wrong_way(state, to, fleet.group)
    if wrong is not None:
        return Plan(**base, status="blocked", blockers=(wrong,))

    candidates = [(src, s) for src, s in migrations if s.direction == direction and s.to == to]
    fits = [_fit(fleet, spec, src) for src, spec in candidates]
    usable = sorted(
        (f for f in fits if f.rejected is None),
        key=lambda f: (
            any(p.pause == "full-stop" for p in f.spec.phases),
            candidates.index((f.source, f.spec)),
        ),
    )
    warnings = [f"{f.spec.name} does not fit: {f.rejected}" for f in fits if f.rejected is not None]
    if not usable:
        blockers = [
            Blocker(name=f"path:{f.spec.name}", reason=f.rejected or "", hint="") for f in fits if f.rejected
        ] or [Blocker(name="no-path", reason=f"no migration goes from {state} to {to}")]
        return Plan(
            **base,
            status="blocked",
            blockers=tuple(blockers),
            alternatives=tuple(_alternatives(fleet, None, fits, to, gate)),
        )
    fit = usable[0]
    spec, position = fit.spec, fit.position
    assert position is not None
    if position.assumed:
        warnings.append(
            f"assumed the group is at phase {position.done} of {spec.name}: "
            + "; ".join(position.reasons[:3])
            + " (kafka-coop members publish manifests; the gates re-check every phase)"
        )
    started = position.done > 0 or position.in_progress is not None
    preconditions = () if started else tuple(requirement_checks(spec.requires, _facts(fleet)))
    blockers = [
        Blocker(name=c.name, reason=c.reason, hint=_precondition_hint(c.name, fleet.group))
        for c in preconditions
        if c.status == "fail"
    ]
    warnings += [f"{c.name}: {c.reason}" for c in preconditions if c.status == "warn"]
    warnings += _family_warnings(fleet, spec)
    phases = _phases(fleet, fit, gate)
    if position.done == len(spec.phases):
        status: PlanStatus = "done"
    elif blockers:
        status = "blocked"
    else:
        status = "in-progress" if started else "ready"
    return Plan(
        **base,
        status=status,
        migration=fit.source,
        title=spec.title,
        summary=spec.summary,
        position=position.done,
        preconditions=preconditions,
        phases=tuple(phases),
        final_gate=gate.render(fleet.group, fit.source, len(spec.phases), fleet.size),
        warnings=tuple(warnings),
        blockers=tuple(blockers),
        alternatives=tuple(_alternatives(fleet, spec, fits, to, gate)),
    )


def _precondition_hint(name: str, group: str) -> str:
    return {
        "no-custom-user-data": (
            "Route around it: cut over to range first (kafka-coop downgrade-plan "
            f"{group} --to eager), whose assignments carry no userData, then upgrade --to consumer."
        ),
        "migration-policy": "Set group.consumer.migration.policy on the brokers and re-plan.",
        "broker-version": "Upgrade the brokers to Apache Kafka 4.0 or later first.",
        "consumer-protocol-enabled": "Add consumer to group.coordinator.rebalance.protocols on the brokers.",
        "group-size": "Scale the group below the limit or raise the broker setting, then re-plan.",
    }.get(name, "")


def _family_warnings(fleet: FleetDescription, spec: MigrationSpec) -> list[str]:
    out: list[str] = []
    families = fleet.families()
    if spec.requires.no_assignment_user_data:
        coop = [
            m
            for m in fleet.members
            if m.family == "librdkafka" and m.protocol == "cooperative" and m.assignment_user_data is not True
        ]
        if coop:
            out.append(
                "librdkafka's cooperative-sticky group leader has been seen writing userData into "
                "assignments (not on every rebalance); the broker then refuses the conversion and the first "
                "consumer-protocol member fails. The phase-0 gate re-reads the bytes: run it right before "
                "the first bounce."
            )
    if families.get("unknown"):
        out.append(
            f"the client family of {families['unknown']} member(s) is unknown; the plan gives both families' "
            "config: use the one each member runs"
        )
    dynamic = sum(m.count for m in fleet.members if not m.static)
    if dynamic and spec.to in ("cooperative", "consumer"):
        out.append(
            f"{dynamic} of {fleet.size} members have no group.instance.id: static membership makes a quick "
            "restart cost no rebalance at all"
        )
    return out

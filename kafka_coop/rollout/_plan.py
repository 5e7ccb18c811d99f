"""The planner (pure): a fleet description and a target -> a phased `Plan`, or blockers with reasons.

Paths are data (migrations/*.yaml); the planner only chooses among them. For each candidate it asks
three questions, in this order, and keeps the reason of every "no" for the plan's warnings:
1. Can every client family in the fleet take it? (`families`, `excludes`: librdkafka cannot take the
   two-bounce path because it refuses mixed assignor lists.)
2. Where is the fleet on it? `_match.locate`, the engine the gates use too: the highest phase whose
   expectations the fleet *provably* meets; a phase that only may be met counts as not yet done, so a
   plan never skips a step it cannot prove. A fleet split between phase k and k+1 is mid-bounce.
3. Do the broker and the group meet its prerequisites (version, policy, userData, size)?
Live paths (a pause per member) are preferred to cutovers (a full stop); the pause is stated up front.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kafka_coop._vocab import ConfiguredFamily, Direction, KnownFamily, plural, verb
from kafka_coop.families import broker_defects, catalog, cite, older_than
from kafka_coop.inspection import version_at_least
from kafka_coop.rollout._commands import render
from kafka_coop.rollout._fleet import (
    FleetDescription,
    declared_assignors,
    fatal_defect_sentences,
    known_defect_notes,
    origin,
)
from kafka_coop.rollout._kip848 import static_id_advice
from kafka_coop.rollout._match import FleetState, Position, detect_state, locate, phase_match, why_not
from kafka_coop.rollout._plan_model import (
    TARGETS,
    Alternative,
    Blocker,
    FamilyConfig,
    FleetSummary,
    GateCommand,
    Plan,
    PlanPhase,
    PlanStatus,
    Target,
)
from kafka_coop.rollout._requirements import RequirementFacts, requirement_checks, requirement_facts
from kafka_coop.rollout._spec import MemberConfig, MigrationSpec
from kafka_coop.rollout._wording import family_config, pause_note, progress_note


class _Candidate(BaseModel):
    model_config = ConfigDict(frozen=True)

    spec: MigrationSpec
    source: str  # the name or file the gate commands pass to --migration
    position: Position | None
    rejected: str | None


def _base_config(configs: Mapping[ConfiguredFamily, MemberConfig]) -> MemberConfig | None:
    """A phase's config, family-neutral: the migration's families agree on what a member runs."""
    return next(iter(configs.values()), None)


def _why_family_cannot(family: str, spec: MigrationSpec) -> str:
    """'' if a family the path has no config of its own for can run every phase (families.yaml)."""
    facts = catalog().get(family)
    if facts is None:
        return f"{family} members: not a family kafka-coop knows"
    for k in range(len(spec.phases) + 1):
        config = _base_config(spec.config_at(k) or {})
        if config is not None and config.group_protocol == "classic" and not config.assignors:
            continue  # a start state that does not care which list
        why = "" if config is None else why_not(facts, config)
        if why:
            return f"{family} members: {why}"
        expect = spec.expect_at(k)
        if config is not None and config.assignors and expect.rebalance_protocol in ("eager", "cooperative"):
            selected = (expect.selected_assignor or config.assignors)[0]
            runs = facts.list_protocol(config.assignors, selected)
            if runs != expect.rebalance_protocol:
                return (
                    f"{family} members: with {list(config.assignors)} and {selected} selected, "
                    f"{family} runs {runs} (mixed lists: {facts.mixed_list}){cite(facts.mixed_list_source)}; "
                    f"phase {k} needs {expect.rebalance_protocol}"
                )
    return ""


def _why_too_old(fleet: FleetDescription, spec: MigrationSpec) -> str:
    """'' unless a member whose library version is known (fleet file, manifest) is older than the first
    version that can run a config the path moves it to (families.yaml `since`)."""
    for member in fleet.members:
        family, version = member.client_family.value, member.client_version.value
        facts = catalog().get(family)
        if version is None or facts is None:
            continue
        for k in range(1, len(spec.phases) + 1):
            configs = {str(name): c for name, c in spec.config_at(k).items()}
            config = configs.get(family) or next(iter(configs.values()), None)
            if config is None or why_not(facts, config):
                continue  # no config, or one the family cannot run at any version (judged elsewhere)
            why = why_not(facts, config, version=version)
            if why:
                who = f"{plural(member.count, family + ' member')} at {version}"
                return f"{who} ({origin(member.client_version)}): {why}"
    return ""


def _started(candidate: _Candidate) -> bool:
    position = candidate.position
    return position is not None and (position.done > 0 or position.in_progress is not None)


def _first_unblocked(usable: Sequence[_Candidate], facts: RequirementFacts) -> _Candidate:
    """The first path that fits (live paths before full stops) whose prerequisites the group meets: a
    live path the broker would refuse (userData in a librdkafka cooperative group) gives way to a
    cutover that needs none of it. A path already begun is kept; with none met, the first, blocked."""
    for candidate in usable:
        if _started(candidate) or not any(
            c.status == "fail" for c in requirement_checks(candidate.spec.requires, facts)
        ):
            return candidate
    return usable[0]


def _judge(fleet: FleetDescription, spec: MigrationSpec, source: str) -> _Candidate:
    families = fleet.families()
    for family, why in spec.excludes.items():
        if families.get(family):
            return _Candidate(
                spec=spec,
                source=source,
                position=None,
                rejected=f"{plural(families[family], family + ' member')}: {why}",
            )
    too_old = _why_too_old(fleet, spec)
    if too_old:
        return _Candidate(spec=spec, source=source, position=None, rejected=too_old)
    unknown = families.get("unknown", 0)
    if unknown and set(spec.families) != {"librdkafka", "java"}:
        return _Candidate(
            spec=spec,
            source=source,
            position=None,
            rejected=f"the client family of {plural(unknown, 'member')} is unknown and this path is only for "
            f"{', '.join(spec.families)} members",
        )
    for name in families:
        if name == "unknown" or name in spec.families:
            continue
        why = _why_family_cannot(name, spec)
        if why:
            return _Candidate(spec=spec, source=source, position=None, rejected=f"{families[name]} {why}")
    position = locate(fleet, spec)
    if position is None:
        _, start_why = phase_match(fleet, spec, 0)
        return _Candidate(
            spec=spec,
            source=source,
            position=None,
            rejected="the group is on none of its phases" + (f": {start_why[0]}" if start_why else ""),
        )
    return _Candidate(spec=spec, source=source, position=position, rejected=None)


def _summary(fleet: FleetDescription) -> FleetSummary:
    return FleetSummary(
        source=fleet.source,
        group_type=fleet.group_type,
        state=fleet.state,
        selected_assignor=fleet.selected_assignor,
        members=fleet.size,
        families=dict(fleet.count_by("client_family")),
        protocols=dict(fleet.count_by("rebalance_protocol")),
        member_types=dict(fleet.count_by("member_type")),
        static=sum(m.count for m in fleet.members if m.instance_id is not None),
        lists_declared=sum(m.count for m in fleet.members if declared_assignors(m) is not None),
    )


def _already_there(state: FleetState, to: Target) -> bool:
    return (
        (to == "cooperative" and state == "cooperative")
        or (to == "consumer" and state == "consumer")
        or (to == "eager" and state == "eager")
        or (to == "classic" and state in ("eager", "cooperative"))
    )


def _already_there_note(state: FleetState, to: Target) -> str:
    """Said in the target's words: `--to classic` is reached by eager and cooperative members alike."""
    if to == "classic":
        return f"every member already runs the classic protocol ({state} rebalancing): nothing to do"
    return f"every member already runs {state}: nothing to do"


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
    fleet: FleetDescription,
    chosen: MigrationSpec | None,
    judged: Sequence[_Candidate],
    to: Target,
    gate: GateCommand,
) -> list[Alternative]:
    out: list[Alternative] = []
    for candidate in judged:
        if candidate.rejected is None and chosen is not None and candidate.spec.name != chosen.name:
            out.append(
                Alternative(
                    migration=candidate.spec.name,
                    command=render(
                        gate.plan(candidate.spec.direction, fleet.group, candidate.spec.to, candidate.source)
                    ),
                    why=candidate.spec.title,
                )
            )
    librdkafka = fleet.families().get("librdkafka", 0)
    version_ok = fleet.broker_version is None or version_at_least(fleet.broker_version, (4, 0)) is not False
    kip848_since = catalog()["librdkafka"].kip848.since
    clients_ok = not any(
        m.client_family.value == "librdkafka" and older_than(m.client_version.value, kip848_since)
        for m in fleet.members
    )
    if to == "cooperative" and librdkafka and version_ok and clients_ok:
        out.append(
            Alternative(
                migration="classic-to-consumer",
                command=render(gate.plan("upgrade", fleet.group, "consumer")),
                why="the only LIVE path off eager for librdkafka members: KIP-848 (group.protocol=consumer, "
                "broker >= 4.0); rebalances become incremental without a full stop",
            )
        )
    return out


def _phase_configs(
    family_configs: Mapping[ConfiguredFamily, MemberConfig], families: set[str]
) -> dict[KnownFamily, FamilyConfig]:
    """Each family's config in its own terms: the migration's own, else the phase's rendered for it."""
    base = _base_config(family_configs)
    configs = {str(k): v for k, v in family_configs.items()}
    out: dict[KnownFamily, FamilyConfig] = {}
    for family in sorted(families, key=lambda f: (f not in configs, f)):
        config = configs.get(family, base)
        if config is not None and catalog().get(family) is not None:
            out[family] = family_config(family, config)  # type: ignore[index]
    return out


def _phases(
    fleet: FleetDescription, candidate: _Candidate, gate: GateCommand, pause_budget_ms: int | None
) -> list[PlanPhase]:
    spec, position = candidate.spec, candidate.position
    assert position is not None
    families = {f for f in fleet.families() if f != "unknown"} or set(spec.families)
    out: list[PlanPhase] = []
    all_kafka_coop = fleet.size > 0 and all(m.kafka_coop for m in fleet.members)
    coordinated_to = spec.to if all_kafka_coop else None
    for phase in spec.phases:
        before = spec.expect_at(phase.n - 1)
        members_before = None if before.empty else fleet.size
        if phase.n <= position.done:
            status: Literal["done", "in-progress", "todo"] = "done"
        elif phase.n == position.in_progress:
            status = "in-progress"
        else:
            status = "todo"
        protocol_before = before.rebalance_protocol or _only_key(fleet.protocols())
        static = phase.config.get(
            "librdkafka", phase.config.get("java", MemberConfig())
        ).static_membership or (fleet.size > 0 and all(m.instance_id is not None for m in fleet.members))
        if phase.action in ("stop-all", "stop-all-start-all"):
            static = any(m.instance_id is not None for m in fleet.members)  # who stops delays the empty group
        # Members that declare themselves (manifests) say when they closed: remove-members can start
        # with the stop and send LeaveGroup the moment they are gone, off the unavailable window.
        declared = fleet.source == "live" and all(declared_assignors(m) is not None for m in fleet.members)
        gate_spec = (
            gate.gate(fleet.group, None, None, fleet.size)
            if status == "in-progress"
            else gate.gate(fleet.group, candidate.source, phase.n - 1, members_before)
        )
        # only a fleet with static members has any to remove: a dynamic member leaves as it stops
        remove_static = phase.remove_static_members and static
        then = (gate.remove_static(fleet.group),) if remove_static and not declared else ()
        alongside = (
            (gate.remove_static(fleet.group, wait_stopped=True),) if remove_static and declared else ()
        )
        out.append(
            PlanPhase(
                n=phase.n,
                title=phase.title,
                action=phase.action,
                status=status,
                progress=progress_note(position.moved, fleet.size) if status == "in-progress" else None,
                gate=render(gate_spec),
                gate_spec=gate_spec,
                config=_phase_configs(phase.config, families),
                expect=phase.expect,
                pause=phase.pause,
                pause_note=pause_note(
                    phase, protocol_before, fleet.size, static, coordinated_to=coordinated_to
                )
                + _assignment_interval_note(phase.expect.rebalance_protocol, fleet.broker_version),
                pause_budget_ms=pause_budget_ms,
                rollback=phase.rollback,
                notes=phase.notes,
                then=tuple(render(c) for c in then),
                then_specs=then,
                alongside=tuple(render(c) for c in alongside),
                alongside_specs=alongside,
            )
        )
    return out


def _only_key(counts: object) -> str | None:
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
    restart_s: float | None = None,
    pause_budget_ms: int | None = None,
) -> Plan:
    """Choose a path among `migrations` (name or file, spec) for `fleet` and lay out its phases.

    `forced`: the caller named one migration; every reason it does not fit becomes a blocker.
    `restart_s`: how long a member's restart takes (held against the broker's KIP-848 session).
    `pause_budget_ms`: every phase's pause budget (member pause p95), which its gate judges.
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
    if not forced and _already_there(state, to):
        return Plan(
            **base,
            status="done",
            warnings=(_already_there_note(state, to),),
        )
    wrong = None if forced else _wrong_way(state, to, fleet.group)
    if wrong is not None:
        return Plan(**base, status="blocked", blockers=(wrong,))

    candidates = [(src, s) for src, s in migrations if s.direction == direction and s.to == to]
    judged = [_judge(fleet, spec, src) for src, spec in candidates]
    usable = sorted(
        (f for f in judged if f.rejected is None),
        key=lambda f: (
            any(p.pause == "full-stop" for p in f.spec.phases),
            candidates.index((f.source, f.spec)),
        ),
    )
    warnings = [f"{f.spec.name} does not fit: {f.rejected}" for f in judged if f.rejected is not None]
    if not usable:
        blockers = [
            Blocker(name=f"path:{f.spec.name}", reason=f.rejected or "", hint="")
            for f in judged
            if f.rejected
        ] or [Blocker(name="no-path", reason=f"no migration goes from {state} to {to}")]
        return Plan(
            **base,
            status="blocked",
            blockers=tuple(blockers),
            alternatives=tuple(_alternatives(fleet, None, judged, to, gate)),
        )
    facts = requirement_facts(fleet, restart_s=restart_s)
    candidate = _first_unblocked(usable, facts)
    spec, position = candidate.spec, candidate.position
    assert position is not None
    if position.assumed:
        warnings.append(
            f"assumed the group is at phase {position.done} of {spec.name}: "
            + "; ".join(position.reasons[:3])
            + " (kafka-coop members publish manifests; the gates re-check every phase)"
        )
    started = _started(candidate)
    preconditions = () if started else tuple(requirement_checks(spec.requires, facts))
    blockers = [
        Blocker(name=c.name, reason=c.reason, hint=c.hint) for c in preconditions if c.status == "fail"
    ]
    blockers += [
        Blocker(
            name="known-defect", reason=sentence, hint="Upgrade these members past the affected versions."
        )
        for sentence in _fatal_defects(fleet, spec)
    ]
    warnings += [f"{c.name}: {c.reason}" for c in preconditions if c.status == "warn"]
    warnings += _family_warnings(fleet, spec)
    phases = _phases(fleet, candidate, gate, pause_budget_ms)
    final_gate = gate.gate(fleet.group, candidate.source, len(spec.phases), fleet.size)
    if position.done == len(spec.phases):
        status: PlanStatus = "done"
    elif blockers:
        status = "blocked"
    else:
        status = "in-progress" if started else "ready"
    return Plan(
        **base,
        status=status,
        migration=candidate.source,
        title=spec.title,
        summary=spec.summary,
        position=position.done,
        preconditions=preconditions,
        phases=tuple(phases),
        final_gate=render(final_gate),
        final_gate_spec=final_gate,
        warnings=tuple(warnings),
        blockers=tuple(blockers),
        alternatives=tuple(_alternatives(fleet, spec, judged, to, gate)),
    )


def _manifest_note(fleet: FleetDescription, spec: MigrationSpec) -> str:
    """Where the gates need manifests: a live member publishing none shows only the selected assignor,
    and the broker's view settles a list only when it is one cooperative assignor (`wire_assignors`);
    any other list a phase runs stays "not proven" (warn) without one."""
    undeclared = sum(m.count for m in fleet.members if declared_assignors(m) is None)
    unsettled = [
        k
        for k in range(len(spec.phases) + 1)
        if any(
            config.group_protocol == "classic"
            and config.assignors
            and not _settled_by_the_broker(config.assignors)
            for config in (spec.config_at(k) or {}).values()
        )
    ]
    if fleet.source != "live" or not undeclared or not unsettled:
        return ""
    gates = " and ".join(f"--phase {k}" for k in unsettled)
    return (
        f"{plural(undeclared, 'member')} {verb(undeclared, 'publishes', 'publish')} no manifest, so the "
        f"{gates} {verb(len(unsettled), 'gate', 'gates')} cannot see the assignor list and "
        f"{verb(len(unsettled), 'warns', 'warn')} until they do: create the manifest topic once "
        "(`kafka-coop manifest-topic`); running members publish to it within a minute"
    )


def _settled_by_the_broker(assignors: Sequence[str]) -> bool:
    """A list of one cooperative assignor: what a member seen running cooperative lists (wire_assignors)."""
    return len(assignors) == 1 and catalog().assignor_protocol(assignors[0]) == "cooperative"


def _assignment_interval_note(protocol: str | None, broker_version: str | None) -> str:
    """A phase that ends on the consumer protocol: each of its assignments waits for the coordinator's
    next assignment round (KIP-1263, Kafka 4.3+); said unless the broker is known to be older."""
    if protocol != "consumer" or version_at_least(broker_version or "", (4, 3)) is False:
        return ""
    return (
        " On the consumer protocol the coordinator computes each new assignment at most once per "
        "group.consumer.assignment.interval.ms (1 s by default from Kafka 4.3, KIP-1263): add it to "
        "every expected pause."
    )


def _fatal_defects(fleet: FleetDescription, spec: MigrationSpec) -> list[str]:
    """Fatal library defects block a path onto the consumer protocol (never one that leaves it)."""
    return fatal_defect_sentences(fleet, to_consumer=True) if spec.to == "consumer" else []


def _family_warnings(fleet: FleetDescription, spec: MigrationSpec) -> list[str]:
    out: list[str] = []
    fatal = _fatal_defects(fleet, spec)  # blockers, not warnings
    families = fleet.families()
    if spec.requires.no_assignment_user_data:
        coop = [
            m
            for m in fleet.members
            if m.client_family.value == "librdkafka"
            and m.rebalance_protocol.value == "cooperative"
            and m.assignment_user_data is not True
        ]
        if coop:
            out.append(
                "librdkafka's cooperative-sticky group leader has been seen writing userData into "
                "assignments (not on every rebalance); the broker then refuses the conversion and the first "
                "consumer-protocol member fails. The phase-0 gate re-reads the bytes: run it right before "
                "the first bounce."
            )
    out += [n for n in known_defect_notes(fleet, to_consumer=spec.to == "consumer") if n not in fatal]
    out += [
        f"Kafka {fleet.broker_version or 'of unknown version'}: {d.sentence()}"
        for d in broker_defects().affecting(fleet.broker_version, spec.name)
    ]
    manifests = _manifest_note(fleet, spec)
    if manifests:
        out.append(manifests)
    if families.get("unknown"):
        out.append(
            f"the client family of {plural(families['unknown'], 'member')} is unknown; "
            "the plan gives both families' "
            "config: use the one each member runs"
        )
    dynamic = (
        sum(m.count for m in fleet.members if m.instance_id is None)
        if spec.to in ("cooperative", "consumer")
        else 0
    )
    advice = static_id_advice(dynamic, fleet.size, to_consumer=spec.to == "consumer")
    if advice:
        out.append(advice)
    return out

"""A plan as a walk (pure): the steps `rollout run` takes, and the loop that takes them.

A step changes one member (a rolling phase) or every member at once (a cutover: a stop-all phase and
the start-all phase after it), then waits for its gate: health and the member count while a phase is
under way, the phase's own expectations after its last member. Each member is changed the way its
family allows: live through the control topic when its manifest says it runs kafka-coop, else by the
user's restart hook. The loop takes its effects (apply, gate, the clock, Ctrl-C) as arguments and
records every step in a journal, so tests drive it with fakes and a killed run resumes where it was.
docs/rollout-run.md is the user's guide.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from kafka_coop.errors import GateFailed, InvalidInput, KafkaCoopError
from kafka_coop.rollout._gate import GateReport
from kafka_coop.rollout._plan_model import FamilyConfig, Plan, PlanPhase
from kafka_coop.rollout._spec import MemberConfig
from kafka_coop.settings import SECRET_KEYS

Via = Literal["live", "hook"]
WalkMode = Literal["forward", "rollback"]
StepEvent = Literal["started", "applied", "apply-failed", "gate-passed", "gate-failed", "rechecked"]
# a key whose name says it holds a credential, beyond librdkafka's list: never in a step's settings
_SECRET_WORDS = ("password", "secret", "jaas", "private.key", "credentials")


class WalkMember(BaseModel):
    """One member of the group as the runner addresses it: `name` is its group.instance.id, else its
    client.id (what the restart hook's {member} and the control record's selector carry)."""

    model_config = ConfigDict(frozen=True)

    name: str
    instance_id: str | None = None
    family: str
    via: Via
    # what it runs now, when known (its manifest): a step already in place is seen so on a re-check
    group_protocol: str | None = None
    assignors: tuple[str, ...] | None = None


class MemberChange(BaseModel):
    """What one step does to one member: the settings its family takes in the phase."""

    model_config = ConfigDict(frozen=True)

    member: str
    instance_id: str | None = None
    family: str
    via: Via
    settings: dict[str, str]
    remove: tuple[str, ...] = ()
    config: MemberConfig


class StepGate(BaseModel):
    """The gate after a step: health and the member count, plus the phase's expectations after its last
    member (migration and phase given)."""

    model_config = ConfigDict(frozen=True)

    migration: str | None = None
    phase: int | None = None
    expect_members: int


class Step(BaseModel):
    model_config = ConfigDict(frozen=True)

    n: int  # 1-based position in the walk
    phase: int  # the plan phase it belongs to (the start-all phase of a cutover)
    phase_title: str
    kind: Literal["member", "cutover"]
    changes: tuple[MemberChange, ...]
    gate: StepGate

    @property
    def members(self) -> tuple[str, ...]:
        return tuple(c.member for c in self.changes)


class Walk(BaseModel):
    """Every step of one walk, and what identifies it in a journal."""

    model_config = ConfigDict(frozen=True)

    plan_id: str
    group: str
    mode: WalkMode = "forward"
    migration: str | None
    steps: tuple[Step, ...]
    # what each member ran when the walk began, where its manifest said: a rollback returns it there
    before: dict[str, MemberConfig] = {}


def plan_id(plan: Plan) -> str:
    """A plan's identity: the hash of its contract as JSON (a journal of another plan is refused)."""
    text = json.dumps(plan.model_dump(mode="json", by_alias=True), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def is_secret_key(key: str) -> bool:
    return key in SECRET_KEYS or any(word in key.lower() for word in _SECRET_WORDS)


def _refuse_secrets(settings: Mapping[str, str], phase: int) -> None:
    """Settings reach a restart hook's command line and a control record: never a credential."""
    secret = sorted(k for k in settings if is_secret_key(k))
    if secret:
        raise InvalidInput(
            f"Phase {phase} of the plan sets {', '.join(secret)}, a credential, which a rollout never "
            "passes to members.",
            hint="Keep credentials in the members' own configuration: a plan changes rebalance settings.",
        )


def _change(member: WalkMember, phase: PlanPhase) -> MemberChange:
    config: FamilyConfig | None = phase.config.get(member.family)  # type: ignore[call-overload]
    if config is None:
        raise InvalidInput(
            f"Phase {phase.n} of the plan has no config for {member.family} member {member.name}.",
            hint="Write the plan again from the live group (upgrade-plan ... -o json).",
        )
    _refuse_secrets(config.set, phase.n)
    return MemberChange(
        member=member.name,
        instance_id=member.instance_id,
        family=member.family,
        via=member.via,
        settings=dict(config.set),
        remove=config.remove,
        config=config.member,
    )


def in_place(change: MemberChange, member: WalkMember | None) -> bool:
    """The member provably runs the change's config already (its manifest says so)."""
    if member is None or member.group_protocol is None:
        return False
    if member.group_protocol != change.config.group_protocol:
        return False
    if change.config.group_protocol == "consumer":
        return True
    return member.assignors is not None and tuple(member.assignors) == tuple(change.config.assignors)


def walk_steps(plan: Plan, members: Sequence[WalkMember]) -> Walk:
    """The forward walk of `plan` over `members`: phase by phase (done ones left out), member by member
    (in name order); a stop-all phase and the start-all after it are one cutover step. Members already
    on the first phase's config (a walk begun by hand) are not changed again."""
    if plan.blocked:
        raise GateFailed(
            f"The plan for {plan.group} is blocked: {plan.blockers[0].reason}.",
            hint=plan.blockers[0].hint or "Write a plan that is not blocked.",
        )
    if not members:
        raise InvalidInput(f"Group {plan.group} has no members to walk.", hint="Start the members first.")
    size = len(members)
    ordered = sorted(members, key=lambda m: m.name)
    steps: list[Step] = []
    todo = [p for p in plan.phases if p.status != "done"]
    first = True
    for i, phase in enumerate(todo):
        if phase.action == "stop-all":
            if i + 1 < len(todo) and todo[i + 1].action == "start-all":
                continue  # the start-all phase after it makes the cutover step
            raise InvalidInput(
                f"Phase {phase.n} of the plan stops every member and no phase starts them again.",
                hint="Run the plan from its first phase (a stop-all is followed by a start-all).",
            )
        final = StepGate(migration=plan.migration, phase=phase.n, expect_members=size)
        if phase.action in ("start-all", "stop-all-start-all"):
            changes = tuple(_change(m, phase) for m in ordered)
            steps.append(
                Step(
                    n=len(steps) + 1,
                    phase=phase.n,
                    phase_title=phase.title,
                    kind="cutover",
                    changes=changes,
                    gate=final,
                )
            )
        elif phase.action == "rolling-bounce":
            rolling = [_change(m, phase) for m in ordered]
            if first:
                rolling = [c for c, m in zip(rolling, ordered, strict=True) if not in_place(c, m)]
            for k, change in enumerate(rolling):
                last = k == len(rolling) - 1
                steps.append(
                    Step(
                        n=len(steps) + 1,
                        phase=phase.n,
                        phase_title=phase.title,
                        kind="member",
                        changes=(change,),
                        gate=final if last else StepGate(expect_members=size),
                    )
                )
        first = False
    before = {m.name: c for m in ordered if (c := _running(m)) is not None}
    return Walk(
        plan_id=plan_id(plan), group=plan.group, migration=plan.migration, steps=tuple(steps), before=before
    )


def _running(member: WalkMember) -> MemberConfig | None:
    """The config a member runs, when its manifest says (None otherwise, or if it is not one we know)."""
    if member.group_protocol not in ("classic", "consumer") or member.assignors is None:
        return None
    try:
        if member.group_protocol == "consumer":
            return MemberConfig(group_protocol="consumer")
        return MemberConfig(group_protocol="classic", assignors=member.assignors)
    except ValueError:
        return None


def check_phases(plan: Plan) -> None:
    """Every phase of the plan is a phase of its migration (a plan edited by hand may name one that is
    not): one sentence before any step."""
    if plan.migration is None:
        return
    from kafka_coop.rollout._spec import load_migration

    spec = load_migration(plan.migration)
    known = {p.n for p in spec.phases}
    for phase in plan.phases:
        if phase.n not in known:
            raise InvalidInput(
                f"The plan names phase {phase.n}, which migration {plan.migration} does not have "
                f"(it has {', '.join(str(n) for n in sorted(known))}).",
                hint="Write the plan again (upgrade-plan ... -o json) instead of editing it.",
            )


def refuse_missing_hook(walk: Walk, *, hook: str | None) -> None:
    """A walk that changes a member only a restart can change, with no --restart: refused up front."""
    if hook is not None:
        return
    needing = sorted({c.member for s in walk.steps for c in s.changes if c.via == "hook"})
    if needing:
        more = f" (and {len(needing) - 3} more)" if len(needing) > 3 else ""
        raise InvalidInput(
            f"Members {', '.join(needing[:3])}{more} do not run kafka-coop, so only a restart changes "
            "them, and no --restart hook was given.",
            hint="Give --restart 'CMD' with {member}, {instance_id}, {phase} and {settings} in it "
            "(docs/rollout-run.md).",
        )


def refuse_live_static_without_id(walk: Walk) -> None:
    """A live change keeps the member's group.instance.id and cannot make one up: a step that puts a
    dynamic kafka-coop member on a static-membership config is refused before the first step, instead
    of applying and then failing its gate's member-config check for the whole --timeout."""
    needing = sorted(
        {
            c.member
            for s in walk.steps
            for c in s.changes
            if c.via == "live" and c.config.static_membership and c.instance_id is None
        }
    )
    if needing:
        more = f" (and {len(needing) - 3} more)" if len(needing) > 3 else ""
        raise InvalidInput(
            f"Members {', '.join(needing[:3])}{more} have no group.instance.id, the plan runs them as "
            "static members, and a live change cannot give a member one.",
            hint="Start them with a group.instance.id (kafka-coop consume --instance-id), or change "
            "them through --restart 'CMD' with their new settings (docs/rollout-run.md).",
        )


def rollback_walk(
    forward: Walk, reached: int, plan: Plan, before: Mapping[str, MemberConfig] | None = None
) -> Walk:
    """The way back from step `reached` of `forward` (the last one that may have changed a member):
    every change undone in reverse order, each member given the config of the phase before (before
    phase 1: what it ran when the walk began, `before`, else the migration's start config), behind a
    health gate, and the last one behind the gate of the state the walk started from."""
    ran = dict(forward.before if before is None else before)
    done = [s for s in forward.steps if s.n <= reached]
    phases = {p.n: p for p in plan.phases}
    steps: list[Step] = []
    for k, step in enumerate(reversed(done)):
        previous = step.phase - (2 if step.kind == "cutover" and _is_stop(phases, step.phase - 1) else 1)
        back = tuple(_undo(c, plan, previous, ran.get(c.member)) for c in step.changes)
        last = k == len(done) - 1
        size = step.gate.expect_members
        gate = StepGate(migration=plan.migration, phase=previous, expect_members=size)
        steps.append(
            Step(
                n=len(steps) + 1,
                phase=previous,
                phase_title=f"undo step {step.n} ({step.phase_title})",
                kind=step.kind,
                changes=back,
                gate=gate if last or step.kind == "cutover" else StepGate(expect_members=size),
            )
        )
    return Walk(
        plan_id=forward.plan_id,
        group=forward.group,
        mode="rollback",
        migration=plan.migration,
        steps=tuple(steps),
    )


def _is_stop(phases: Mapping[int, PlanPhase], n: int) -> bool:
    return n in phases and phases[n].action == "stop-all"


def _undo(change: MemberChange, plan: Plan, phase: int, ran: MemberConfig | None) -> MemberChange:
    """The change back to the config the member had after `phase` (0: what it ran before the walk)."""
    from kafka_coop.rollout._wording import family_config

    configs = {p.n: p.config for p in plan.phases}
    config = configs.get(phase, {}).get(change.family) if phase >= 1 else None  # type: ignore[call-overload]
    if config is None and phase < 1 and ran is not None:
        config = family_config(change.family, ran)
    if config is None:
        start = _start_config(plan, change.family)
        if start is None:
            raise InvalidInput(
                f"The plan does not say what {change.family} member {change.member} ran before it.",
                hint="Roll it back by hand: the plan's phases list their rollback.",
            )
        config = start
    _refuse_secrets(config.set, max(phase, 0))
    return change.model_copy(
        update={"settings": dict(config.set), "remove": config.remove, "config": config.member}
    )


def _start_config(plan: Plan, family: str) -> FamilyConfig | None:
    """The config every member ran before phase 1: the migration's start config, read through the
    phase-1 rollback wording is not enough, so it is taken from the migration itself (pure data)."""
    if plan.migration is None:
        return None
    from kafka_coop.rollout._spec import load_migration
    from kafka_coop.rollout._wording import family_config

    spec = load_migration(plan.migration)
    configs = {str(k): v for k, v in spec.config_at(0).items()}
    config = configs.get(family) or next(iter(configs.values()), None)
    return family_config(family, config) if config is not None else None


# ---- the journal's state and the loop -----------------------------------------------------------


class Progress(BaseModel):
    """One progress record of `rollout run -o json` (one JSON object per line)."""

    model_config = ConfigDict(frozen=True)

    v: Literal[1] = 1
    group: str
    plan_id: str
    mode: WalkMode
    step: int
    steps: int
    phase: int
    event: StepEvent | Literal["walk-started", "walk-done", "walk-stopped"]
    members: tuple[str, ...] = ()
    at_ms: int
    seconds: float | None = None  # the step's time so far (apply + gate)
    gate: str | None = None  # the gate's summary: `all checks pass` or the checks that did not
    reason: str | None = None


def finished_steps(events: Sequence[tuple[int, StepEvent]]) -> dict[int, StepEvent]:
    """step -> its last event, from a journal's (step, event) pairs in order."""
    last: dict[int, StepEvent] = {}
    for step, event in events:
        last[step] = event
    return last


def resume_point(walk: Walk, events: Sequence[tuple[int, StepEvent]]) -> tuple[int, StepEvent | None]:
    """(the first step not finished, its last event if it was begun): a begun step is re-checked before
    it is redone. A walk whose every step passed its gate returns (len + 1, None)."""
    last = finished_steps(events)
    for step in walk.steps:
        state = last.get(step.n)
        if state not in ("gate-passed", "rechecked"):
            return step.n, state
    return len(walk.steps) + 1, None


def _rechecked(step: Step, begun: StepEvent, effects: WalkEffects) -> GateReport | None:
    """The gate's passing report when a begun step needs no redo: after its apply finished the gate
    alone judges (it waits, and sees the change in place); a step only started is judged by one look
    first (the apply may never have run), then by its gate."""
    if begun == "started" and not effects.already_applied(step):
        return None
    report = effects.gate(step)
    return None if report.failed() else report


class WalkEffects(Protocol):
    """What the loop does to the world: the shell gives real ones, the unit tests fakes."""

    def apply(self, step: Step) -> None: ...  # raises KafkaCoopError when it cannot

    def gate(self, step: Step) -> GateReport: ...

    def already_applied(self, step: Step) -> bool: ...  # one look: every change visible in place

    def now_ms(self) -> int: ...

    def stop_requested(self) -> bool: ...


class StepFailed(GateFailed):
    """A step's apply or gate failed: the walk stopped there (exit 1); the journal says where."""

    def __init__(self, message: str, *, hint: str | None = None, step: int) -> None:
        super().__init__(message, hint=hint)
        self.step = step


class WalkStopped(KafkaCoopError):
    """Ctrl-C (or a signal) asked the walk to stop, and it did between two steps (exit 130)."""

    exit_code = 130

    def __init__(self, message: str, *, hint: str | None = None, step: int) -> None:
        super().__init__(message, hint=hint)
        self.step = step


Record = Callable[[int, StepEvent, str | None], None]  # journal append: step, event, detail


def _gate_hint(report: GateReport) -> str:
    hints = " ".join(dict.fromkeys(c.hint for c in report.checks if c.status == "fail" and c.hint))
    reasons = "; ".join(f"{c.name}: {c.reason}" for c in report.checks if c.status == "fail")
    return f"{reasons}. {hints}".strip()


def execute(
    walk: Walk,
    effects: WalkEffects,
    record: Record,
    *,
    start: int = 1,
    begun: StepEvent | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    resume_command: str = "kafka-coop rollout resume",
) -> int:
    """Take the steps of `walk` from `start`; returns the number of steps taken. A step `begun` before
    (a killed run; its last event) is first re-checked: if its gate passes it is finished, else it is
    redone. Stops with StepFailed at the first apply or gate that fails, with WalkStopped
    between steps once Ctrl-C was asked."""
    total = len(walk.steps)

    def progress(step: Step, event: str, *, t0: int | None = None, **kw: object) -> None:
        if on_progress is None:
            return
        now = effects.now_ms()
        on_progress(
            Progress.model_validate(
                {
                    "group": walk.group,
                    "plan_id": walk.plan_id,
                    "mode": walk.mode,
                    "step": step.n,
                    "steps": total,
                    "phase": step.phase,
                    "event": event,
                    "members": step.members,
                    "at_ms": now,
                    "seconds": None if t0 is None else round((now - t0) / 1000, 3),
                    **kw,
                }
            )
        )

    taken = 0
    for step in walk.steps:
        if step.n < start:
            continue
        if effects.stop_requested():
            raise WalkStopped(
                f"Stopped before step {step.n} of {total} (Ctrl-C); steps 1-{step.n - 1} are done.",
                hint=f"Continue with `{resume_command}`.",
                step=step.n,
            )
        t0 = effects.now_ms()
        if begun is not None and step.n == start:
            passed = _rechecked(step, begun, effects)
            if passed is not None:
                record(step.n, "rechecked", passed.summary())
                progress(step, "rechecked", t0=t0, gate=passed.summary())
                taken += 1
                continue
        record(step.n, "started", None)
        progress(step, "started", t0=t0)
        try:
            effects.apply(step)
        except KafkaCoopError as exc:
            record(step.n, "apply-failed", exc.message)
            progress(step, "apply-failed", t0=t0, reason=exc.message)
            raise StepFailed(
                f"Step {step.n} of {total} ({', '.join(step.members)}, phase {step.phase}) could not be "
                f"applied: {exc.message.rstrip('.')}.",
                hint=(exc.hint + " " if exc.hint else "")
                + f"Fix it, then `{resume_command}`, or `kafka-coop rollout run --rollback`.",
                step=step.n,
            ) from None
        record(step.n, "applied", None)
        progress(step, "applied", t0=t0)
        report = effects.gate(step)
        if report.failed():
            record(step.n, "gate-failed", report.summary())
            progress(step, "gate-failed", t0=t0, gate=report.summary())
            raise StepFailed(
                f"The gate after step {step.n} of {total} ({', '.join(step.members)}, phase "
                f"{step.phase}) failed: {report.summary()}.",
                hint=f"{_gate_hint(report)} Fix the group, then `{resume_command}`; or walk back with "
                "`kafka-coop rollout run --rollback`.",
                step=step.n,
            )
        record(step.n, "gate-passed", report.summary())
        progress(step, "gate-passed", t0=t0, gate=report.summary())
        taken += 1
    return taken

"""The shell of `rollout run`: the members of a live group, the two appliers, the gates, the journal.

`_walk` decides the steps and takes them; this module gives it its effects: a restart hook (a shell
command of the user's, run once per member with its placeholders filled in) for members that are not
kafka-coop, the control topic for those that are (kafka_coop/control), `run_gate` in-process for every
gate, and the journal file. Loaded on first use by the package face, like `_verify`.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_coop.admin import ClusterAdmin
from kafka_coop.errors import GateFailed, InvalidInput, KafkaCoopError
from kafka_coop.events import now_ms
from kafka_coop.inspection import GroupSnapshot, take_snapshot
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC
from kafka_coop.rollout._checks import Check, worst
from kafka_coop.rollout._gate import GateReport
from kafka_coop.rollout._journal import (
    JournalEntry,
    JournalFile,
    check_journal,
    read_journal,
    step_events,
    walk_entry,
    walks_of,
)
from kafka_coop.rollout._plan_model import Plan
from kafka_coop.rollout._protection import AclGrant, acls_to_add, operator_principal, unprotected_reason
from kafka_coop.rollout._spec import load_migration
from kafka_coop.rollout._walk import (
    MemberChange,
    Progress,
    Step,
    StepEvent,
    Walk,
    WalkMember,
    check_phases,
    execute,
    in_place,
    refuse_live_static_without_id,
    refuse_missing_hook,
    resume_point,
    rollback_walk,
    walk_steps,
)
from kafka_coop.rollout.live._verify import run_gate

if TYPE_CHECKING:
    from kafka_coop.control import ControlKind

PLACEHOLDERS = ("{member}", "{instance_id}", "{phase}", "{settings}")
HOOK_OUTPUT_TAIL = 1500


def members_of(snap: GroupSnapshot) -> list[WalkMember]:
    """The group's members as the walk addresses them: live when the manifest says kafka-coop."""
    out = []
    for m in snap.members:
        manifest = m.manifest
        kafka_coop = manifest is not None and "kafka-coop" in manifest.libraries
        out.append(
            WalkMember(
                name=m.instance_id or m.client_id,
                instance_id=m.instance_id,
                family=str(m.client_family.value),
                via="live" if kafka_coop else "hook",
                group_protocol=manifest.group_protocol if manifest is not None else None,
                assignors=tuple(manifest.assignors) if manifest is not None else None,
            )
        )
    return out


def settings_word(change: MemberChange) -> str:
    """{settings}: the phase's settings for the member as one JSON object (a removed key is null)."""
    values: dict[str, str | None] = {**change.settings, **{k: None for k in change.remove}}
    return json.dumps(values, sort_keys=True, separators=(",", ":"))


def hook_command(template: str, change: MemberChange, phase: int) -> str:
    """The user's --restart command for one member, each placeholder replaced by its value, shell-quoted."""
    values = {
        "{member}": change.member,
        "{instance_id}": change.instance_id or "",
        "{phase}": str(phase),
        "{settings}": settings_word(change),
    }
    out = template
    for key, value in values.items():
        out = out.replace(key, shlex.quote(value))
    return out


class RestartHook:
    """Runs the user's --restart for each member a step changes (all at once for a cutover)."""

    def __init__(self, template: str, *, timeout_s: float) -> None:
        self.template = template
        self.timeout_s = timeout_s

    def apply(self, step: Step, changes: Sequence[MemberChange]) -> None:
        started = [
            (
                c,
                subprocess.Popen(  # noqa: S602  # the user's own command; every value filled in is quoted
                    hook_command(self.template, c, step.phase),
                    shell=True,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    # a Ctrl-C at the terminal is the runner's (stop after this step), not the hook's
                    start_new_session=True,
                ),
            )
            for c in changes
        ]
        failed: list[str] = []
        tail = ""
        for change, proc in started:
            try:
                output, _ = proc.communicate(timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                output, _ = proc.communicate()
                failed.append(f"{change.member} (no exit within {self.timeout_s:g} s)")
                tail = output or ""
                continue
            if proc.returncode != 0:
                failed.append(f"{change.member} (exit {proc.returncode})")
                tail = output or ""
        if failed:
            raise GateFailed(
                f"The restart hook failed for {', '.join(failed)}",
                hint=f"Its output: {tail.strip()[-HOOK_OUTPUT_TAIL:]}" if tail.strip() else None,
            )


# A rollback walk numbers its steps from 1 again under the same plan id; members apply a control record
# only above the last step they applied for that plan, so the records of a rollback count from here.
ROLLBACK_STEP_BASE = 100_000


def control_step(walk: Walk, step: Step, part: int = 0) -> int:
    """The control record's `step`: strictly increasing over a plan's walks (a cutover writes two)."""
    base = ROLLBACK_STEP_BASE if walk.mode == "rollback" else 0
    return (base + step.n) * 2 + part


def held_assignors(selected: str, step: Step) -> tuple[str, ...] | None:
    """The assignors a cutover's hold joins with (the group's now, then the new ones), or None where
    the cutover is not held: a step with hook-restarted or dynamic members, or onto the consumer
    protocol (a consumer group has no initial rebalance to wait out)."""
    changes = step.changes
    if step.kind != "cutover" or not changes or not selected:
        return None
    if any(c.via != "live" or not c.instance_id for c in changes):
        return None
    settings = live_settings(changes[0])
    if settings.get("group.protocol", "classic") != "classic":
        return None
    new = [a.strip() for a in settings.get("partition.assignment.strategy", "").split(",") if a.strip()]
    return (selected, *new) if new else None


def live_settings(change: MemberChange) -> dict[str, str]:
    """What a control record carries for a change: the reconfigurable keys it sets, and REMOVE for
    those it removes (a group.instance.id a plan asks for is not one: a live member keeps its own)."""
    from kafka_coop.control import RECONFIGURABLE_KEYS, REMOVE

    values = {k: v for k, v in change.settings.items() if k in RECONFIGURABLE_KEYS}
    return {**values, **{k: REMOVE for k in change.remove if k in RECONFIGURABLE_KEYS}}


class ControlTopic:
    """Changes kafka-coop members live: a control record per step, then their answers (manifests)."""

    def __init__(self, conf: Mapping[str, str], *, timeout_s: float, manifests_topic: str) -> None:
        self.conf = dict(conf)
        self.timeout_s = timeout_s
        self.manifests_topic = manifests_topic

    def reconfigure(self, walk: Walk, step: Step, changes: Sequence[MemberChange]) -> None:
        """A rolling step: one record addressed to its member, then its answer."""
        names = [c.member for c in changes]
        self._publish(walk, step, 0, "reconfigure", names, live_settings(changes[0]))
        self._outcomes(walk, control_step(walk, step, 0), names, "applied")

    def close(self, walk: Walk, step: Step, changes: Sequence[MemberChange]) -> None:
        """A cutover's first half: every kafka-coop member of the group closes its client and waits."""
        self._publish(walk, step, 0, "cutover-close", None, {})
        self._outcomes(walk, control_step(walk, step, 0), [c.member for c in changes], "closed-for-cutover")

    def rejoin(self, walk: Walk, step: Step, changes: Sequence[MemberChange]) -> None:
        """A cutover's second half: every closed member rejoins on the new settings."""
        self.send_rejoin(walk, step, changes)
        self.rejoined(walk, step, changes)

    def send_rejoin(self, walk: Walk, step: Step, changes: Sequence[MemberChange]) -> None:
        self._publish(walk, step, 1, "cutover-rejoin", None, live_settings(changes[0]))

    def rejoined(self, walk: Walk, step: Step, changes: Sequence[MemberChange]) -> None:
        self._outcomes(walk, control_step(walk, step, 1), [c.member for c in changes], "applied")

    def _publish(
        self,
        walk: Walk,
        step: Step,
        part: int,
        kind: ControlKind,
        members: list[str] | None,
        settings: dict[str, str],
    ) -> None:
        from kafka_coop.control import ControlRecord, publish_control

        record = ControlRecord(
            plan_id=walk.plan_id,
            group=walk.group,
            step=control_step(walk, step, part),
            phase=str(step.phase),
            kind=kind,
            members=members,
            settings=settings,
            issued_at_ms=now_ms(),
        )
        publish_control(self.conf, record)

    def _outcomes(self, walk: Walk, n: int, names: Sequence[str], want: str) -> None:
        from kafka_coop.control import read_outcomes

        got = read_outcomes(
            self.conf,
            walk.group,
            walk.plan_id,
            n,
            timeout_s=self.timeout_s,
            expect=names,
            topic=self.manifests_topic,
        )
        refused = {k: o for k, o in got.items() if o.outcome == "refused"}
        if refused:
            who, outcome = sorted(refused.items())[0]
            raise GateFailed(f"Member {who} refused the change: {outcome.reason or 'no reason given'}")
        missing = [name for name in names if name not in got or got[name].outcome != want]
        if missing:
            raise GateFailed(
                f"{', '.join(missing)} did not report {want} within {self.timeout_s:g} s",
                hint="A kafka-coop member follows the control topic only when it opts in "
                "(CoopConsumer(control=True)); docs/rollout-run.md.",
            )


class Runner:
    """One walk on one group: its effects for `_walk.execute`, and the journal it writes."""

    def __init__(
        self,
        admin: ClusterAdmin,
        group: str,
        *,
        conf: Mapping[str, str],
        hook: str | None,
        command_config: Path | None,
        gate_timeout_s: float,
        apply_timeout_s: float,
        manifests_topic: str | None = DEFAULT_MANIFEST_TOPIC,
        stop_requested: Callable[[], bool] = lambda: False,
        on_look: Callable[[GroupSnapshot], None] | None = None,
        unprotected_control: bool = False,
    ) -> None:
        self.admin = admin
        self.unprotected_control = unprotected_control
        self.group = group
        self.conf = dict(conf)
        self.hook = RestartHook(hook, timeout_s=apply_timeout_s) if hook is not None else None
        self.control = ControlTopic(
            {"bootstrap.servers": admin.bootstrap, **conf},
            timeout_s=apply_timeout_s,
            manifests_topic=manifests_topic or DEFAULT_MANIFEST_TOPIC,
        )
        self.command_config = command_config
        self.gate_timeout_s = gate_timeout_s
        self.manifests_topic = manifests_topic
        self._stop = stop_requested
        self.on_look = on_look
        self.walk: Walk | None = None

    # ---- looks ----

    def look(self) -> GroupSnapshot:
        snap = take_snapshot(
            self.admin,
            self.group,
            conf=self.conf,
            manifests_topic=self.manifests_topic,
            with_broker=False,
            timeout_s=min(self.gate_timeout_s, 15.0),
        )
        if self.on_look is not None:
            self.on_look(snap)
        return snap

    def control_grants(self) -> list[AclGrant] | None:
        """The ACL bindings that apply to the control topic (literal, prefixed, `*`; any principal), or
        None when the cluster has no authorizer."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            AclBindingFilter,
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
            ResourceType,
        )

        from kafka_coop.control import CONTROL_TOPIC
        from kafka_coop.errors import ClusterUnavailable

        wanted = AclBindingFilter(
            ResourceType.TOPIC,
            CONTROL_TOPIC,
            ResourcePatternType.MATCH,  # literal, prefixed and `*` bindings that apply to the name
            None,  # type: ignore[arg-type]  # None matches any principal (the stubs say str)
            None,  # type: ignore[arg-type]  # and any host
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        try:
            bindings = self.admin.client.describe_acls(wanted, request_timeout=15.0).result()
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if isinstance(error, KafkaError) and error.code() == KafkaError.SECURITY_DISABLED:
                return None
            raise ClusterUnavailable(
                f"Could not read the ACLs of the control topic {CONTROL_TOPIC} on {self.admin.bootstrap} "
                f"({error.str() if isinstance(error, KafkaError) else exc}).",
                hint="The operator's principal needs DESCRIBE on the cluster to read them.",
            ) from None
        return [
            AclGrant(principal=b.principal, operation=b.operation.name, permission=b.permission_type.name)
            for b in bindings
        ]

    def refuse_unprotected_control(self, walk: Walk) -> None:
        """Before the first live step: only the operator's principal may write the control topic."""
        if self.unprotected_control or not any(c.via == "live" for s in walk.steps for c in s.changes):
            return
        reason = unprotected_reason(self.control_grants(), operator=operator_principal(self.conf))
        if reason is not None:
            raise InvalidInput(
                reason,
                hint=f"Give the control topic these ACLs and no other WRITE: {acls_to_add()} "
                "(docs/rollout-run.md); on a sandbox or dev cluster, --unprotected-control accepts it as is.",
            )

    def members(self) -> list[WalkMember]:
        snap = self.look()
        if not snap.exists:
            raise InvalidInput(
                f"Group {self.group!r} has no members on {self.admin.bootstrap}.",
                hint="Check the name (kafka-coop describe --all) and that its members run.",
            )
        return members_of(snap)

    # ---- WalkEffects ----

    def apply(self, step: Step) -> None:
        """Rolling: the member's own way. Cutover: the kafka-coop members close (and their static ids
        are removed, so the group empties at once), the others are restarted by the hook, then the
        closed ones rejoin: no member on the old settings meets one on the new."""
        walk = self.walk
        assert walk is not None
        hooked = [c for c in step.changes if c.via == "hook"]
        live = [c for c in step.changes if c.via == "live"]
        selected = self.admin.describe_group(self.group).selected_assignor if step.kind == "cutover" else ""
        hold = held_assignors(selected, step)
        if hold is not None:
            self._held_cutover(walk, step, live, hold)
            return
        if step.kind == "cutover" and live:
            self.control.close(walk, step, live)
            self._remove_static([c.instance_id for c in live if c.instance_id])
        if hooked:
            if self.hook is None:  # refused before step 1 (refuse_missing_hook)
                raise InvalidInput("No --restart hook was given.")
            self.hook.apply(step, hooked)
        if live:
            if step.kind == "cutover":
                self.control.rejoin(walk, step, live)
            else:
                self.control.reconfigure(walk, step, live)

    def _held_cutover(
        self, walk: Walk, step: Step, live: Sequence[MemberChange], assignors: tuple[str, ...]
    ) -> None:
        """The members close, are removed and rejoin with the group held open by the runner's own
        member, so they all come back in one rebalance (kafka_coop.membership._hold). The hold's and the
        removal's connections are made before the close: their bootstrap is not part of the pause."""
        from kafka_coop.membership import GroupHold, LeaveGroupClient, hold_across, hold_instance_id

        ids = [c.instance_id for c in live if c.instance_id]
        timeout_s = min(self.gate_timeout_s, 30.0)
        hold = GroupHold(
            self.admin.bootstrap,
            self.conf,
            self.group,
            hold_instance_id(walk.plan_id, control_step(walk, step, 1)),
            assignors,
            timeout_s=timeout_s,
        )
        leave = LeaveGroupClient(self.admin.bootstrap, self.conf, timeout_s)
        try:
            self.control.close(walk, step, live)
            hold_across(
                self.admin,
                leave,
                hold,
                ids,
                lambda: self.control.send_rejoin(walk, step, live),
                ids,
            )
        finally:
            hold.close()
            leave.close()
        self.control.rejoined(walk, step, live)

    def _remove_static(self, instance_ids: Sequence[str]) -> None:
        """Closed static members leave now (LeaveGroup by group.instance.id), not after their session."""
        from kafka_coop.membership import LeaveGroupClient

        if not instance_ids:
            return
        client = LeaveGroupClient(self.admin.bootstrap, self.conf, min(self.gate_timeout_s, 30.0))
        try:
            outcomes = client.remove(self.group, instance_ids)
        finally:
            client.close()
        bad = [o for o in outcomes if o.error not in (None, "UNKNOWN_MEMBER_ID")]
        if bad:
            raise GateFailed(
                f"Removing the closed static members of {self.group} failed: "
                f"{bad[0].instance_id}: {bad[0].error}"
            )

    def already_applied(self, step: Step) -> bool:
        seen = {m.name: m for m in self.members()}
        return all(in_place(c, seen.get(c.member)) for c in step.changes)

    def gate(self, step: Step) -> GateReport:
        gate = step.gate
        spec = load_migration(gate.migration) if gate.migration and gate.phase is not None else None
        deadline = time.monotonic() + self.gate_timeout_s
        while True:
            report = run_gate(
                self.admin,
                self.group,
                conf=self.conf,
                spec=spec,
                phase=gate.phase if spec is not None else None,
                expect_members=gate.expect_members,
                wait=True,
                timeout_s=max(1.0, deadline - time.monotonic()),
                manifests_topic=self.manifests_topic,
                on_look=self.on_look,
            )
            if report.failed():
                return report
            placed = self._placed_check(step)
            if placed.status == "pass" or time.monotonic() + 1 > deadline:
                checks = (*report.checks, placed)
                return report.model_copy(update={"checks": checks, "status": worst(c.status for c in checks)})
            time.sleep(1.0)  # the member's new manifest is not out yet: look again

    def _placed_check(self, step: Step) -> Check:
        """Every changed member that publishes a manifest shows the step's config (a restart hook that
        returns before the restart would otherwise pass a health gate on the old member)."""
        seen = {m.name: m for m in self.members()}
        known = [c for c in step.changes if seen.get(c.member) and seen[c.member].group_protocol]
        behind = [c.member for c in known if not in_place(c, seen.get(c.member))]
        if behind:
            return Check(
                name="change-in-place",
                status="fail",
                reason=f"{', '.join(behind)} still run the config of before the step",
                members=tuple(behind),
                hint="The member did not restart with the phase's settings: look at the restart hook.",
            )
        unknown = len(step.changes) - len(known)
        why = f"; {unknown} member(s) publish no manifest: not judged for them" if unknown else ""
        return Check(name="change-in-place", status="pass", reason=f"the step's config is in place{why}")

    def now_ms(self) -> int:
        return now_ms()

    def stop_requested(self) -> bool:
        return self._stop()


def start_walk(
    runner: Runner,
    plan: Plan,
    journal_path: Path,
    *,
    plan_file: str | None,
    hook: str | None,
    rollback: bool,
    on_progress: Callable[[Progress], None] | None = None,
) -> tuple[Walk, int]:
    """`rollout run`: a new walk (or, with `rollback`, the way back from the point the journal's forward
    walk reached). Every refusal comes before the first step. Returns the walk and the steps taken."""
    if plan.group != runner.group:
        raise InvalidInput(
            f"The plan is for group {plan.group!r}, not {runner.group!r}.",
            hint="Give the plan written for this group (upgrade-plan GROUP ... -o json).",
        )
    check_phases(plan)
    members = runner.members()  # an unreachable cluster is exit 3 here, before any step
    entries = read_journal(journal_path) if journal_path.exists() else []
    if rollback:
        walk, reached = _rollback_of(plan, entries, journal_path, runner.group)
    else:
        if entries:
            raise InvalidInput(
                f"Journal {str(journal_path)!r} already holds a walk.",
                hint="Continue it with `kafka-coop rollout resume`, or give another --journal.",
            )
        walk, reached = walk_steps(plan, members), None
    refuse_missing_hook(walk, hook=hook)
    refuse_live_static_without_id(walk)
    runner.refuse_unprotected_control(walk)
    journal = JournalFile(journal_path)
    try:
        journal.append(walk_entry(walk, at_ms=now_ms(), plan_file=plan_file, to=plan.to, reached=reached))
        return walk, _execute(runner, walk, journal, start=1, begun=None, on_progress=on_progress)
    finally:
        journal.close()


def _rollback_of(plan: Plan, entries: Sequence[JournalEntry], path: Path, group: str) -> tuple[Walk, int]:
    """The way back, and the forward step it starts from: the last one the journal says was begun."""
    walks = walks_of(entries)
    if walks and walks[-1][0].mode == "rollback":
        raise InvalidInput(
            f"Journal {str(path)!r} already holds a rollback.",
            hint="Continue it with `kafka-coop rollout resume`.",
        )
    forwards = [(w, rest) for w, rest in walks if w.mode == "forward"]
    if not forwards:
        raise InvalidInput(
            f"Journal {str(path)!r} holds no forward walk to roll back.",
            hint="Give the --journal of the walk to roll back.",
        )
    header, rest = forwards[-1]
    forward = _forward_walk(plan, header, path, group)
    reached = max((s for s, _ in step_events(rest)), default=0)
    return rollback_walk(forward, reached, plan), reached


def _forward_walk(plan: Plan, header: JournalEntry, path: Path, group: str) -> Walk:
    """The walk a journal's `walk` line holds, once the plan and the group are those it was made of."""
    check_journal([header], path, group=group, plan_id=_plan_id(plan))
    if header.walk is None:
        raise InvalidInput(
            f"Journal {str(path)!r} does not hold its walk's steps.",
            hint="Give the journal `rollout run` wrote, unedited.",
        )
    return header.walk


def _plan_id(plan: Plan) -> str:
    from kafka_coop.rollout._walk import plan_id

    return plan_id(plan)


def resume_walk(
    runner: Runner,
    plan: Plan,
    journal_path: Path,
    entries: Sequence[JournalEntry],
    *,
    hook: str | None,
    on_progress: Callable[[Progress], None] | None = None,
) -> tuple[Walk, int]:
    """`rollout resume`: the journal's last walk, from its first step not finished."""
    walks = walks_of(entries)
    if not walks:
        raise InvalidInput(
            f"Journal {str(journal_path)!r} holds no walk.", hint="Start one with `kafka-coop rollout run`."
        )
    check_journal(entries, journal_path, group=runner.group, plan_id=_plan_id(plan))
    check_phases(plan)
    header, rest = walks[-1]
    walk = _forward_walk(plan, header, journal_path, runner.group)
    runner.members()  # an unreachable cluster is exit 3 here, before any step
    if any(e.kind == "done" for e in rest):
        raise InvalidInput(
            f"The walk in {str(journal_path)!r} is finished: there is nothing to resume.",
            hint="Start another with `kafka-coop rollout run` and a new --journal.",
        )
    refuse_missing_hook(walk, hook=hook)
    refuse_live_static_without_id(walk)
    runner.refuse_unprotected_control(walk)
    start, begun = resume_point(walk, step_events(rest))
    journal = JournalFile(journal_path)
    try:
        return walk, _execute(runner, walk, journal, start=start, begun=begun, on_progress=on_progress)
    finally:
        journal.close()


def _execute(
    runner: Runner,
    walk: Walk,
    journal: JournalFile,
    *,
    start: int,
    begun: StepEvent | None,
    on_progress: Callable[[Progress], None] | None,
) -> int:
    runner.walk = walk
    steps = {s.n: s for s in walk.steps}

    def record(step: int, event: StepEvent, detail: str | None) -> None:
        journal.append(
            JournalEntry(
                kind="step",
                plan_id=walk.plan_id,
                group=walk.group,
                mode=walk.mode,
                at_ms=now_ms(),
                step=step,
                event=event,
                members=steps[step].members,
                detail=detail,
            )
        )

    base = {"plan_id": walk.plan_id, "group": walk.group, "mode": walk.mode}
    try:
        taken = execute(
            walk,
            runner,
            record,
            start=start,
            begun=begun,
            on_progress=on_progress,
            resume_command=shlex.join(
                ["kafka-coop", "rollout", "resume", walk.group, "--journal", str(journal.path)]
            ),
        )
    except KafkaCoopError as exc:
        if exc.exit_code == 130:
            journal.append(JournalEntry(kind="stopped", at_ms=now_ms(), detail=exc.message, **base))
        raise
    journal.append(JournalEntry(kind="done", at_ms=now_ms(), **base))
    return taken

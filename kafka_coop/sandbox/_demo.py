"""The demo walk on a sandbox broker: a real fleet of CoopConsumer members, planned and gated like prod.

Steps: start an eager (range) fleet under continuous produce; rolling-bounce it once so the cost of
eager rebalancing is on the record; inspect the group and print the upgrade plan kafka-coop makes for
it; walk every phase behind the gate the plan printed; rolling-bounce again on the new protocol; plan
and walk the reverse downgrade. Every step is a named time window, so the pause of each one comes
from the members' own event streams (and `kafka-coop report` can recompute it from the files).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from kafka_coop._vocab import Direction
from kafka_coop.analytics import PhaseWindow, Summary, summarize
from kafka_coop.errors import KafkaCoopError
from kafka_coop.events import now_ms
from kafka_coop.inspection import GroupSnapshot, take_snapshot
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC, MANIFEST_TOPIC_CONFIG
from kafka_coop.rollout import GateCommand, Plan, PlanPhase, all_migrations, fleet_from_snapshot, make_plan
from kafka_coop.sandbox._members import MemberProcess, MemberProcesses, MemberSpec, read_events
from kafka_coop.sandbox._produce import SteadyProducer
from kafka_coop.sandbox._records import RecordAudit, audit_when_drained
from kafka_coop.sandbox._rollout import CommandRun, GateRun, PlanRunner

DEMO_TOPIC = "kafka-coop-demo"
DEMO_GROUP = "kafka-coop-demo"
DemoTarget = Literal["cooperative", "consumer"]
REVERSE: dict[str, tuple[Literal["eager", "classic"], str]] = {
    "cooperative": ("eager", "downgrade-plan --to eager"),
    "consumer": ("classic", "downgrade-plan --to classic"),
}

EventCallback = Callable[[dict[str, Any]], None]
CLEANUP_STOP_S = 15.0  # members get this long to close (dynamic ones leave the group) before SIGKILL
CLEANUP_TIMEOUT_S = 15.0


class DemoHooks(BaseModel):
    """What the caller wants to see as it happens (the CLI renders; tests may pass nothing)."""

    model_config = {"arbitrary_types_allowed": True}

    on_event: EventCallback | None = None
    on_step: Callable[[str, str], None] | None = None
    on_snapshot: Callable[[GroupSnapshot], None] | None = None
    on_plan: Callable[[Plan], None] | None = None
    on_phase: Callable[[PlanPhase], None] | None = None
    on_gate: Callable[[GateRun | CommandRun], None] | None = None
    on_member: Callable[[MemberProcess], None] | None = None
    on_note: Callable[[str], None] | None = None


class StepResult(BaseModel):
    name: str
    action: str
    started_ms: int
    ended_ms: int
    rebalances: int
    partitions_revoked: int
    partition_unavailable_ms: int
    pause_ms: int

    @property
    def duration_s(self) -> float:
        return (self.ended_ms - self.started_ms) / 1000.0


class DemoResult(BaseModel):
    bootstrap: str
    group: str
    topic: str
    members: int
    partitions: int
    target: DemoTarget
    plans: list[Plan]
    steps: list[StepResult]
    records: RecordAudit
    workdir: str
    event_files: list[str]
    phases_file: str


class EventTail:
    """Reads new event lines from every member's file; the demo prints them as they happen."""

    def __init__(self, paths: Callable[[], Iterable[Path]], callback: EventCallback) -> None:
        self._paths = paths
        self._callback = callback
        self._offsets: dict[Path, int] = {}

    def __call__(self, *_: object) -> None:
        for path in self._paths():
            events = read_events(path)
            for event in events[self._offsets.get(path, 0) :]:
                self._callback(event)
            self._offsets[path] = len(events)


def step_results(windows: list[tuple[PhaseWindow, str]], summary: Summary) -> list[StepResult]:
    by_name = {p.name: p for p in summary.phases}
    out = []
    for window, action in windows:
        stat = by_name[window.name]
        out.append(
            StepResult(
                name=window.name,
                action=action,
                started_ms=window.start_ms,
                ended_ms=window.end_ms,
                rebalances=stat.rebalances,
                partitions_revoked=stat.revoked_partitions,
                partition_unavailable_ms=stat.partition_unavailable_ms,
                pause_ms=stat.pause_ms,
            )
        )
    return out


def run_demo(
    bootstrap: str,
    workdir: Path,
    *,
    members: int = 3,
    partitions: int = 6,
    rate: float = 100.0,
    target: DemoTarget = "cooperative",
    hooks: DemoHooks | None = None,
    command_config: Path | None = None,
) -> DemoResult:
    """`command_config`: a secured cluster's client properties; members, gates, the producer and every
    look at the group use them (the demo's topic and group are `kafka-coop-demo-*`)."""
    hooks = hooks or DemoHooks()
    group = f"{DEMO_GROUP}-{int(time.time())}"
    topic = f"{DEMO_TOPIC}-{int(time.time())}"
    # a cluster that refuses the first connection or login is said at once (a ready sandbox or the user's)
    processes = MemberProcesses(bootstrap, workdir, command_config=command_config, wait_for_brokers=False)
    made: list[str] = []  # the topics the demo created (its own, the manifest topic), removed at the end
    try:
        return _walk(
            processes, made, bootstrap, workdir, group, topic, members, partitions, rate, target, hooks
        )
    finally:
        for note in _remove_what_it_made(processes, group, made):
            if hooks.on_note is not None:
                hooks.on_note(note)


def _remove_what_it_made(processes: MemberProcesses, group: str, topics: list[str]) -> list[str]:
    """However the demo ends (done, failed, Ctrl-C): its members stop (SIGTERM, so dynamic members
    leave), the static ones are removed (KIP-345, they do not leave on close), then its group and the
    topics it created are deleted. Returns what could not be removed, one sentence each."""
    from kafka_coop.membership import LeaveGroupClient

    processes.stop_all(timeout_s=CLEANUP_STOP_S)
    notes: list[str] = []
    admin = processes.admin
    try:
        static = admin.describe_group(group, timeout_s=CLEANUP_TIMEOUT_S).instance_ids
        if static:
            client = LeaveGroupClient(processes.bootstrap, processes.conf, CLEANUP_TIMEOUT_S)
            try:
                client.remove(group, static)
            finally:
                client.close()
        why = admin.delete_group(group, timeout_s=CLEANUP_TIMEOUT_S)
        if why is not None:
            notes.append(f"demo group {group} was not deleted ({why}).")
        for topic in topics:
            why = admin.delete_topic(topic, timeout_s=CLEANUP_TIMEOUT_S)
            if why is not None:
                notes.append(f"demo topic {topic} was not deleted ({why}).")
    except KafkaCoopError as exc:
        what = f"group {group} and topics {', '.join(topics)} were" if topics else f"group {group} was"
        notes.append(f"the demo's {what} not removed: {exc.message}")
    return notes


def _walk(
    processes: MemberProcesses,
    made: list[str],
    bootstrap: str,
    workdir: Path,
    group: str,
    topic: str,
    members: int,
    partitions: int,
    rate: float,
    target: DemoTarget,
    hooks: DemoHooks,
) -> DemoResult:
    command_config = processes.command_config
    if processes.admin.create_topic(topic, partitions):
        made.append(topic)
    processes.admin.ensure_topic(topic, partitions)  # waits until its partitions have leaders
    # the manifest topic (what `kafka-coop manifest-topic` makes): one the cluster had is kept, one the
    # demo made is removed with its own topic, so the demo leaves nothing behind
    if processes.admin.create_topic(DEFAULT_MANIFEST_TOPIC, 1, config=MANIFEST_TOPIC_CONFIG):
        made.append(DEFAULT_MANIFEST_TOPIC)
    processes.admin.ensure_topic(DEFAULT_MANIFEST_TOPIC, 1, config=MANIFEST_TOPIC_CONFIG)
    tail = EventTail(
        lambda: [m.events_path for m in processes.members.values()], hooks.on_event or (lambda _: None)
    )
    windows: list[tuple[PhaseWindow, str]] = []
    plans: list[Plan] = []
    migrations = [(spec.name, spec) for spec in all_migrations()]

    def say(name: str, text: str) -> None:
        if hooks.on_step is not None:
            hooks.on_step(name, text)

    def window(name: str, action: str, since: int) -> None:
        tail()
        windows.append((PhaseWindow(name=name, start_ms=since, end_ms=now_ms()), action))

    def on_member(member: MemberProcess) -> None:
        tail()
        if hooks.on_member is not None:
            hooks.on_member(member)

    def plan(direction: Direction, to: Any) -> Plan:
        snap = take_snapshot(
            processes.admin, group, conf=processes.conf, manifests_topic=DEFAULT_MANIFEST_TOPIC, with_lag=True
        )
        if hooks.on_snapshot is not None:
            hooks.on_snapshot(snap)
        made = make_plan(
            fleet_from_snapshot(snap),
            direction,
            to,
            migrations,
            gate=GateCommand(
                bootstrap=bootstrap,
                command_config=str(command_config) if command_config is not None else None,
                timeout_s=120,
            ),
        )
        if hooks.on_plan is not None:
            hooks.on_plan(made)
        plans.append(made)
        return made

    def walk(made: Plan, prefix: str) -> None:
        runner = PlanRunner(
            processes, made, on_phase=hooks.on_phase, on_member=on_member, on_gate=hooks.on_gate
        )
        for phase in made.phases:
            if phase.status == "done":
                continue
            since = now_ms()
            runner.run_phase(phase)
            window(f"{prefix}-{phase.n}", f"{made.migration} phase {phase.n}: {phase.action}", since)
        if made.final_gate is not None:
            runner.gate(made.final_gate_spec)

    producer = SteadyProducer(bootstrap, topic, partitions, rate=rate, conf=processes.conf).start()
    try:
        since = now_ms()
        say("start", f"Starting {members} eager (range) CoopConsumer members under {rate:.0f} records/s")
        started = processes.add_many(
            MemberSpec(
                name=f"member-{i}",
                kind="python",
                group=group,
                topics=(topic,),
                assignors=("range",),
                record_log=True,
            )
            for i in range(members)
        )
        processes.wait_stable(group, joined=started, on_poll=tail)
        window("start", "start all (eager)", since)

        since = now_ms()
        say("eager-bounce", "Rolling bounce under eager rebalancing: every restart stops every member")
        processes.rolling_bounce(group, on_member=on_member)
        window("eager-bounce", "rolling bounce (eager)", since)

        say("upgrade-plan", f"kafka-coop upgrade-plan {group} --to {target}")
        walk(plan("upgrade", target), "upgrade")

        since = now_ms()
        say("new-bounce", f"Rolling bounce on the new protocol ({target})")
        processes.rolling_bounce(group, on_member=on_member)
        window(f"{target}-bounce", f"rolling bounce ({target})", since)

        back, label = REVERSE[target]
        say("downgrade-plan", f"kafka-coop {label}: the way back, gated the same way")
        walk(plan("downgrade", back), "downgrade")
        producer.stop()
        records = audit_when_drained(
            topic, producer.acked, lambda: [m.records_path for m in processes.members.values()]
        )
        processes.stop_all()  # every member closes (its last events written) before they are read
    finally:
        producer.stop()
    tail()
    events = [e for m in processes.members.values() for e in m.events()]
    summary = summarize(events, phases=[w for w, _ in windows])
    phases_file = workdir / "phases.json"
    phases_file.write_text(json.dumps([w.model_dump() for w, _ in windows], indent=2))
    return DemoResult(
        bootstrap=bootstrap,
        group=group,
        topic=topic,
        members=members,
        partitions=partitions,
        target=target,
        plans=plans,
        steps=step_results(windows, summary),
        records=records,
        workdir=str(workdir),
        event_files=[str(m.events_path) for m in processes.members.values()],
        phases_file=str(phases_file),
    )

"""The demo walk on a sandbox broker: a real group of CoopConsumer members rebalancing under load.

Phases: start an eager fleet, rolling-bounce it (every bounce stops the whole group), cut over to
cooperative-sticky with static ids (librdkafka has no live two-bounce path: stop all, start all),
then rolling-bounce again. Each phase's cost comes from the members' own event streams.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kafka_coop.analytics import unavailability, unavailable_ms
from kafka_coop.events import now_ms
from kafka_coop.sandbox import Fleet, MemberSpec, SteadyProducer, read_events

DEMO_TOPIC = "kafka-coop-demo"
DEMO_GROUP = "kafka-coop-demo"

EventCallback = Callable[[dict[str, Any]], None]
PhaseCallback = Callable[[str, str], None]


class PhaseResult(BaseModel):
    name: str
    action: str
    started_ms: int
    ended_ms: int
    rebalance_events: int
    partitions_revoked: int
    partition_unavailable_ms: int

    @property
    def duration_s(self) -> float:
        return (self.ended_ms - self.started_ms) / 1000.0


class DemoResult(BaseModel):
    bootstrap: str
    group: str
    topic: str
    members: int
    partitions: int
    produced: int
    phases: list[PhaseResult]


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


def _phase(name: str, action: str, since: int, events: list[dict[str, Any]]) -> PhaseResult:
    ended = now_ms()
    window = [e for e in events if since <= e["ts_ms"] <= ended]
    intervals = unavailability(events)
    return PhaseResult(
        name=name,
        action=action,
        started_ms=since,
        ended_ms=ended,
        rebalance_events=sum(1 for e in window if e["kind"] in ("assigned", "revoked", "lost")),
        partitions_revoked=sum(len(e["partitions"]) for e in window if e["kind"] in ("revoked", "lost")),
        partition_unavailable_ms=unavailable_ms(intervals, since_ms=since, until_ms=ended),
    )


def run_demo(
    bootstrap: str,
    workdir: Path,
    *,
    members: int = 3,
    partitions: int = 6,
    rate: float = 100.0,
    on_event: EventCallback | None = None,
    on_phase: PhaseCallback | None = None,
) -> DemoResult:
    group = f"{DEMO_GROUP}-{int(time.time())}"
    fleet = Fleet(bootstrap, workdir)
    fleet.admin.ensure_topic(DEMO_TOPIC, partitions)
    tail = EventTail(lambda: [m.events_path for m in fleet.members.values()], on_event or (lambda _: None))
    say: PhaseCallback = on_phase or (lambda _name, _text: None)
    phases: list[PhaseResult] = []

    def all_events() -> list[dict[str, Any]]:
        return [e for m in fleet.members.values() for e in m.events()]

    producer = SteadyProducer(bootstrap, DEMO_TOPIC, partitions, rate=rate).start()
    with fleet:
        since = now_ms()
        say("start", f"Starting {members} eager (range) members")
        started = fleet.add_many(
            MemberSpec(
                name=f"member-{i}", kind="python", group=group, topics=(DEMO_TOPIC,), assignors=("range",)
            )
            for i in range(members)
        )
        fleet.wait_stable(group, joined=started, on_poll=tail)
        tail()
        phases.append(_phase("start", "start all (eager)", since, all_events()))

        since = now_ms()
        say("eager-bounce", "Rolling bounce under eager rebalancing: every restart stops every member")
        fleet.rolling_bounce(group, on_member=tail)
        tail()
        phases.append(_phase("eager-bounce", "rolling bounce", since, all_events()))

        since = now_ms()
        say("cutover", "Cutover to cooperative-sticky with static ids: stop all, start all")
        fleet.stop_all()
        for i, member in enumerate(fleet.group_members(group)):
            member.spec = member.spec.replace(assignors=("cooperative-sticky",), instance_id=f"demo-{i}")
        for member in fleet.group_members(group):
            member.start()
        fleet.wait_stable(group, joined=fleet.group_members(group), on_poll=tail)
        tail()
        phases.append(_phase("cutover", "stop all, start all (cooperative, static)", since, all_events()))

        since = now_ms()
        say("cooperative-bounce", "Rolling bounce under cooperative-sticky with static membership")
        fleet.rolling_bounce(group, on_member=tail)
        tail()
        phases.append(_phase("cooperative-bounce", "rolling bounce", since, all_events()))
    produced = producer.stop()
    tail()
    return DemoResult(
        bootstrap=bootstrap,
        group=group,
        topic=DEMO_TOPIC,
        members=members,
        partitions=partitions,
        produced=produced,
        phases=phases,
    )

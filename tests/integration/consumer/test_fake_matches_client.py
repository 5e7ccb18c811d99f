"""`kafka_coop.testing` shows a service what the real client shows it (docs/consumer.md "Testing").

One program per protocol: member A joins a topic of four partitions, member B joins, B leaves, A
closes. It runs on the sandbox broker and on `FakeGroup` (driven with what the broker decided: A's
share while B was in), and A's events (kind and partitions) and legacy hook calls must be the same
sequence on both, including the empty assignments librdkafka hands out.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer

from kafka_coop import CoopConsumer, RebalanceEvent
from kafka_coop.testing import FakeGroup

PARTITIONS = 4
SETTLE_S = 1.5  # A polls on after each change: a callback served late is in the sequence too
PROTOCOLS: dict[str, dict[str, str]] = {
    "eager": {},
    "cooperative": {"partition.assignment.strategy": "cooperative-sticky"},
    "consumer": {"group.protocol": "consumer"},
}
CLASSIC_TIMEOUTS = {"session.timeout.ms": "6000", "heartbeat.interval.ms": "500"}

Step = tuple[str, tuple[tuple[str, int], ...]]


class Recorder:
    """A's events and its legacy hooks' calls, as one sequence each."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.hooks: list[Step] = []

    def emit(self, event: RebalanceEvent) -> None:
        self.steps.append((event.kind, event.partitions))

    def mark(self) -> None:
        """The end of a phase of the program: what came before it belongs to that phase."""
        self.steps.append(("--", ()))
        self.hooks.append(("--", ()))

    def on_assign(self, _consumer: Any, partitions: list[Any]) -> None:
        self.hooks.append(("on_assign", tuple(sorted((tp.topic, tp.partition) for tp in partitions))))

    def on_revoke(self, _consumer: Any, partitions: list[Any]) -> None:
        self.hooks.append(("on_revoke", tuple(sorted((tp.topic, tp.partition) for tp in partitions))))


def _settle(consumer: CoopConsumer, until: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 60
    while not until():
        assert time.monotonic() < deadline, "the group did not settle"
        consumer.poll(0.1)
    end = time.monotonic() + SETTLE_S
    while time.monotonic() < end:
        consumer.poll(0.1)


def _on_broker(
    bootstrap: str, topic: str, group: str, protocol: str
) -> tuple[Recorder, set[tuple[str, int]]]:
    conf = {"bootstrap.servers": bootstrap, "group.id": group, **PROTOCOLS[protocol]}
    if protocol != "consumer":
        conf.update(CLASSIC_TIMEOUTS)
    rec = Recorder()
    with CoopConsumer(conf, events=rec.emit, handle_signals=False) as a:
        a.subscribe([topic], on_assign=rec.on_assign, on_revoke=rec.on_revoke)
        _settle(a, lambda: len(a.owned) == PARTITIONS)
        rec.mark()
        b = Consumer(conf)
        b.subscribe([topic])
        owned_b: list[int] = []
        stop = threading.Event()

        def run_b() -> None:
            while not stop.is_set():
                b.poll(0.1)
                owned_b[:] = [len(b.assignment())]

        thread = threading.Thread(target=run_b, daemon=True)
        thread.start()
        _settle(a, lambda: len(a.owned) == PARTITIONS // 2 and owned_b == [PARTITIONS // 2])
        share = set(a.owned)
        rec.mark()
        stop.set()
        thread.join(30)
        b.close()
        _settle(a, lambda: len(a.owned) == PARTITIONS)
        rec.mark()
    return rec, share


def _on_fake(topic: str, protocol: str, share: set[tuple[str, int]]) -> Recorder:
    conf = {"bootstrap.servers": "unused:9092", "group.id": "g", **PROTOCOLS[protocol]}
    group, rec = FakeGroup(), Recorder()
    every = [(topic, p) for p in range(PARTITIONS)]
    with CoopConsumer(conf, client=group.client, events=rec.emit, handle_signals=False) as a:
        a.subscribe([topic], on_assign=rec.on_assign, on_revoke=rec.on_revoke)
        for owned in (every, sorted(share), every):
            group.rebalance_to(owned)
            for _ in range(3):
                a.poll(0)
            rec.mark()
    return rec


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_the_fake_gives_a_service_the_events_and_hook_calls_the_real_client_gives(
    protocol: str, bootstrap: str, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    topic = topic_factory(PARTITIONS)
    real, share = _on_broker(bootstrap, topic, unique("fake-vs-real"), protocol)
    fake = _on_fake(topic, protocol, share)
    print(protocol, real.steps, real.hooks)
    assert fake.steps == real.steps
    assert fake.hooks == real.hooks


def _commit_with_nothing_stored(client: Any, assign: Callable[[], None]) -> list[Any]:
    """What an asynchronous `commit()` with nothing stored gives: its return, then the callback's."""
    seen: list[Any] = []
    assign()
    deadline = time.monotonic() + 30
    while not client.assignment():
        assert time.monotonic() < deadline, "never assigned"
        client.poll(0.1)
    try:
        seen.append(("returned", client.commit(asynchronous=True)))
    except Exception as exc:
        seen.append(("raised", exc.args[0].code()))
    end = time.monotonic() + 1.0
    while time.monotonic() < end and len(seen) < 2:
        client.poll(0.1)
    client.close()
    return seen


def test_an_asynchronous_commit_with_nothing_stored_reports_no_offset_through_on_commit_as_the_client_does(
    bootstrap: str, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    topic = topic_factory(1)
    outcomes: list[list[Any]] = []
    for make in ("real", "fake"):
        callbacks: list[Any] = []

        def on_commit(err: Any, partitions: list[Any], into: list[Any] = callbacks) -> None:
            into.append(("on_commit", None if err is None else err.code(), len(partitions)))

        conf = {"bootstrap.servers": bootstrap, "group.id": unique("nothing"), "on_commit": on_commit}
        if make == "real":
            client: Any = Consumer(conf)
            seen = _commit_with_nothing_stored(client, lambda c=client: c.subscribe([topic]))
        else:
            group = FakeGroup()
            client = group.client(conf)
            client.subscribe([topic])
            seen = _commit_with_nothing_stored(client, lambda g=group: g.assign([(topic, 0)]))
        outcomes.append(seen + callbacks)
    real, fake = outcomes
    print("real", real)
    assert fake == real

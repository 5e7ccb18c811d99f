"""`kafka_coop.testing` held to the real client: one program's rebalance events on the broker and on
the fake, per protocol. The program: subscribe, a second member joins, it leaves, close. The fake is
driven through the same ownership the broker gave (`FakeGroup.rebalance_to`), so any difference in
the event sequence is the fake's. Each phase ends with the group settled (both members hold their
share, then a second of polling), as tests/integration/consumer/test_fake_matches_client.py does: a
phase cut short merges cooperative-sticky's two rounds on the broker (one `assigned` event fewer) while
the fake, told only the ownership, still serves both."""

from __future__ import annotations

import time
from typing import Any

from kafka_coop import CoopConsumer
from kafka_coop.events import RebalanceEvent
from kafka_coop.testing import FakeGroup
from tests.differential.program import PARTITIONS, Program
from tests.differential.runner import SecondMember

Sequence = list[tuple[str, tuple[int, ...]]]  # (event kind, its partitions)


def _program(protocol: str) -> Program:
    return Program(protocol, "sync", True, True, "mark_done", (("join",), ("leave",), ("close",)))


def _conf(protocol: str, bootstrap: str, group: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        **_program(protocol).conf(),
    }


def _seq(events: list[RebalanceEvent]) -> Sequence:
    return [
        (e.kind, tuple(sorted(p for _, p in e.partitions)))
        for e in events
        if e.kind in ("assigned", "revoked", "lost", "closed")
    ]


SETTLE_S = 1.0  # polls on after the group settled: a callback librdkafka serves late is in the sequence


def _poll_until(
    consumer: CoopConsumer, owned: int, second: SecondMember | None = None, timeout_s: float = 30.0
) -> tuple[int, ...]:
    """Polls until the member owns `owned` partitions and the second member the rest, then a little
    longer. A phase must end with the group settled: cooperative-sticky's revoking round is followed
    by a round that assigns the revoked partition to the other member (and an empty one to this);
    leaving before it, the rounds merge and an `assigned` event is missing."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        consumer.poll(0.1)
        if len(consumer.owned) == owned and (second is None or second.owned == PARTITIONS - owned):
            break
    settle = time.monotonic() + SETTLE_S
    while time.monotonic() < settle:
        consumer.poll(0.1)
    return tuple(sorted(p for _, p in consumer.owned))


def on_broker(
    protocol: str, bootstrap: str, topic: str, group: str
) -> tuple[Sequence, list[tuple[int, ...]]]:
    """The events of the program on the real broker, and the ownership after each of its phases."""
    events: list[RebalanceEvent] = []
    consumer = CoopConsumer(_conf(protocol, bootstrap, group), events=events.append)
    consumer.subscribe([topic])
    owned = [_poll_until(consumer, PARTITIONS)]
    second = SecondMember(bootstrap, group, topic, _program(protocol))
    owned.append(_poll_until(consumer, PARTITIONS - 1, second))
    second.leave()
    owned.append(_poll_until(consumer, PARTITIONS))
    second.join()
    consumer.close()
    return _seq(events), owned


def on_fake(protocol: str, topic: str, owned: list[tuple[int, ...]]) -> Sequence:
    """The same program on `kafka_coop.testing`, the group moving through the broker's ownership."""
    events: list[RebalanceEvent] = []
    group = FakeGroup()
    conf = _conf(protocol, "unused:9092", "g")
    consumer = CoopConsumer(conf, client=group.client, events=events.append)
    consumer.subscribe([topic])
    for p in range(PARTITIONS):
        group.produce(topic, p, b"a")
    for step in owned:
        group.rebalance_to([(topic, p) for p in step])
        for _ in range(3):
            consumer.poll(0)
    consumer.close()
    return _seq(events)


def differences(real: Sequence, fake: Sequence) -> list[str]:
    """Where the fake's sequence departs from the real one ([] when they agree)."""
    if real == fake:
        return []
    return [f"broker: {real}", f"fake:   {fake}"]

"""`kafka_coop.testing` held to the real client: one program's rebalance events on the broker and on
the fake, per protocol. The program: subscribe, a second member joins, it leaves, close. The fake is
driven through the same ownership the broker gave (`FakeGroup.rebalance_to`), so any difference in
the event sequence is the fake's. Each phase ends with the group settled (both members hold their
share, then a second of polling), as tests/integration/consumer/test_fake_matches_client.py does: a
phase cut short merges cooperative-sticky's two rounds on the broker (one `assigned` event fewer) while
the fake, told only the ownership, still serves both."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

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


# --- a rebalance served in the middle of one consume(n) -------------------------------------------
BATCH_WAIT_S = 4.0  # the one consume() call; the second member starts JOIN_AFTER_S into it
JOIN_AFTER_S = 1.0
BEFORE_MARGIN_S = 0.5  # a record produced this long before the callback was fetched before it


@dataclass(frozen=True)
class BatchShape:
    """What one `consume(n)` call showed across a cooperative rebalance that took one partition."""

    callback_inside: bool  # the revoke callback ran during the call
    kept_before: bool  # the batch holds records of the kept partition from before the callback
    kept_after: bool  # ... and from after it
    revoked_in_batch: bool  # the batch holds records of the revoked partition


def _cooperative_conf(bootstrap: str, group: str) -> dict[str, Any]:
    return {**_conf("cooperative-sticky", bootstrap, group), "enable.auto.commit": "false"}


def batch_on_broker(bootstrap: str, topic: str, group: str) -> BatchShape:
    """The real client: a member owning both partitions, records trickling into both, calls
    consume(n) once while a second member joins; which records came before the revoke callback is
    read from their timestamps (librdkafka moves the application position only when the call
    returns)."""
    consumer = Consumer(_cooperative_conf(bootstrap, group))
    revoked: list[tuple[float, tuple[int, ...]]] = []
    consumer.subscribe(
        [topic], on_revoke=lambda _c, ps: revoked.append((time.time(), tuple(tp.partition for tp in ps)))
    )
    stop = threading.Event()
    second: list[SecondMember] = []
    try:
        end = time.monotonic() + 30
        while len(consumer.assignment()) < PARTITIONS and time.monotonic() < end:
            consumer.consume(100, 0.2)
        trickle = threading.Thread(target=_trickle, args=(bootstrap, topic, stop), daemon=True)
        trickle.start()
        consumer.consume(100_000, 0.5)  # what was there before
        joiner = threading.Timer(
            JOIN_AFTER_S,
            lambda: second.append(SecondMember(bootstrap, group, topic, _program("cooperative-sticky"))),
        )
        joiner.start()
        started = time.time()
        batch = consumer.consume(100_000, BATCH_WAIT_S)
        joiner.join()
        inside = [(t, ps) for t, ps in revoked if t >= started]
        if not inside:
            return BatchShape(False, False, False, False)
        at, gone = inside[0]
        records = [m for m in batch if m.error() is None]
        kept = [m for m in records if m.partition() not in gone]
        return BatchShape(
            callback_inside=True,
            kept_before=any(m.timestamp()[1] / 1000 < at - BEFORE_MARGIN_S for m in kept),
            kept_after=any(m.timestamp()[1] / 1000 > at for m in kept),
            revoked_in_batch=any(m.partition() in gone for m in records),
        )
    finally:
        stop.set()
        for member in second:
            member.join()
        consumer.close()


def _trickle(bootstrap: str, topic: str, stop: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": "0"})
    while not stop.is_set():
        for p in range(PARTITIONS):
            producer.produce(topic, b"t", partition=p)
        producer.flush(1)
        time.sleep(0.02)
    producer.flush(5)


def batch_on_fake(topic: str) -> BatchShape:
    """The same on `kafka_coop.testing`'s client: ten records in each partition, the revoke queued
    behind five of them, and records produced from inside the callback (the trickle goes on)."""
    group = FakeGroup()
    client = group.client(_cooperative_conf("unused:9092", "g"))
    gone: list[int] = []
    produced_after: set[tuple[int, int]] = set()

    def on_revoke(_c: Any, partitions: list[TopicPartition]) -> None:
        if gone:
            return  # close's revoke
        gone.extend(tp.partition for tp in partitions)
        for p in range(PARTITIONS):
            produced_after.update((p, o) for o in group.produce(topic, p, b"t"))

    client.subscribe([topic], on_revoke=on_revoke)
    for p in range(PARTITIONS):
        group.produce(topic, p, *[b"r"] * 10)
    group.rebalance_to([(topic, p) for p in range(PARTITIONS)])
    client.poll(0)  # the assignment, and record 0 of partition 0
    group.rebalance_to([(topic, 1)], after_records=5)
    records = client.consume(100_000, BATCH_WAIT_S)
    client.close()
    if not gone:
        return BatchShape(False, False, False, False)
    kept = [m for m in records if m.partition() not in gone]
    return BatchShape(
        callback_inside=True,
        kept_before=any((m.partition(), m.offset()) not in produced_after for m in kept),
        kept_after=any((m.partition(), m.offset()) in produced_after for m in kept),
        revoked_in_batch=any(m.partition() in gone for m in records),
    )

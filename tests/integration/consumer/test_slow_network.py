"""The consumer over a slow network to its coordinator, made by toxiproxy (issue 13).

STALE_MEMBER_EPOCH (suspect 5) on the real broker: a commit that carries an epoch the group has
already moved past is retried with the new one, not taken for an eviction.

How a real KIP-848 member gets there: the coordinator moves a member to a new epoch only in its answer to
that member's own heartbeat, and librdkafka adopts the epoch the moment it reads that answer
(rd_kafka_cgrp_handle_ConsumerGroupHeartbeat). So a commit carries a stale epoch only when it is sent after
the coordinator moved the member and before the answer arrived. toxiproxy widens that window honestly: the
answers to this member are delayed by a few seconds on the way back (its requests are not), the other
member leaves, the coordinator gives this member the freed partitions under a new epoch in its next
heartbeat, and this member closes as soon as the broker reports that. The close's commit reaches the
coordinator with the old epoch. Only the classic protocol has no member epochs: this is KIP-848 only.

What the broker does with it depends on the release. Kafka 4.2 refuses it with STALE_MEMBER_EPOCH
(ConsumerGroup.validateOffsetCommit compares the member epoch alone); by the time that refusal arrives, the
heartbeat answer ahead of it on the same connection has brought the new epoch, and the retry commits. Kafka
4.4 (the suite's default broker) checks each partition's assignment epoch instead: a partition the member
already held at the epoch the commit carries is committed as sent, so there is nothing to retry. The retry
is checked on a 4.2 broker of this module's own; the 4.4 acceptance on the suite's broker.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import Producer

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopConsumer
from kafka_coop.sandbox import Sandbox, free_port
from testbed.faults import NetworkFaults, Toxiproxy
from tests.integration.consumer.members import ThreadMember, wait_for

RESPONSE_DELAY_MS = 3000
PARTITIONS = 4
MARKED_BELOW = 6
# The last release checked to refuse a commit by its member epoch alone (4.4.0 checks assignment epochs).
REFUSING_KAFKA = "4.2.0"


@dataclass(frozen=True)
class Broker:
    bootstrap: str
    admin: ClusterAdmin
    faults: NetworkFaults


@dataclass(frozen=True)
class Outcome:
    member: ThreadMember
    mine: set[tuple[str, int]]
    close_began: list[float]
    stale: list[logging.LogRecord]


@pytest.fixture(scope="module")
def refusing_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A proxied Kafka REFUSING_KAFKA broker with a toxiproxy of its own."""
    box = Sandbox(
        dir=tmp_path_factory.mktemp(f"kafka-{REFUSING_KAFKA}"),
        port=free_port(),
        proxied=True,
        kafka_version=REFUSING_KAFKA,
    )
    box.start()
    try:
        with Toxiproxy(tmp_path_factory.mktemp("toxiproxy-refusing")) as proxy:
            faults = NetworkFaults(box, proxy)
            try:
                yield Broker(box.bootstrap, box.admin(), faults)
            finally:
                faults.heal()
    finally:
        box.stop()


def delay_answers(faults: NetworkFaults, ms: int) -> None:
    """Broker -> client only: the member's requests arrive on time, their answers late."""
    for proxy in faults.proxies:
        faults.toxiproxy.add_toxic(proxy, "answers-late", "latency", "downstream", {"latency": ms})


def close_right_after_the_move(
    broker: Broker, topic: str, group: str, caplog: pytest.LogCaptureFixture
) -> Outcome:
    """Two members split the partitions; one marks records below MARKED_BELOW, stops polling, and closes
    the moment the broker reports it moved to the next epoch (its answers delayed RESPONSE_DELAY_MS)."""
    manual = {"auto_commit_interval_ms": "3600000"}
    faults = broker.faults
    # bootstrapped through toxiproxy: every connection of this member, the coordinator's included
    member = ThreadMember(
        faults.bootstrap, group, [topic], "consumer", "a", mark=lambda m: m.offset() < MARKED_BELOW, **manual
    )
    leaver: ThreadMember | None = None
    close_began: list[float] = []
    try:
        leaver = ThreadMember(broker.bootstrap, group, [topic], "consumer", "leaver", **manual)
        wait_for(
            lambda: bool(member.owned) and bool(leaver.owned) and len(member.owned) + len(leaver.owned) == 4,
            timeout_s=90,
            what="the two members to split the partitions",
        )
        mine = set(member.owned)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for p in range(PARTITIONS):
            for i in range(10):
                producer.produce(topic, f"{p}-{i}".encode(), partition=p)
        assert producer.flush(30) == 0
        wait_for(lambda: all(len(member.processed.get(p, [])) == 10 for p in mine), what="the records")
        member.stalled.set()
        wait_for(member.idle.is_set, what="the member to stop polling")
        delay_answers(faults, RESPONSE_DELAY_MS)
        leaver.stop()

        def moved() -> bool:
            live = broker.admin.describe_group(group)
            return any(m.client_id == "a" and len(m.assignment) == PARTITIONS for m in live.members)

        wait_for(moved, timeout_s=60, what="the coordinator to move the member to the new epoch")
        moved_at = time.monotonic()

        def close(consumer: CoopConsumer) -> None:
            close_began.append(time.monotonic() - moved_at)
            consumer.close()

        with caplog.at_level(logging.INFO, logger="kafka_coop.consumer"):
            member.call(close, timeout_s=120)
    finally:
        faults.heal()
        member.stop()
        if leaver is not None:
            leaver.stop()
    stale = [r for r in caplog.records if "STALE_MEMBER_EPOCH" in r.getMessage()]
    return Outcome(member, mine, close_began, stale)


def assert_committed_what_was_marked(broker: Broker, group: str, outcome: Outcome) -> None:
    committed = {(o.topic, o.partition): o.committed for o in broker.admin.offsets(group)}
    assert {p: committed.get(p) for p in outcome.mine} == {p: MARKED_BELOW for p in outcome.mine}, committed
    member = outcome.member
    assert "lost" not in member.kinds(), "a stale epoch is not an eviction"
    assert member.events[-1].kind == "closed" and member.events[-1].owned == ()
    assert not member.mismatches, member.mismatches


def test_a_commit_with_an_epoch_the_group_moved_past_is_retried_and_commits_what_was_marked(
    refusing_broker: Broker, unique: Callable[[str], str], caplog: pytest.LogCaptureFixture
) -> None:
    topic, group = unique("topic"), unique("stale-epoch")
    refusing_broker.admin.ensure_topic(topic, PARTITIONS)
    outcome = close_right_after_the_move(refusing_broker, topic, group, caplog)
    assert outcome.stale, (
        f"no stale-epoch commit (close began {outcome.close_began} s after the broker reported the move)"
    )
    assert_committed_what_was_marked(refusing_broker, group, outcome)


def test_kafka_4_4_commits_a_partition_held_at_the_old_epoch_as_sent(
    bootstrap: str,
    admin: ClusterAdmin,
    faults: NetworkFaults,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    broker = Broker(bootstrap, admin, faults)
    group = unique("stale-epoch")
    outcome = close_right_after_the_move(broker, topic_factory(PARTITIONS), group, caplog)
    # close commits first: it began well inside the delay of the heartbeat answer with the new epoch,
    # so its commit carried the old one
    assert outcome.close_began and outcome.close_began[0] < RESPONSE_DELAY_MS / 1000 - 1, outcome.close_began
    assert not outcome.stale, [r.getMessage() for r in outcome.stale]
    assert_committed_what_was_marked(broker, group, outcome)

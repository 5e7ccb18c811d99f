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
coordinator with the old epoch and is refused with STALE_MEMBER_EPOCH (ConsumerGroup.validateOffsetCommit);
by the time that refusal arrives, the heartbeat answer ahead of it on the same connection has brought the
new epoch, and the retry commits. Only the classic protocol has no member epochs: this is KIP-848 only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Producer

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopConsumer
from testbed.faults import NetworkFaults
from tests.integration.consumer.members import ThreadMember, wait_for

RESPONSE_DELAY_MS = 3000
PARTITIONS = 4
MARKED_BELOW = 6


def delay_answers(faults: NetworkFaults, ms: int) -> None:
    """Broker -> client only: the member's requests arrive on time, their answers late."""
    for proxy in faults.proxies:
        faults.toxiproxy.add_toxic(proxy, "answers-late", "latency", "downstream", {"latency": ms})


def test_a_commit_with_an_epoch_the_group_moved_past_is_retried_and_commits_what_was_marked(
    bootstrap: str,
    admin: ClusterAdmin,
    faults: NetworkFaults,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic = topic_factory(PARTITIONS)
    group = unique("stale-epoch")
    manual = {"auto_commit_interval_ms": "3600000"}
    # bootstrapped through toxiproxy: every connection of this member, the coordinator's included
    member = ThreadMember(
        faults.bootstrap, group, [topic], "consumer", "a", mark=lambda m: m.offset() < MARKED_BELOW, **manual
    )
    leaver: ThreadMember | None = None
    try:
        leaver = ThreadMember(bootstrap, group, [topic], "consumer", "leaver", **manual)
        wait_for(
            lambda: bool(member.owned) and bool(leaver.owned) and len(member.owned) + len(leaver.owned) == 4,
            timeout_s=90,
            what="the two members to split the partitions",
        )
        mine = set(member.owned)
        producer = Producer({"bootstrap.servers": bootstrap})
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
            live = admin.describe_group(group)
            return any(m.client_id == "a" and len(m.assignment) == PARTITIONS for m in live.members)

        wait_for(moved, timeout_s=60, what="the coordinator to move the member to the new epoch")
        moved_at = time.monotonic()
        close_began: list[float] = []

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
    assert stale, f"no stale-epoch commit (close began {close_began} s after the broker reported the move)"
    broker = {(o.topic, o.partition): o.committed for o in admin.offsets(group)}
    assert {p: broker.get(p) for p in mine} == {p: MARKED_BELOW for p in mine}, broker
    assert "lost" not in member.kinds(), "a stale epoch is not an eviction"
    assert member.events[-1].kind == "closed" and member.events[-1].owned == ()
    assert not member.mismatches, member.mismatches

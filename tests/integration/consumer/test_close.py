"""`close()` on the real broker: after an overrun, after a manual assign, against a silent coordinator.

Committed offsets are read back from the broker.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopConsumer
from kafka_coop.events import RebalanceEvent
from testbed.faults import NetworkFaults
from tests.integration.consumer.members import committed_offsets, consumer_conf, produce_keyed


def marking_conf(bootstrap: str, group: str, rebalance: str, **extra: Any) -> dict[str, Any]:
    return consumer_conf(bootstrap, group, rebalance, marks=True, **extra)


def consume_and_mark(
    consumer: CoopConsumer, count: int, timeout_s: float = 60.0, *, mark: bool = True
) -> int:
    """Poll `count` records, marking each done (`mark`), or not (drop-in: polled past is done)."""
    seen = 0
    deadline = time.monotonic() + timeout_s
    while seen < count and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None or msg.error():
            continue
        if mark:
            consumer.mark_done(msg)
        seen += 1
    return seen


# "explicit": marks, librdkafka's auto commit on; "librdkafka-defaults": auto store on too, no marks.
OFFSETS = ["explicit", "librdkafka-defaults"]


@pytest.mark.parametrize("offsets", OFFSETS)
@pytest.mark.parametrize("rebalance", ["eager-range", "cooperative-sticky"])
def test_close_after_a_static_members_poll_overrun_mid_rebalance_is_no_fatal_error_and_blames_no_twin(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
    offsets: str,
) -> None:
    """A static member is stuck past max.poll.interval.ms while another member joins; then it shuts
    down without polling again. librdkafka reset its member id: a commit with it would be fenced
    (FENCED_INSTANCE_ID, fatal), and no other member uses its id."""
    topic = topic_factory(2)
    group = unique(f"close-overrun-{rebalance}")
    produce_keyed(bootstrap, topic, partitions=2, per_partition=10)
    timing = {"session.timeout.ms": "6000", "max.poll.interval.ms": "7000", "heartbeat.interval.ms": "500"}
    events: list[RebalanceEvent] = []
    marks = offsets == "explicit"
    conf = consumer_conf(
        bootstrap, group, rebalance, marks=marks, **{"group.instance.id": f"{group}-a", **timing}
    )
    consumer = CoopConsumer(conf, events=events.append)
    consumer.subscribe([topic])
    joiner = None
    try:
        assert consume_and_mark(consumer, 20, mark=marks) == 20
        consumer.commit(offsets=[TopicPartition(topic, p, 4) for p in range(2)], asynchronous=False)
        stuck_at = time.monotonic()
        joiner = CoopConsumer(
            marking_conf(bootstrap, group, rebalance, **{"group.instance.id": f"{group}-b", **timing})
        )
        joiner.subscribe([topic])
        joiner.poll(0.5)
        time.sleep(max(0.0, 10.0 - (time.monotonic() - stuck_at)))  # stuck past the poll limit
    finally:
        consumer.close()
        if joiner is not None:
            joiner.close()
    assert consumer.failure is None, consumer.failure
    errors = " ".join(e.error or "" for e in events)
    assert "FENCED" not in errors and "another running member" not in errors, errors
    broker = committed_offsets(admin, group)
    assert all(broker[(topic, p)] in (4, 10) for p in range(2)), broker


@pytest.mark.parametrize("auto_commit", ["no-interval", "default"])
def test_close_after_a_manual_assign_commits_what_was_marked_done(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    auto_commit: str,
) -> None:
    """ "no-interval": only the close can commit; "default": auto commit on, as services run it."""
    topic = topic_factory(1)
    group = unique("close-assigned")
    produce_keyed(bootstrap, topic, partitions=1, per_partition=10)
    extra = {"auto.commit.interval.ms": "3600000"} if auto_commit == "no-interval" else {}
    conf = marking_conf(bootstrap, group, "eager-range", **extra)
    consumer = CoopConsumer(conf)
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        assert consume_and_mark(consumer, 6) == 6
    finally:
        consumer.close()
    assert committed_offsets(admin, group) == {(topic, 0): 6}


def test_close_with_a_timeout_returns_in_time_against_a_silent_coordinator_and_says_what_was_not_committed(
    faults: NetworkFaults,
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic = topic_factory(1)
    group = unique("close-silent")
    produce_keyed(bootstrap, topic, partitions=1, per_partition=10)
    events: list[RebalanceEvent] = []
    conf = marking_conf(faults.bootstrap, group, "cooperative-sticky", **{"socket.timeout.ms": "5000"})
    consumer = CoopConsumer(conf, events=events.append)
    consumer.subscribe([topic])
    try:
        assert consume_and_mark(consumer, 7) == 7
        faults.cut()
        started = time.monotonic()
        consumer.close(timeout=5.0)
        took = time.monotonic() - started
    finally:
        faults.heal()
    assert took < 8.0, f"close(timeout=5) took {took:.1f} s"
    closed = events[-1]
    assert closed.kind == "closed" and closed.owned == ()
    assert closed.error is not None and f"{topic}-0@7" in closed.error, closed.error

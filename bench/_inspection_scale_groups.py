"""Many real consumer groups, made cheaply: one short-lived *static* member per group.

Each group gets one librdkafka consumer with a `group.instance.id` that subscribes, receives its
assignment from a real rebalance, commits an offset on every partition it owns and closes. A static
member's close sends no LeaveGroup (KIP-345), so the group stays `Stable` with that member, its
subscription and assignment bytes and its committed offsets, until the session timeout expires: the
same thing `describe --all` sees of a long-running service, without a process per group. The groups
cycle through the classic assignors (eager range / roundrobin, cooperative-sticky), so "which groups
are still eager?" has a real answer.

Members join in waves of concurrent consumers polled from one thread (each consumer has its own
librdkafka threads; a wave bounds them).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

FLEET_PREFIX = "fleet-"
FLEET_ASSIGNORS: tuple[str, ...] = ("range", "roundrobin", "cooperative-sticky")
# The broker's group.max.session.timeout.ms defaults to 30 min: the members outlive any bench run.
MEMBER_SESSION_MS = 1_800_000
JOIN_TIMEOUT_S = 120.0


def fleet_group(i: int) -> str:
    return f"{FLEET_PREFIX}{i:04d}"


def create_static_groups(
    bootstrap: str,
    topic: str,
    count: int,
    *,
    assignors: Sequence[str] = FLEET_ASSIGNORS,
    wave: int = 40,
) -> float:
    """Make `count` Stable groups with one static member each; returns the seconds it took."""
    from confluent_kafka import Consumer, TopicPartition

    start = time.monotonic()
    for first in range(0, count, wave):
        consumers = {}
        for i in range(first, min(count, first + wave)):
            consumer = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": fleet_group(i),
                    "group.instance.id": f"{fleet_group(i)}-pod-0",
                    "client.id": f"svc-{i % 37}",
                    "partition.assignment.strategy": assignors[i % len(assignors)],
                    "session.timeout.ms": MEMBER_SESSION_MS,
                    "max.poll.interval.ms": MEMBER_SESSION_MS,
                    "enable.auto.commit": False,
                }
            )
            consumer.subscribe([topic])
            consumers[i] = consumer
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        waiting = dict(consumers)
        while waiting:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{len(waiting)} group members got no assignment in {JOIN_TIMEOUT_S:.0f} s"
                )
            for i, consumer in list(waiting.items()):
                consumer.poll(0.05)
                owned = consumer.assignment()
                if owned:
                    consumer.commit(
                        offsets=[TopicPartition(tp.topic, tp.partition, 0) for tp in owned],
                        asynchronous=False,
                    )
                    del waiting[i]
        for consumer in consumers.values():
            consumer.close()  # static member: no LeaveGroup, the group stays Stable
    return time.monotonic() - start

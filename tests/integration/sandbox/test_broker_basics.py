"""The sandbox broker behaves like the Kafka our users run, for both client families."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaException, Producer

from kafka_coop.admin import ClusterAdmin


def _consume_until(consumer: Consumer, count: int, timeout_s: float = 60.0) -> list[bytes]:
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(values) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            values.append(msg.value())
    return values


def test_confluent_kafka_round_trip_and_describe_sees_the_group(
    bootstrap: str, admin: ClusterAdmin, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    topic = topic_factory(3)
    group = unique("roundtrip")
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(30):
        producer.produce(topic, f"v{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        values = _consume_until(consumer, 30)
        assert sorted(values) == sorted(f"v{i}".encode() for i in range(30))
        described = admin.describe_group(group)
        assert described.state == "stable"
        assert described.group_type == "classic"
        assert len(described.members) == 1
        assert sorted(described.members[0].assignment) == [(topic, 0), (topic, 1), (topic, 2)]
    finally:
        consumer.close()


def test_librdkafka_refuses_a_mixed_eager_and_cooperative_assignor_list(bootstrap: str) -> None:
    """The fact the planner relies on: no KIP-429 two-bounce for confluent-kafka members."""
    with pytest.raises(KafkaException, match="different protocol types"):
        Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "never-joins",
                "partition.assignment.strategy": "range,cooperative-sticky",
            }
        )


def test_consumer_protocol_member_joins_a_group_of_type_consumer(
    bootstrap: str, admin: ClusterAdmin, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    topic = topic_factory(4)
    group = unique("kip848")
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )
    assigned: list[list[tuple[str, int]]] = []
    consumer.subscribe([topic], on_assign=lambda c, ps: assigned.append([(p.topic, p.partition) for p in ps]))
    try:
        deadline = time.monotonic() + 60
        while not assigned and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert sorted(p for batch in assigned for p in batch) == [(topic, p) for p in range(4)]
        described = admin.describe_group(group)
        assert described.group_type == "consumer"
        assert [m.assignment for m in described.members] == [tuple((topic, p) for p in range(4))]
    finally:
        consumer.close()

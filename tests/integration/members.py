"""Waiting for a condition in integration tests (the consumer's members: tests/integration/consumer)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError

from kafka_coop.consumer import CoopConsumer
from kafka_coop.coordinator import CoordinatorClient
from kafka_coop.errors import ConsumerFailed


def wait_for(condition: Callable[[], bool], timeout_s: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")


def wait_declared(
    describe: Callable[[], dict[str, Any] | None], client_ids: Iterable[str], timeout_s: float = 60.0
) -> None:
    """Until the members with these client ids show their manifests in `describe()` (describe -o json,
    or None while it fails). A member publishes its manifest a moment after its assignment, later on
    a busy machine; a plan made before then infers that member's family from the wire, where Java and
    franz-go look alike."""
    wanted = sorted(client_ids)

    def declared() -> bool:
        snapshot = describe()
        members = snapshot["members"] if snapshot else []
        return sorted(m["client_id"] for m in members if m["manifest"] is not None) == wanted

    wait_for(declared, timeout_s=timeout_s, what=f"the manifests of {', '.join(wanted)}")


def wait_converted(bootstrap: str, group: str, members: int, timeout_s: float = 60.0) -> None:
    """Until the coordinator runs `group` as a consumer group of `members` members (ConsumerGroupDescribe):
    the broker converts a classic group when its first consumer-protocol member joins."""
    with CoordinatorClient(bootstrap) as client:

        def converted() -> bool:
            described = client.describe(group).described
            return described is not None and len(described.members) == members

        wait_for(converted, timeout_s=timeout_s, what=f"{group} as a consumer group of {members} members")


def consumer_protocol_refusal(bootstrap: str, group: str, topic: str, **conf: str) -> KafkaError | None:
    """What the broker answers a librdkafka member joining `group` with group.protocol=consumer (`conf`:
    more settings, e.g. a group.instance.id): the first error its polls return within 20 s, or None."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer", **conf}
    )
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is not None:
                error: KafkaError = msg.error()
                return error
        return None
    finally:
        consumer.close()


def coop_consumer_refusal(bootstrap: str, group: str, topic: str) -> ConsumerFailed:
    """The error a kafka-coop consumer joining `group` with group.protocol=consumer raises when the broker
    will not convert the group (GROUP_ID_NOT_FOUND, fatal from librdkafka 2.15)."""
    consumer = CoopConsumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer"})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                consumer.poll(0.5)
            except ConsumerFailed as failed:
                return failed
        raise AssertionError(f"the consumer-protocol member of {group} was not refused within 20 s")
    finally:
        consumer.close()

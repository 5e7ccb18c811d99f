"""kafka_coop.testing, the test double users get: what its documentation promises, it does."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import KafkaError

from kafka_coop import CoopAIOConsumer, CoopConsumer
from kafka_coop.errors import InstanceIdConflict
from kafka_coop.sinks import MemorySink
from kafka_coop.testing import FakeGroup
from tests.unit.consumer.helpers import PROTOCOLS, conf_for


def test_the_documented_example_runs() -> None:
    revoked: list[list[tuple[str, int]]] = []
    group = FakeGroup()
    conf = {
        "bootstrap.servers": "unused:9092",
        "group.id": "orders",
        "partition.assignment.strategy": "cooperative-sticky",
        "auto.offset.reset": "earliest",
    }
    with CoopConsumer(conf, client=group.client, on_revoked=revoked.append) as consumer:
        consumer.subscribe(["orders"])
        group.produce("orders", 0, b"a", b"b", b"c")
        group.assign([("orders", 0)])
        first = consumer.poll(0)
        second = consumer.poll(0)
        assert first is not None and second is not None and (first.offset(), second.offset()) == (0, 1)
        group.revoke([("orders", 0)])
        consumer.poll(0)
    assert revoked == [[("orders", 0)]]
    assert group.committed() == {("orders", 0): 2}, "the revoke came in the poll after record 1"


@pytest.mark.parametrize(
    ("protocol", "expected"),
    [
        ("eager", ["assigned [0, 1]", "revoked [0, 1]", "assigned [1, 2]"]),
        # the revoking round ends with an empty assign, as librdkafka's (test_fake_matches_client.py)
        ("cooperative", ["assigned [0, 1]", "revoked [0]", "assigned []", "assigned [2]"]),
        ("consumer", ["assigned [0, 1]", "revoked [0]", "assigned [2]"]),
    ],
)
def test_a_rebalance_follows_each_protocols_callback_sequence(protocol: str, expected: list[str]) -> None:
    group = FakeGroup()
    sink = MemorySink()
    consumer = CoopConsumer(conf_for(protocol), client=group.client, events=sink)
    consumer.subscribe(["t"])
    group.rebalance_to([("t", 0), ("t", 1)])
    consumer.poll(0)
    group.rebalance_to([("t", 1), ("t", 2)])
    consumer.poll(0)
    seen = [
        f"{e.kind} {[p for _, p in e.partitions]}" for e in sink.events if e.kind in ("assigned", "revoked")
    ]
    assert seen == expected
    assert consumer.owned == (("t", 1), ("t", 2))
    consumer.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_fence_ends_the_consumer_with_the_typed_error(protocol: str) -> None:
    group = FakeGroup()
    consumer = CoopConsumer(conf_for(protocol, instance_id="svc-1"), client=group.client)
    consumer.subscribe(["t"])
    group.assign([("t", 0)])
    consumer.poll(0)
    group.fence(
        KafkaError.UNRELEASED_INSTANCE_ID if protocol == "consumer" else KafkaError.FENCED_INSTANCE_ID
    )
    with pytest.raises(InstanceIdConflict):
        consumer.poll(0)
    consumer.close()


def test_gaps_in_the_log_are_records_that_never_come() -> None:
    group = FakeGroup()
    consumer = CoopConsumer(conf_for(), client=group.client)
    consumer.subscribe(["t"])
    group.produce("t", 0, b"a", b"b")
    group.produce("t", 0, b"c", at=5)  # 2-4 compacted away
    group.assign([("t", 0)])
    got = [m.offset() for m in consumer.consume(10, 0)]
    consumer.close()
    assert got == [0, 1, 5] and group.committed() == {("t", 0): 6}


def test_it_serves_the_asyncio_consumer_too() -> None:
    async def scenario() -> dict[tuple[str, int], int]:
        group = FakeGroup()
        async with CoopAIOConsumer(conf_for(), client=group.client) as consumer:
            await consumer.subscribe(["t"])
            group.produce("t", 0, b"a", b"b")
            group.assign([("t", 0)])
            assert [m.offset() for m in await consumer.consume(10, 0)] == [0, 1]
        return group.committed()

    assert asyncio.run(scenario()) == {("t", 0): 2}


def test_using_the_group_before_a_consumer_is_one_sentence() -> None:
    with pytest.raises(RuntimeError, match=r"client=group\.client"):
        FakeGroup().assign([("t", 0)])


def test_a_rebalance_queued_behind_records_is_served_in_the_middle_of_a_consume_batch() -> None:
    """As librdkafka does (tests/differential/parity.py shows it on a broker): the batch holds the
    kept partition's records from before and after the revoke; the revoked one's are dropped, never
    handed out, so the revoke commits only what the application had before this call."""
    group = FakeGroup()
    revoked: list[object] = []
    consumer = CoopConsumer(conf_for("cooperative"), client=group.client, on_revoked=revoked.append)
    consumer.subscribe(["t"])
    for p in (0, 1):
        group.produce("t", p, *[b"r"] * 10)
    group.rebalance_to([("t", 0), ("t", 1)])
    first = consumer.poll(0)
    assert first is not None and (first.partition(), first.offset()) == (0, 0)
    group.rebalance_to([("t", 1)], after_records=5)
    batch = consumer.consume(100, 0)
    assert revoked, "the revoke was served inside consume()"
    assert [(m.partition(), m.offset()) for m in batch] == [(1, o) for o in range(10)]
    assert group.committed() == {("t", 0): 1}, "records 1-2 of partition 0 were dropped, never handed out"


def test_a_rebalance_queued_behind_records_is_served_first_by_a_poll() -> None:
    group = FakeGroup()
    consumer = CoopConsumer(conf_for("cooperative"), client=group.client)
    consumer.subscribe(["t"])
    group.produce("t", 0, b"a")
    group.rebalance_to([("t", 0)], after_records=3)
    msg = consumer.poll(0)
    assert msg is not None and msg.offset() == 0

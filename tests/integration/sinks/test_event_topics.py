"""Events and manifests on Kafka topics of the sandbox broker."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopConsumer
from kafka_coop.events import EventStamp
from kafka_coop.manifest import MANIFEST_TOPIC_CONFIG, parse_manifest
from kafka_coop.sinks import KafkaTopicSink
from tests.integration.members import wait_for
from tests.integration.topics import read_all


def test_kafka_topic_sink_delivers_every_event_in_order(
    bootstrap: str, topic_factory: Callable[[int], str]
) -> None:
    topic = topic_factory(1)
    stamp = EventStamp("g", "c", "pod-0", "eager")
    events = [
        stamp.make("assigned", member_id="m", partitions=[("t", i)], owned=(("t", i),), callback_ms=0.0)
        for i in range(20)
    ]
    sink = KafkaTopicSink(topic, {"bootstrap.servers": bootstrap})
    started = time.perf_counter()
    for event in events:
        sink.emit(event)
    emit_ms = (time.perf_counter() - started) * 1000 / len(events)
    sink.close()
    records = read_all(bootstrap, topic, 20)
    assert [v for _, v in records] == [e.model_dump_json().encode() for e in events]
    assert {k for k, _ in records} == {b"g/pod-0"}
    assert emit_ms < 5, "emit never waits on the broker"


def test_manifest_is_published_on_join_and_tombstoned_on_close(
    bootstrap: str, admin: ClusterAdmin, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    topic = topic_factory(2)
    manifests = unique("manifests")
    admin.ensure_topic(manifests, 1, config=MANIFEST_TOPIC_CONFIG)
    group = unique("declared")
    consumer = CoopConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.instance.id": "pod-7",
            "partition.assignment.strategy": "cooperative-sticky",
        },
        manifests=manifests,
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while not consumer.owned and time.monotonic() < deadline:
        consumer.poll(0.2)
    consumer.close()
    records = read_all(bootstrap, manifests, 2)
    key, value = records[0]
    manifest = parse_manifest(value)
    assert key == f"{group}/pod-7".encode()
    assert manifest is not None
    assert (manifest.rebalance_protocol, manifest.assignors, manifest.instance_id) == (
        "cooperative",
        ("cooperative-sticky",),
        "pod-7",
    )
    assert records[-1] == (key, None), "close publishes a tombstone"


def test_missing_manifest_topic_warns_once_and_consumption_goes_on(
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic = topic_factory(1)
    missing = unique("no-such-manifests")
    with caplog.at_level(logging.WARNING, logger="kafka_coop"):
        consumer = CoopConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": unique("nomanifest"),
                "partition.assignment.strategy": "cooperative-sticky",
            },
            manifests=missing,
        )
        consumer.subscribe([topic])
        wait_for(lambda: consumer.poll(0.1) is None and bool(consumer.owned), what="an assignment")
        consumer.close()
    warnings = [r for r in caplog.records if "manifests cannot be published" in r.getMessage()]
    assert len(warnings) == 1
    assert missing not in ClusterAdmin(bootstrap).client.list_topics(timeout=10).topics

"""One look at a live group (shell): admin reads, manifests, offsets, broker configs -> GroupSnapshot.

Everything that decides something lives in `_infer` (pure); this module only fetches and hands over.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kafka_coop.admin import ClusterAdmin, ListedGroup, LiveGroup
from kafka_coop.errors import ClusterUnavailable
from kafka_coop.events import now_ms
from kafka_coop.inspect._infer import MemberInput, broker_facts, infer_generation, infer_members
from kafka_coop.inspect._model import BrokerFacts, GroupSnapshot, PartitionLag
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC, Manifest, parse_manifest

MANIFEST_READ_TIMEOUT_S = 5.0


def read_manifests(
    bootstrap: str, conf: Mapping[str, str] | None = None, *, topic: str = DEFAULT_MANIFEST_TOPIC
) -> tuple[list[Manifest], str | None]:
    """The latest manifest per key (tombstones drop a key), read from the start to the high watermark.

    Returns (manifests, error); a missing topic or no ACL is an error string, never an exception,
    because inspection still works without manifests (it infers instead).
    """
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            **(conf or {}),
            "group.id": "kafka-coop-inspect",  # never joins or commits: partitions are assigned
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "allow.auto.create.topics": False,
            "logger": _null_logger(),
        }
    )
    try:
        meta = consumer.list_topics(timeout=MANIFEST_READ_TIMEOUT_S)
        info = meta.topics.get(topic)
        if info is None or info.error is not None:
            return [], f"manifest topic {topic} not found"
        parts = [TopicPartition(topic, p, 0) for p in info.partitions]
        remaining = set()
        for tp in parts:
            low, high = consumer.get_watermark_offsets(tp, timeout=MANIFEST_READ_TIMEOUT_S)
            if high > low:
                tp.offset = low
                remaining.add(tp.partition)
        if not remaining:
            return [], None
        consumer.assign([tp for tp in parts if tp.partition in remaining])
        latest: dict[str, Manifest | None] = {}
        deadline = time.monotonic() + MANIFEST_READ_TIMEOUT_S
        while remaining and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=1000, timeout=0.2):
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        remaining.discard(msg.partition())
                    continue
                key = (msg.key() or b"").decode(errors="replace")
                latest[key] = parse_manifest(msg.value())
        error = None if not remaining else f"manifest topic {topic} not read to its end in time"
        return [m for m in latest.values() if m is not None], error
    except KafkaException as exc:
        return [], f"manifest topic {topic} unreadable: {exc}"
    finally:
        consumer.close()


def _null_logger() -> Any:
    import logging

    logger = logging.getLogger("kafka_coop.inspect.librdkafka")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


def take_snapshot(
    admin: ClusterAdmin,
    group: str,
    *,
    conf: Mapping[str, str] | None = None,
    manifests_topic: str | None = DEFAULT_MANIFEST_TOPIC,
    with_lag: bool = True,
    with_broker: bool = True,
    timeout_s: float = 10.0,
) -> GroupSnapshot:
    """Everything one look at `group` tells; raises ClusterUnavailable if the cluster cannot be read."""
    live = admin.describe_group(group, timeout_s=timeout_s)
    exists = not (live.state == "dead" and not live.members)
    raw = admin.raw_group(group, timeout_s=timeout_s) if exists and live.type == "classic" else None
    raw_by_id = {m.member_id: m for m in raw.members} if raw is not None else {}
    inputs = [
        MemberInput(
            member_id=m.member_id,
            client_id=m.client_id,
            host=m.host,
            instance_id=m.instance_id,
            assignment=m.assignment,
            subscription=raw_by_id[m.member_id].subscription if m.member_id in raw_by_id else None,
            assignment_bytes=raw_by_id[m.member_id].assignment if m.member_id in raw_by_id else None,
        )
        for m in live.members
    ]
    manifests: list[Manifest] = []
    manifests_error = None
    if manifests_topic and exists:
        manifests, manifests_error = read_manifests(admin.bootstrap, conf, topic=manifests_topic)
    selected = live.assignor or (raw.protocol if raw is not None else "")
    members = infer_members(group, live.type, selected, inputs, manifests)
    notes = []
    if raw is None and live.type == "consumer":
        notes.append("consumer-protocol group: member protocol metadata is not visible; types are inferred")
    if live.state in ("preparing_rebalance", "completing_rebalance"):
        notes.append("a rebalance is in progress: member metadata may be from the previous generation")
    lag: tuple[PartitionLag, ...] = ()
    if with_lag and exists:
        lag = tuple(
            PartitionLag(
                topic=o.topic,
                partition=o.partition,
                committed=o.committed,
                end_offset=o.end if o.end is not None else -1,
                lag=(o.end - o.committed) if o.end is not None and o.committed is not None else None,
            )
            for o in admin.offsets(group, timeout_s=timeout_s)
        )
    broker = BrokerFacts()
    if with_broker:
        try:
            broker_id, configs = admin.broker_configs(timeout_s=timeout_s)
            broker = broker_facts(broker_id, configs)
        except ClusterUnavailable as exc:
            broker = BrokerFacts(configs_error=exc.message)
    return GroupSnapshot(
        group_id=group,
        taken_ms=now_ms(),
        exists=exists,
        type=live.type,
        state=live.state,
        protocol_type=raw.protocol_type if raw is not None else None,
        assignor=selected,
        coordinator=live.coordinator,
        generation=infer_generation(members),
        members=members,
        lag=lag,
        broker=broker,
        manifests_topic=manifests_topic,
        manifests_error=manifests_error,
        notes=tuple(notes),
    )


def list_groups(
    admin: ClusterAdmin, *, timeout_s: float = 10.0
) -> list[tuple[ListedGroup, LiveGroup | None]]:
    """Every group with its describe answer (one batched request), like `kafka-consumer-groups --list`."""
    listed = admin.list_groups(timeout_s=timeout_s)
    described = admin.describe_groups([g.group_id for g in listed if not g.is_simple], timeout_s=timeout_s)
    return [(g, described.get(g.group_id)) for g in listed]

"""Issue 13, suspect 8 on the real broker: `close()` while the manifest heartbeat runs, for both drivers.

The heartbeat thread builds each manifest from the client's member id (the sync driver calls
`memberid()` on the client). `close()` must stop that thread before it closes the client: otherwise a
heartbeat can call into a closed client, or publish a manifest *after* the tombstone, and a member that
has gone would look alive to inspection until the next restart. The heartbeat is made fast here (every
20 ms instead of 30 s) so that `close()` always lands while it runs.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopAIOConsumer, CoopConsumer, _setup
from kafka_coop.events import RebalanceEvent
from kafka_coop.manifest import MANIFEST_TOPIC_CONFIG, ManifestPublisher, parse_manifest
from testbed.rebalance_protocols import REBALANCE_CONF

HEARTBEAT_S = 0.02
BEATS_BEFORE_CLOSE = 25


class Beats:
    """Counts the heartbeat thread's publishes, and whether one ran after close began."""

    def __init__(self) -> None:
        self.count = 0
        self.closing = False
        self.after_close: list[str] = []

    def publisher(self) -> type[ManifestPublisher]:
        beats = self

        class FastPublisher(ManifestPublisher):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **{**kwargs, "heartbeat_s": HEARTBEAT_S})

            def publish_now(self) -> None:
                if threading.current_thread().name == "kafka-coop-manifest":
                    beats.count += 1
                    if beats.closing and self._stop.is_set():
                        beats.after_close.append("heartbeat after the publisher was stopped")
                super().publish_now()

        return FastPublisher


# The heartbeat does not depend on the protocol; one classic and one KIP-848 member, one per driver.
@pytest.mark.parametrize(("driver", "rebalance"), [("sync", "cooperative-sticky"), ("asyncio", "consumer")])
def test_close_while_the_manifest_heartbeat_runs_stops_it_first_and_the_tombstone_is_the_last_word(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
    driver: str,
    rebalance: str,
) -> None:
    topic = topic_factory(2)
    manifests = unique("close-manifests")
    admin.ensure_topic(manifests, 1, config=MANIFEST_TOPIC_CONFIG)
    group = unique(f"close-order-{driver}-{rebalance}")
    beats = Beats()
    monkeypatch.setattr(_setup, "ManifestPublisher", beats.publisher())
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.instance.id": "pod-0",
        "auto.offset.reset": "earliest",
        **REBALANCE_CONF[rebalance],
    }
    events: list[RebalanceEvent] = []
    member_ids: list[str] = []

    def serve_sync() -> None:
        consumer = CoopConsumer(conf, manifests=manifests, events=events.append)
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while (not consumer.owned or beats.count < BEATS_BEFORE_CLOSE) and time.monotonic() < deadline:
            consumer.poll(0.1)
        member_ids.append(str(consumer.memberid()))
        beats.closing = True
        consumer.close()

    async def serve_async() -> None:
        consumer = CoopAIOConsumer(conf, manifests=manifests, events=events.append)
        await consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while (not consumer.owned or beats.count < BEATS_BEFORE_CLOSE) and time.monotonic() < deadline:
            await consumer.consume(num_messages=10, timeout=0.1)
        member_ids.append(str(await consumer.memberid()))
        beats.closing = True
        await consumer.close()

    if driver == "sync":
        serve_sync()
    else:
        asyncio.run(asyncio.wait_for(serve_async(), 90))
    assert beats.count >= BEATS_BEFORE_CLOSE, "close came while the heartbeat was running"
    assert not beats.after_close, beats.after_close
    assert events[-1].kind == "closed" and events[-1].owned == ()
    assert "lost" not in [e.kind for e in events]
    records = read_to_end(bootstrap, manifests)
    key = f"{group}/pod-0".encode()
    assert records and all(k == key for k, _ in records)
    assert records[-1] == (key, None), "the tombstone is the last record: no heartbeat came after it"
    heartbeats = [parse_manifest(value) for _, value in records[:-1]]
    assert len(heartbeats) >= BEATS_BEFORE_CLOSE // 2 and None not in heartbeats, records[:3]
    assert all(m is not None and m.member_id == member_ids[0] for m in heartbeats), "the member's own id"


def read_to_end(bootstrap: str, topic: str) -> list[tuple[bytes, bytes | None]]:
    """Every record of the topic's one partition, up to its high watermark (written, flushed)."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.time_ns()}"})
    try:
        _, high = reader.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        reader.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out: list[tuple[bytes, bytes | None]] = []
        deadline = time.monotonic() + 60
        last = -1
        while last < high - 1 and time.monotonic() < deadline:
            msg = reader.poll(0.5)
            if msg is not None and not msg.error():
                out.append((msg.key(), msg.value()))
                last = msg.offset()
        assert last == high - 1, f"read up to offset {last} of {high}"
        return out
    finally:
        reader.close()

"""Reading the manifest topic (shell): the latest manifest each member published, read to the end."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC, Manifest, parse_manifest

MANIFEST_READ_TIMEOUT_S = 5.0


class ReadToEnd:
    """Which partitions of a topic still have records before the high watermark seen at the start.

    Pure bookkeeping for reading a compacted topic "to its end and no further": a partition is done
    when a record at offset high-1 (or past it) arrived, or when the client reports the end of the
    partition (compaction or a transaction marker can leave no record at high-1). Partitions that were
    empty at the start (high <= low) are done from the start.
    """

    def __init__(self, watermarks: Mapping[int, tuple[int, int]]) -> None:
        self.high = {p: high for p, (low, high) in watermarks.items() if high > low}

    @property
    def remaining(self) -> frozenset[int]:
        return frozenset(self.high)

    @property
    def done(self) -> bool:
        return not self.high

    def record(self, partition: int | None, offset: int | None) -> None:
        if partition is None or offset is None:
            return
        high = self.high.get(partition)
        if high is not None and offset + 1 >= high:
            del self.high[partition]

    def end_of_partition(self, partition: int | None) -> None:
        if partition is not None:
            self.high.pop(partition, None)


def read_manifests(
    bootstrap: str,
    conf: Mapping[str, str] | None = None,
    *,
    topic: str = DEFAULT_MANIFEST_TOPIC,
    timeout_s: float = MANIFEST_READ_TIMEOUT_S,
) -> tuple[list[Manifest], str | None]:
    """The latest manifest per key (tombstones drop a key); see `read_manifest_keys`."""
    latest, error = read_manifest_keys(bootstrap, conf, topic=topic, timeout_s=timeout_s)
    return [m for m in latest.values() if m is not None], error


def read_manifest_keys(
    bootstrap: str,
    conf: Mapping[str, str] | None = None,
    *,
    topic: str = DEFAULT_MANIFEST_TOPIC,
    timeout_s: float = MANIFEST_READ_TIMEOUT_S,
) -> tuple[dict[str, Manifest | None], str | None]:
    """The latest manifest per key (tombstones drop a key), read from the start to the high watermark.

    The high watermarks are taken first; reading stops as soon as every partition reached the one it
    had then (records published later belong to the next look), with no fixed waits.
    Returns (manifests, error); a missing topic or no ACL is an error string, never an exception,
    because inspection still works without manifests (it infers instead).
    """
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    deadline = time.monotonic() + timeout_s
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
        meta = consumer.list_topics(topic, timeout=_left(deadline))
        info = meta.topics.get(topic)
        if info is None or info.error is not None:
            return {}, f"manifest topic {topic} not found (`kafka-coop manifest-topic` creates it)"
        watermarks = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=_left(deadline))
            for p in info.partitions
        }
        progress = ReadToEnd(watermarks)
        if progress.done:
            return {}, None
        consumer.assign([TopicPartition(topic, p, watermarks[p][0]) for p in sorted(progress.remaining)])
        latest: dict[str, Manifest | None] = {}
        while not progress.done and time.monotonic() < deadline:
            msg = consumer.poll(_left(deadline))  # returns as soon as one record (or event) is there
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    progress.end_of_partition(msg.partition())
                continue
            key = (msg.key() or b"").decode(errors="replace")
            latest[key] = parse_manifest(msg.value())
            progress.record(msg.partition(), msg.offset())
        error = None if progress.done else f"manifest topic {topic} not read to its end in time"
        return latest, error  # a key whose latest record is a tombstone maps to None: that member closed
    except KafkaException as exc:
        return {}, f"manifest topic {topic} unreadable: {exc}"
    finally:
        consumer.close()


def _left(deadline: float) -> float:
    return max(0.001, deadline - time.monotonic())


def _null_logger() -> Any:
    import logging

    logger = logging.getLogger("kafka_coop.inspection.librdkafka")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger

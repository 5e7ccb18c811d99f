"""Following the manifest topic as it changes (shell): who is declared, who just closed.

`remove-members --wait-stopped` starts together with a stop and must send LeaveGroup the moment the
members' close tombstones arrive. Re-reading the topic from the start for every check would cost a new
client each time; this keeps one consumer at the topic's end and applies each new record, on top of one
full read (`read_manifest_keys`) made after the tail's start offsets were fixed, so nothing published in
between is missed (a record seen twice is applied twice, in order: the latest still wins).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kafka_coop.inspection import read_manifest_keys
from kafka_coop.manifest import Manifest, parse_manifest


class ManifestWatch:
    """`latest`: key -> the latest manifest, or None for a key whose latest record is a tombstone."""

    def __init__(
        self, bootstrap: str, conf: Mapping[str, str] | None, topic: str, *, timeout_s: float = 10.0
    ) -> None:
        from confluent_kafka import Consumer, TopicPartition

        self.topic = topic
        self.latest: dict[str, Manifest | None] = {}
        self.error: str | None = None
        self._consumer: Any = Consumer(
            {
                "bootstrap.servers": bootstrap,
                **(conf or {}),
                "group.id": "kafka-coop-remove-members",  # never joins or commits: partitions are assigned
                "enable.auto.commit": False,
                "allow.auto.create.topics": False,
                "logger": _null_logger(),
            }
        )
        try:
            meta = self._consumer.list_topics(topic, timeout=timeout_s)
            info = meta.topics.get(topic)
            if info is None or info.error is not None:
                self.error = f"manifest topic {topic} not found"
                return
            starts = []
            for p in info.partitions:
                _, high = self._consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)
                starts.append(TopicPartition(topic, p, high))
            self._consumer.assign(starts)
        except Exception as exc:  # KafkaException: not authorized, unreachable
            self.error = f"manifest topic {topic} unreadable: {exc}"
            return
        self.latest, self.error = read_manifest_keys(bootstrap, conf, topic=topic, timeout_s=timeout_s)

    def poll(self, timeout_s: float) -> None:
        """Apply the records that arrive within `timeout_s` (returns at the first batch)."""
        if self.error is not None:
            time.sleep(timeout_s)
            return
        for msg in self._consumer.consume(num_messages=500, timeout=timeout_s):
            if msg.error() is None:
                self.latest[(msg.key() or b"").decode(errors="replace")] = parse_manifest(msg.value())

    def close(self) -> None:
        self._consumer.close()


def _null_logger() -> Any:
    import logging

    logger = logging.getLogger("kafka_coop.membership.librdkafka")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger

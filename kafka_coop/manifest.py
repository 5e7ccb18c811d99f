"""Member manifests: what a member declares about itself, so inspection can be exact, not inferred.

Published to a compacted topic (default `_kafka_coop_manifests`), key `group/instance_id-or-member_id`,
value a `Manifest` JSON object, a tombstone on close. The record is documented field by field
(docs/consumer.md "The Manifest contract") so a Java service can publish the same one.
"""

from __future__ import annotations

import json
import logging
import shlex
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from kafka_coop._vocab import GroupProtocol, RebalanceProtocol
from kafka_coop.events import now_ms

MANIFEST_VERSION: Final = 1
DEFAULT_MANIFEST_TOPIC = "_kafka_coop_manifests"
DEFAULT_HEARTBEAT_S = 30.0
# A member that found no manifest topic looks for it again this often (one metadata request), so a
# topic an operator creates after the fleet started is used without restarting the members.
TOPIC_RECHECK_S = 60.0
# Compacted: the latest manifest per member key survives and a tombstone (on close) removes the key.
# Small segments that roll hourly let the cleaner run on a topic that sees a few records a minute;
# tombstones stay readable for a day, so an inspection reading from the start sees a member leave.
MANIFEST_TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "segment.ms": "3600000",
    "min.cleanable.dirty.ratio": "0.1",
    "delete.retention.ms": "86400000",
}


class TopicAcl(BaseModel):
    """One ACL a principal needs on the manifest topic, with the command that grants it."""

    model_config = ConfigDict(frozen=True)

    who: str
    operations: tuple[str, ...]
    why: str

    def kafka_acls_command(self, topic: str, principal: str, bootstrap: str) -> str:
        """The command line, every value quoted for a POSIX shell (a placeholder such as
        `User:<service>` pasted unquoted would be a redirect)."""
        ops = " ".join(f"--operation {op.capitalize()}" for op in self.operations)
        return (
            f"kafka-acls.sh --bootstrap-server {shlex.quote(bootstrap)} --add --allow-principal "
            f"{shlex.quote(principal)} {ops} --topic {shlex.quote(topic)}"
        )


MANIFEST_TOPIC_ACLS: Final = (
    TopicAcl(
        who="members (kafka-coop consume, CoopConsumer(manifests=True), services publishing the record)",
        operations=("DESCRIBE", "WRITE"),
        why="publish their manifest on join, every heartbeat, and a tombstone on close",
    ),
    TopicAcl(
        who="operators and pipelines (describe, verify-group, upgrade-plan, downgrade-plan)",
        operations=("DESCRIBE", "READ"),
        why="read the topic from the start (assigned partitions: no group, no commits)",
    ),
)

log = logging.getLogger("kafka_coop.manifest")


class ControlOutcome(BaseModel):
    """What a member did with one control record (kafka_coop.control), carried on its manifest so the
    runner reads every member's answer where it already reads what the member is."""

    model_config = ConfigDict(frozen=True)

    plan_id: str
    step: int
    outcome: Literal["applied", "refused", "closed-for-cutover"]
    reason: str | None = None
    seconds: float | None = None  # applied: close, rebuild and the first assignment after it


class Manifest(BaseModel):
    model_config = ConfigDict(frozen=True)

    v: Literal[1] = MANIFEST_VERSION
    group: str
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    libraries: dict[str, str]
    group_protocol: GroupProtocol
    assignors: tuple[str, ...]
    rebalance_protocol: RebalanceProtocol
    remote_assignor: str | None
    started_ms: int
    heartbeat_ms: int
    control: ControlOutcome | None = None  # the last control record this member answered

    @property
    def key(self) -> str:
        return manifest_key(self.group, self.instance_id, self.member_id)


def manifest_key(group: str, instance_id: str | None, member_id: str) -> str:
    return f"{group}/{instance_id or member_id}"


def parse_manifest(value: bytes | None) -> Manifest | None:
    """None for tombstones and for records that are not manifests of a version we know."""
    if value is None:
        return None
    try:
        return Manifest.model_validate(json.loads(value))
    except ValueError:
        return None


class ManifestPublisher:
    """Publishes on join, every `heartbeat_s`, and a tombstone on close; one warning if it cannot. A
    topic that is missing at start is looked for again every TOPIC_RECHECK_S, and used once it is there."""

    def __init__(
        self,
        producer_conf: Mapping[str, Any],
        build: Callable[[], Manifest | None],
        *,
        topic: str = DEFAULT_MANIFEST_TOPIC,
        heartbeat_s: float = DEFAULT_HEARTBEAT_S,
    ) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self._build = build
        self._heartbeat_s = heartbeat_s
        self._producer = Producer({**producer_conf, "linger.ms": 10, "allow.auto.create.topics": False})
        self._failed = False
        self._missing = False  # no topic at start: the loop looks for it again, TOPIC_RECHECK_S apart
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_key: str | None = None

    def start(self) -> None:
        """Check the topic exists (never let a producer auto-create it uncompacted), then heartbeat; a
        missing topic is looked for again by the same thread."""
        self._missing = not self._topic_ready()
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="kafka-coop-manifest", daemon=True)
            self._thread.start()

    def _topic_ready(self) -> bool:
        try:
            meta = self._producer.list_topics(timeout=5.0)  # all topics: asking for one may auto-create it
            error = meta.topics[self.topic].error if self.topic in meta.topics else "not in metadata"
        except Exception as exc:
            error = exc
        if error is not None:
            self._warn(f"topic missing or not authorized: {error}")
            return False
        return True

    def publish_now(self) -> None:
        if self._failed:
            return
        manifest = self._build()
        if manifest is None:
            return
        if self._last_key is not None and self._last_key != manifest.key:
            self._produce(self._last_key, None)  # a dynamic member rejoined under a new member id
        self._last_key = manifest.key
        self._produce(manifest.key, manifest.model_dump_json().encode())

    def _produce(self, key: str, value: bytes | None) -> None:
        try:
            self._producer.produce(self.topic, value, key.encode(), on_delivery=self._on_delivery)
        except Exception as exc:  # BufferError, KafkaException: never break consumption
            self._warn(exc)
        self._producer.poll(0)

    def _on_delivery(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self._warn(err)

    def _warn(self, err: object) -> None:
        if not self._failed:
            self._failed = True
            log.warning(
                "Member manifests cannot be published to %s (%s), so inspection will infer this member's "
                "protocol instead of reading it; consumption continues, `kafka-coop manifest-topic` "
                "creates the topic and lists the ACLs members need, and a missing topic is looked for "
                "again every %g s.",
                self.topic,
                err,
                TOPIC_RECHECK_S,
            )

    def _loop(self) -> None:
        while not self._stop.wait(TOPIC_RECHECK_S if self._missing else self._heartbeat_s):
            if self._missing:
                if not self._topic_ready():
                    continue
                self._missing = self._failed = False
                log.info("Member manifests are published to %s now: the topic appeared.", self.topic)
            self.publish_now()
            self._producer.poll(0)

    def close(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        if self._last_key is not None and not self._failed:
            self._produce(self._last_key, None)
        self._producer.flush(timeout_s)


def local_host() -> str:
    return socket.gethostname()


def timestamp_ms() -> int:
    return now_ms()


# --- reading the topic: the latest manifest each member published, read to the end -----------------
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

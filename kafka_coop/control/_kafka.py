"""The control topic and the members' answers on the wire (shell): what the rollout runner calls."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol

from kafka_coop.control._record import CONTROL_TOPIC, ControlRecord, parse_control
from kafka_coop.errors import ClusterUnavailable, InvalidInput
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC, ControlOutcome, Manifest, parse_manifest

PUBLISH_TIMEOUT_S = 10.0


def _quiet_logger() -> logging.Logger:
    logger = logging.getLogger("kafka_coop.control.librdkafka")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


def publish_control(
    conf: Mapping[str, str],
    record: ControlRecord,
    *,
    topic: str = CONTROL_TOPIC,
    timeout_s: float = PUBLISH_TIMEOUT_S,
) -> None:
    """Write `record` to the control topic under its group's key and wait until the broker has it.

    `conf` is librdkafka conf for the operator's principal (bootstrap.servers and security). A missing
    topic is InvalidInput (exit 2); no WRITE on it, or no broker, is ClusterUnavailable (exit 3), each one
    sentence that names what to do. The member, not this function, refuses settings it may not change.
    """
    from confluent_kafka import KafkaError, KafkaException, Producer

    bootstrap = conf.get("bootstrap.servers", "?")
    producer = Producer({**conf, "linger.ms": 0, "acks": "all", "logger": _quiet_logger()})
    try:
        try:
            meta = producer.list_topics(timeout=timeout_s)  # all topics: asking for one may auto-create it
        except KafkaException as exc:
            raise ClusterUnavailable(
                f"Could not reach the Kafka cluster at {bootstrap} to write the control topic ({exc}).",
                hint="Check the bootstrap servers and that the broker is running.",
            ) from None
        if topic not in meta.topics or meta.topics[topic].error is not None:
            raise InvalidInput(
                f"The control topic {topic} does not exist on {bootstrap}.",
                hint="Create it once per cluster, compacted, with the ACLs in docs/consumer.md.",
            )
        failure: list[Any] = []
        producer.produce(
            topic,
            record.model_dump_json().encode(),
            record.key,
            on_delivery=lambda err, _msg: failure.append(err) if err is not None else None,
        )
        left = producer.flush(timeout_s)
        if failure:
            err = failure[0]
            if err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                raise ClusterUnavailable(
                    f"This principal may not WRITE the control topic {topic} (TOPIC_AUTHORIZATION_FAILED).",
                    hint=f"Only the operator's principal writes it: grant it WRITE and DESCRIBE on {topic}.",
                )
            raise ClusterUnavailable(
                f"The control record for group {record.group} was not written: {err.str()}."
            )
        if left:
            raise ClusterUnavailable(
                f"The control record for group {record.group} was not acknowledged within {timeout_s:g} s.",
                hint="Check that the broker is up and the topic's leader is available.",
            )
    finally:
        producer.flush(0)


def member_name(manifest: Manifest) -> str:
    """The name a member answers under: its group.instance.id, else its client.id."""
    return manifest.instance_id or manifest.client_id


def outcomes_of(
    manifests: Mapping[str, Manifest | None], group: str, plan_id: str, step: int
) -> dict[str, ControlOutcome]:
    """The answers to (plan_id, step) among the latest manifests of `group`'s members, by member name."""
    found: dict[str, ControlOutcome] = {}
    for manifest in manifests.values():
        if manifest is None or manifest.group != group or manifest.control is None:
            continue
        if manifest.control.plan_id == plan_id and manifest.control.step == step:
            found[member_name(manifest)] = manifest.control
    return found


def read_outcomes(
    conf: Mapping[str, str],
    group: str,
    plan_id: str,
    step: int,
    *,
    timeout_s: float,
    expect: Collection[str] | None = None,
    topic: str = DEFAULT_MANIFEST_TOPIC,
) -> dict[str, ControlOutcome]:
    """Every member's answer to step `step` of `plan_id`, by member name (group.instance.id or client.id).

    Reads the manifest topic from its start. Without `expect` it returns once it reached the end it saw at
    the start; with `expect` (member names) it keeps reading new records until all of them answered or
    `timeout_s` ran out, and returns what it has. No broker is ClusterUnavailable; a missing manifest
    topic is InvalidInput.
    """
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    deadline = time.monotonic() + timeout_s
    bootstrap = conf.get("bootstrap.servers", "?")
    consumer = Consumer(
        {
            **conf,
            "group.id": "kafka-coop-control-read",  # never joins or commits: partitions are assigned
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "allow.auto.create.topics": False,
            "logger": _quiet_logger(),
        }
    )
    try:
        try:
            meta = consumer.list_topics(topic, timeout=_left(deadline))
        except KafkaException as exc:
            raise ClusterUnavailable(
                f"Could not reach the Kafka cluster at {bootstrap} to read the members' answers ({exc})."
            ) from None
        info = meta.topics.get(topic)
        if info is None or info.error is not None:
            raise InvalidInput(
                f"The manifest topic {topic} is missing or unreadable on {bootstrap}: no member can answer.",
                hint="`kafka-coop manifest-topic` creates it and lists the ACLs.",
            )
        high = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=_left(deadline))[1]
            for p in info.partitions
        }
        pending = {p for p, h in high.items() if h > 0}
        consumer.assign([TopicPartition(topic, p, 0) for p in info.partitions])
        latest: dict[str, Manifest | None] = {}
        wanted = set(expect) if expect is not None else None
        while time.monotonic() < deadline:
            if not pending:
                found = outcomes_of(latest, group, plan_id, step)
                if wanted is None or wanted <= set(found):
                    return found
            msg = consumer.poll(min(0.2, _left(deadline)))
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    pending.discard(msg.partition())
                continue
            latest[(msg.key() or b"").decode(errors="replace")] = parse_manifest(msg.value())
            offset = msg.offset()
            if offset is not None and offset + 1 >= high.get(msg.partition(), 0):
                pending.discard(msg.partition())
        return outcomes_of(latest, group, plan_id, step)
    finally:
        consumer.close()


def _left(deadline: float) -> float:
    return max(0.001, deadline - time.monotonic())


# A member that finds no control topic (or no READ on it) looks again this often, like the manifests.
CONTROL_RECHECK_S = 60.0


class ControlFeed(Protocol):
    """Where a member's control records come from: the topic (`ControlFollower`), or a test's hand
    (`kafka_coop.testing.FakeControl`). `start` may be called again (a rebuilt client): once counts."""

    def start(self, deliver: Callable[[ControlRecord], None]) -> None: ...

    def close(self) -> None: ...


class ControlFollower:
    """A background reader of the control topic for one group: it never joins a group or commits (the
    partitions are assigned, read from the start), never blocks the member's poll, and hands each
    well-formed record of its group to `deliver` on its own thread. A malformed record is logged once
    (its offset is read once); the member's own rules judge the rest."""

    def __init__(
        self, conf: Mapping[str, Any], group: str, *, topic: str = CONTROL_TOPIC, log: logging.Logger
    ) -> None:
        self._conf = dict(conf)
        self.group = group
        self.topic = topic
        self._log = log
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._deliver: Callable[[ControlRecord], None] | None = None
        self._warned = False
        self._others: set[str] = set()
        self.ready = threading.Event()  # set once the topic's partitions are assigned

    def start(self, deliver: Callable[[ControlRecord], None]) -> None:
        self._deliver = deliver
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kafka-coop-control", daemon=True)
            self._thread.start()

    def close(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        consumer = Consumer(
            {
                **self._conf,
                "group.id": f"kafka-coop-control-{self.group}",  # never joins or commits: assigned
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "allow.auto.create.topics": False,
                "logger": _quiet_logger(),
            }
        )
        try:
            partitions = self._wait_for_topic(consumer)
            if partitions is None:
                return
            consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in partitions])
            self.ready.set()
            while not self._stop.is_set():
                msg = consumer.poll(0.2)
                if msg is None:
                    continue
                err = msg.error()
                if err is not None:
                    self._warn(err)
                    continue
                self._take(msg.key(), msg.value(), msg.offset())
        except Exception as exc:  # never break the member: it goes on without live control
            self._log.warning(
                "The control topic reader stopped (%s); this member follows no control records.", exc
            )
        finally:
            consumer.close()

    def _wait_for_topic(self, consumer: Any) -> list[int] | None:
        while not self._stop.is_set():
            try:
                meta = consumer.list_topics(timeout=5.0)  # all topics: asking for one may auto-create it
                info = meta.topics.get(self.topic)
                error = "not in metadata" if info is None else info.error
            except Exception as exc:
                info, error = None, exc
            if error is None and info is not None:
                if self._warned:
                    self._log.info(
                        "The control topic %s is readable now; this member follows it.", self.topic
                    )
                self._warned = False
                return sorted(info.partitions)
            self._warn(error)
            self._stop.wait(CONTROL_RECHECK_S)
        return None

    def _warn(self, error: object) -> None:
        if not self._warned:
            self._warned = True
            self._log.warning(
                "This member cannot read the control topic %s (%s), so it cannot be reconfigured live; "
                "consumption continues, and the topic is looked for again every %g s.",
                self.topic,
                error,
                CONTROL_RECHECK_S,
            )

    def _take(self, key: bytes | None, value: bytes | None, offset: int | None) -> None:
        if key is not None and key != self.group.encode():
            return  # another group's instruction
        if value is None:
            return  # a tombstone: the runner cleared the group's instruction
        record = parse_control(value)
        if record is None:
            self._log.warning(
                "Control record at offset %s for group %s is malformed (not a version-1 control record); "
                "it changes nothing.",
                offset,
                self.group,
            )
            return
        if record.group != self.group:
            if record.group not in self._others:
                self._others.add(record.group)
                self._log.warning(
                    "Control record at offset %s is keyed %s but names group %s; it changes nothing.",
                    offset,
                    self.group,
                    record.group,
                )
            return
        if self._deliver is not None:
            self._deliver(record)

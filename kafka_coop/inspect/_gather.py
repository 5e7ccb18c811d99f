"""One look at a live group (shell): admin reads, manifests, offsets, broker configs -> GroupSnapshot.

Everything that decides something lives in `_infer` (pure); this module only fetches and hands over.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from kafka_coop.admin import ClusterAdmin, ListedGroup, LiveGroup, PartitionOffsets
from kafka_coop.errors import ClusterUnavailable
from kafka_coop.events import now_ms
from kafka_coop.inspect._infer import MemberInput, broker_facts, infer_generation, infer_members
from kafka_coop.inspect._model import BrokerFacts, GroupSnapshot, PartitionLag
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC, Manifest, parse_manifest

R = TypeVar("R")

MANIFEST_READ_TIMEOUT_S = 5.0
GATHER_THREADS = 6


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

    logger = logging.getLogger("kafka_coop.inspect.librdkafka")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


def _timed(timings: dict[str, float] | None, name: str, fn: Callable[[], R]) -> Callable[[], R]:
    def call() -> R:
        start = time.perf_counter()
        try:
            return fn()
        finally:
            if timings is not None:
                timings[name] = time.perf_counter() - start

    return call


def _lag(offsets: list[PartitionOffsets]) -> tuple[PartitionLag, ...]:
    return tuple(
        PartitionLag(
            topic=o.topic,
            partition=o.partition,
            committed=o.committed,
            end_offset=o.end if o.end is not None else -1,
            lag=(o.end - o.committed) if o.end is not None and o.committed is not None else None,
        )
        for o in offsets
    )


def take_snapshot(
    admin: ClusterAdmin,
    group: str,
    *,
    conf: Mapping[str, str] | None = None,
    manifests_topic: str | None = DEFAULT_MANIFEST_TOPIC,
    with_lag: bool = True,
    with_broker: bool = True,
    timeout_s: float = 10.0,
    lag_not_before: float | None = None,
    timings: dict[str, float] | None = None,
) -> GroupSnapshot:
    """Everything one look at `group` tells; raises ClusterUnavailable if the cluster cannot be read.

    The reads are independent, so they go out together (one thread each; the clients wait on the
    network, not the CPU) and the look takes as long as its slowest read, not their sum. Reads that
    only matter for an existing classic group (member protocol bytes, manifests, offsets) are sent
    before the group's description comes back and dropped if it turns out not to need them.

    `lag_not_before` (a `time.monotonic()` instant) is for lag trends against an earlier sample
    (verify-group's lag window): the committed offsets and log end offsets are then read last, after
    every other read answered and not before that instant, and `taken_ms` is when they came back, so
    the window between two samples is measured, not assumed. `timings`, when given, receives the
    seconds each read took (and `total`), for benchmarks.
    """
    return _look(
        admin,
        group,
        conf=conf,
        manifests_topic=manifests_topic,
        with_lag=with_lag,
        with_broker=with_broker,
        timeout_s=timeout_s,
        lag_not_before=lag_not_before,
        timings=timings,
    )[1]


def snapshot_with_lag_trend(
    admin: ClusterAdmin,
    group: str,
    *,
    min_window_s: float = 0.0,
    conf: Mapping[str, str] | None = None,
    manifests_topic: str | None = DEFAULT_MANIFEST_TOPIC,
    timeout_s: float = 10.0,
    timings: dict[str, float] | None = None,
) -> tuple[GroupSnapshot | None, GroupSnapshot]:
    """(first lag sample, snapshot) for a lag trend in one look (verify-group's lag window).

    The first sample (`lag_sample`) goes out with the snapshot's other reads; the snapshot's own lag
    is read after all of them answered, the first sample included, and no sooner than `min_window_s`
    after that first answer. The window is whatever lies between the two answers (`taken_ms` of
    each), at least `min_window_s`; nothing is slept beyond what gathering did not cover.
    """
    return _look(
        admin,
        group,
        conf=conf,
        manifests_topic=manifests_topic,
        with_lag=True,
        with_broker=True,
        timeout_s=timeout_s,
        lag_not_before=None,
        timings=timings,
        first_lag_window_s=min_window_s,
    )


def _look(
    admin: ClusterAdmin,
    group: str,
    *,
    conf: Mapping[str, str] | None,
    manifests_topic: str | None,
    with_lag: bool,
    with_broker: bool,
    timeout_s: float,
    lag_not_before: float | None,
    timings: dict[str, float] | None,
    first_lag_window_s: float | None = None,
) -> tuple[GroupSnapshot | None, GroupSnapshot]:
    start = time.perf_counter()
    trend = first_lag_window_s is not None
    lag_last = with_lag and (lag_not_before is not None or trend)
    with ThreadPoolExecutor(max_workers=GATHER_THREADS, thread_name_prefix="kafka-coop-look") as pool:
        first_f = (
            pool.submit(
                _timed(
                    timings,
                    "lag_first",
                    lambda: (lag_sample(admin, group, timeout_s=timeout_s), time.monotonic()),
                )
            )
            if trend
            else None
        )
        live_f = pool.submit(
            _timed(timings, "describe", lambda: admin.describe_group(group, timeout_s=timeout_s))
        )
        raw_f = pool.submit(_timed(timings, "raw_group", lambda: admin.raw_group(group, timeout_s=timeout_s)))
        manifests_f = (
            pool.submit(
                _timed(
                    timings,
                    "manifests",
                    lambda: read_manifests(
                        admin.bootstrap,
                        conf,
                        topic=manifests_topic,
                        timeout_s=min(MANIFEST_READ_TIMEOUT_S, timeout_s),
                    ),
                )
            )
            if manifests_topic
            else None
        )
        offsets_f = (
            pool.submit(_timed(timings, "offsets", lambda: admin.offsets(group, timeout_s=timeout_s)))
            if with_lag and not lag_last
            else None
        )
        broker_f = (
            pool.submit(_timed(timings, "broker_configs", lambda: admin.broker_configs(timeout_s=timeout_s)))
            if with_broker
            else None
        )
        live = live_f.result()
        exists = not (live.state == "dead" and not live.members)
        raw = raw_f.result() if exists and live.type == "classic" else None
        raw_by_id = {m.member_id: m for m in raw.members} if raw is not None else {}
        manifests: list[Manifest] = []
        manifests_error = None
        if manifests_f is not None and exists:
            manifests, manifests_error = manifests_f.result()
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
        selected = live.assignor or (raw.protocol if raw is not None else "")
        infer_start = time.perf_counter()
        members = infer_members(group, live.type, selected, inputs, manifests)
        if timings is not None:
            timings["infer"] = time.perf_counter() - infer_start
        broker = BrokerFacts()
        if broker_f is not None:
            try:
                broker_id, configs = broker_f.result()
                broker = broker_facts(broker_id, configs)
            except ClusterUnavailable as exc:
                broker = BrokerFacts(configs_error=exc.message)
        lag: tuple[PartitionLag, ...] = ()
        taken_ms = None
        if offsets_f is not None and exists:
            lag = _lag(offsets_f.result())
        first: GroupSnapshot | None = None
        if first_f is not None:
            first, first_at = first_f.result()
            lag_not_before = first_at + (first_lag_window_s or 0.0)
        if lag_last and exists:
            assert lag_not_before is not None
            wait = lag_not_before - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            lag = _lag(_timed(timings, "offsets", lambda: admin.offsets(group, timeout_s=timeout_s))())
            taken_ms = now_ms()
    notes = []
    if raw is None and live.type == "consumer":
        notes.append("consumer-protocol group: member protocol metadata is not visible; types are inferred")
    if live.state in ("preparing_rebalance", "completing_rebalance"):
        notes.append("a rebalance is in progress: member metadata may be from the previous generation")
    if timings is not None:
        timings["total"] = time.perf_counter() - start
    return first, GroupSnapshot(
        group_id=group,
        taken_ms=taken_ms if taken_ms is not None else now_ms(),
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


def lag_sample(admin: ClusterAdmin, group: str, *, timeout_s: float = 10.0) -> GroupSnapshot | None:
    """Only the committed offsets and log end offsets of `group`, as a snapshot with no members.

    The first point of a lag trend (verify-group's lag window): one cheap request pair, `taken_ms` is
    when it answered. Everything else in it is empty and says so in `notes` (`exists` only says
    whether the group has committed offsets); use it for lag only. None when the principal may not
    read offsets (the look that follows says so properly); ClusterUnavailable when unreachable.
    """
    offsets = admin.offsets_if_allowed(group, timeout_s=timeout_s)
    if offsets is None:
        return None
    lag = _lag(offsets)
    return GroupSnapshot(
        group_id=group,
        taken_ms=now_ms(),
        exists=bool(lag),
        type="unknown",
        state="unknown",
        protocol_type=None,
        assignor="",
        coordinator=None,
        members=(),
        lag=lag,
        manifests_topic=None,
        notes=("lag sample only: members, manifests and broker facts were not read",),
    )


def list_groups(
    admin: ClusterAdmin, *, timeout_s: float = 10.0
) -> list[tuple[ListedGroup, LiveGroup | None]]:
    """Every group with its describe answer (one batched request), like `kafka-consumer-groups --list`."""
    listed = admin.list_groups(timeout_s=timeout_s)
    described = admin.describe_groups([g.group_id for g in listed if not g.is_simple], timeout_s=timeout_s)
    return [(g, described.get(g.group_id)) for g in listed]

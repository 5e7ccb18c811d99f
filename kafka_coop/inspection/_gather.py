"""One look at a live group (shell): the reads go out together, `_assemble` puts the answers together.

The reads are independent, so each gets a thread (the clients wait on the network, not the CPU) and a
look takes as long as its slowest read, not their sum. Reads that only matter for an existing classic
group (member protocol bytes, manifests, offsets) are sent before the group's description comes back
and dropped if it turns out not to need them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TypeVar

from kafka_coop.admin import ClusterAdmin, GroupDescription, GroupState, ListedGroup
from kafka_coop.coordinator import CoordinatorClient, coordinator_view
from kafka_coop.errors import ClusterUnavailable, KafkaCoopError
from kafka_coop.events import now_ms
from kafka_coop.inspection._assemble import (
    GroupAnswers,
    LaterAnswers,
    assemble_members,
    assemble_snapshot,
    partition_lag,
)
from kafka_coop.inspection._infer import group_kind
from kafka_coop.inspection._manifests import MANIFEST_READ_TIMEOUT_S, read_manifests
from kafka_coop.inspection._model import GroupSnapshot
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC

R = TypeVar("R")

GATHER_THREADS = 7


@dataclass(frozen=True)
class _Reads:
    """What one look reads, and when it reads the offsets.

    `lag_not_before` (a `time.monotonic()` instant) and `trend_window_s` both move the offsets read to
    the end, after every other read answered: the first no sooner than that instant, the second no
    sooner than `trend_window_s` after a first lag sample sent with the other reads answered.
    """

    manifests_topic: str | None
    with_lag: bool
    with_broker: bool
    lag_not_before: float | None = None
    trend_window_s: float | None = None

    @property
    def lag_last(self) -> bool:
        return self.with_lag and (self.lag_not_before is not None or self.trend_window_s is not None)


def _timed(timings: dict[str, float] | None, name: str, fn: Callable[[], R]) -> Callable[[], R]:
    def call() -> R:
        start = time.perf_counter()
        try:
            return fn()
        finally:
            if timings is not None:
                timings[name] = time.perf_counter() - start

    return call


class _FanOut:
    """The requests of one look, sent together on a pool, and their answers as they are needed."""

    def __init__(
        self,
        pool: ThreadPoolExecutor,
        admin: ClusterAdmin,
        group: str,
        reads: _Reads,
        *,
        conf: Mapping[str, str] | None,
        timeout_s: float,
        timings: dict[str, float] | None,
        coordinator: CoordinatorClient | None = None,
    ) -> None:
        self.admin, self.group, self.reads, self.timeout_s, self.timings = (
            admin,
            group,
            reads,
            timeout_s,
            timings,
        )

        def send(name: str, fn: Callable[[], R]) -> Future[R]:
            return pool.submit(_timed(timings, name, fn))

        self._first = (
            send("lag_first", lambda: (lag_sample(admin, group, timeout_s=timeout_s), time.monotonic()))
            if reads.trend_window_s is not None
            else None
        )
        self._live = send("describe", lambda: admin.describe_group(group, timeout_s=timeout_s))
        self._view = send(
            "coordinator",
            lambda: coordinator_view(admin.bootstrap, conf, group, timeout_s=timeout_s, client=coordinator),
        )
        self._raw = send("raw_group", lambda: admin.raw_group(group, timeout_s=timeout_s))
        topic = reads.manifests_topic
        self._manifests = (
            send(
                "manifests",
                lambda: read_manifests(
                    admin.bootstrap, conf, topic=topic, timeout_s=min(MANIFEST_READ_TIMEOUT_S, timeout_s)
                ),
            )
            if topic
            else None
        )
        self._offsets = (
            send("offsets", lambda: admin.offsets(group, timeout_s=timeout_s))
            if reads.with_lag and not reads.lag_last
            else None
        )
        self._broker = (
            send("broker_configs", lambda: admin.broker_configs(timeout_s=timeout_s))
            if reads.with_broker
            else None
        )

    def group_answers(self) -> GroupAnswers:
        live = self._live.result()
        exists = not (live.state == "dead" and not live.members)
        raw = self._raw.result() if exists and live.group_type == "classic" else None
        answer, group_configs, note = self._view.result()
        seen = GroupAnswers(
            live=live, raw=raw, coordinator=answer, group_configs=group_configs, coordinator_note=note
        )
        if self._manifests is None or not exists:
            return seen
        manifests, error = self._manifests.result()
        return replace(seen, manifests=tuple(manifests), manifests_error=error)

    def later_answers(self, exists: bool) -> tuple[LaterAnswers, GroupSnapshot | None, int | None]:
        """(the slow answers, the trend's first lag sample, when the last offsets came back)."""
        broker, broker_error = None, None
        if self._broker is not None:
            try:
                broker = self._broker.result()
            except ClusterUnavailable as exc:
                broker_error = exc.message
        offsets = tuple(self._offsets.result()) if self._offsets is not None and exists else None
        first: GroupSnapshot | None = None
        not_before = self.reads.lag_not_before
        if self._first is not None:
            first, first_at = self._first.result()
            not_before = first_at + (self.reads.trend_window_s or 0.0)
        offsets_ms = None
        if self.reads.lag_last and exists:
            assert not_before is not None
            wait = not_before - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            read = _timed(
                self.timings, "offsets", lambda: self.admin.offsets(self.group, timeout_s=self.timeout_s)
            )
            offsets = tuple(read())
            offsets_ms = now_ms()
        return LaterAnswers(broker=broker, broker_error=broker_error, offsets=offsets), first, offsets_ms


def _gather_snapshot(
    admin: ClusterAdmin,
    group: str,
    reads: _Reads,
    *,
    conf: Mapping[str, str] | None,
    timeout_s: float,
    timings: dict[str, float] | None,
    coordinator: CoordinatorClient | None = None,
) -> tuple[GroupSnapshot | None, GroupSnapshot]:
    """(the trend's first lag sample, the snapshot): the fan-out, then the pure assembly. The members
    are inferred as soon as the group's own answers are in, while the slower reads are in flight."""
    start = time.perf_counter()
    pool = ThreadPoolExecutor(max_workers=GATHER_THREADS, thread_name_prefix="kafka-coop-look")
    failed = True
    try:
        fan_out = _FanOut(
            pool,
            admin,
            group,
            reads,
            conf=conf,
            timeout_s=timeout_s,
            timings=timings,
            coordinator=coordinator,
        )
        answers = fan_out.group_answers()
        members = _timed(timings, "infer", lambda: assemble_members(group, answers))()
        later, first, offsets_ms = fan_out.later_answers(answers.exists)
        failed = False
    finally:
        # A failed read ends the look at once: the other reads are not waited for. (A librdkafka client
        # whose request timed out can abort the process when the coordinator moves later, librdkafka
        # #4605: the sooner a failed command exits, the smaller that window.)
        pool.shutdown(wait=not failed, cancel_futures=failed)
    snapshot = assemble_snapshot(
        group,
        answers,
        members,
        later,
        taken_ms=offsets_ms if offsets_ms is not None else now_ms(),
        manifests_topic=reads.manifests_topic,
    )
    if timings is not None:
        timings["total"] = time.perf_counter() - start
    return first, snapshot


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
    coordinator: CoordinatorClient | None = None,
) -> GroupSnapshot:
    """Everything one look at `group` tells; raises ClusterUnavailable if the cluster cannot be read.

    `lag_not_before` (a `time.monotonic()` instant) is for lag trends against an earlier sample
    (verify-group's lag window): the offsets are then read last, not before that instant, and
    `taken_ms` is when they came back, so the window between two samples is measured, not assumed.
    `timings`, when given, receives the seconds each read took (and `total`), for benchmarks.
    `coordinator`: a kafka-python connection to ask the group's coordinator on (ConsumerGroupDescribe);
    one is opened for this look when not given.
    """
    reads = _Reads(manifests_topic, with_lag, with_broker, lag_not_before=lag_not_before)
    return _gather_snapshot(
        admin, group, reads, conf=conf, timeout_s=timeout_s, timings=timings, coordinator=coordinator
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
    coordinator: CoordinatorClient | None = None,
) -> tuple[GroupSnapshot | None, GroupSnapshot]:
    """(first lag sample, snapshot) for a lag trend in one look (verify-group's lag window).

    The first sample (`lag_sample`) goes out with the snapshot's other reads; the snapshot's own lag
    is read after all of them answered, the first sample included, and no sooner than `min_window_s`
    after that first answer. The window is whatever lies between the two answers (`taken_ms` of
    each), at least `min_window_s`; nothing is slept beyond what gathering did not cover.
    """
    reads = _Reads(manifests_topic, with_lag=True, with_broker=True, trend_window_s=min_window_s)
    return _gather_snapshot(
        admin, group, reads, conf=conf, timeout_s=timeout_s, timings=timings, coordinator=coordinator
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
    lag = partition_lag(offsets)
    return GroupSnapshot(
        group=group,
        taken_ms=now_ms(),
        exists=bool(lag),
        group_type="unknown",
        state="unknown",
        protocol_type=None,
        selected_assignor="",
        coordinator=None,
        members=(),
        lag=lag,
        manifests_topic=None,
        notes=("lag sample only: members, manifests and broker facts were not read",),
    )


def list_groups(
    admin: ClusterAdmin,
    *,
    timeout_s: float = 10.0,
    conf: Mapping[str, str] | None = None,
    coordinator: CoordinatorClient | None = None,
) -> list[tuple[ListedGroup, GroupDescription | None]]:
    """Every group with its describe answer (one batched request), like `kafka-groups.sh --list`.

    librdkafka lists classic and consumer groups; ListGroups v5 through kafka-python adds each group's
    kind (share and streams groups, which librdkafka leaves out or calls unknown, and a classic group's
    protocol type, `connect` for Connect workers). Share and streams groups are listed, not described."""
    listed = admin.list_groups(timeout_s=timeout_s)
    kinds: dict[str, tuple[str, str, str]] = {}
    try:
        reader = coordinator or CoordinatorClient(admin.bootstrap, conf, timeout_s=timeout_s)
        try:
            kinds = {g.group: (g.group_type, g.protocol_type, g.state) for g in reader.list_groups()}
        finally:
            if coordinator is None:
                reader.close()
    except KafkaCoopError:
        pass  # the kinds are extra: librdkafka's list stands on its own
    rows = []
    for g in listed:
        group_type, protocol_type, _ = kinds.get(g.group, (g.group_type, "", ""))
        kind = (
            group_kind(group_type or g.group_type, protocol_type, g.is_simple) if g.group in kinds else None
        )
        rows.append(g.model_copy(update={"kind": kind, "protocol_type": protocol_type or None}))
    seen = {g.group for g in listed}
    for name, (group_type, protocol_type, state) in sorted(kinds.items()):
        if name not in seen:  # share and streams groups: not consumer groups, listed for what they are
            rows.append(
                ListedGroup(
                    group=name,
                    group_type="unknown",
                    state=_LISTED_STATES.get(state, "unknown"),
                    is_simple=False,
                    kind=group_kind(group_type, protocol_type),
                    protocol_type=protocol_type or None,
                )
            )
    rows.sort(key=lambda g: g.group)
    consumers = [g.group for g in rows if not g.is_simple and g.kind not in ("share", "streams", "simple")]
    described = admin.describe_groups(consumers, timeout_s=timeout_s)
    return [(g, described.get(g.group)) for g in rows]


_LISTED_STATES: dict[str, GroupState] = {
    "Stable": "stable",
    "PreparingRebalance": "preparing_rebalance",
    "CompletingRebalance": "completing_rebalance",
    "Assigning": "assigning",
    "Reconciling": "reconciling",
    "Empty": "empty",
    "Dead": "dead",
}

"""The CoopConsumer offset contract and its fault paths on the real broker (issue 13).

Every test reads the committed offsets back from the broker (`ClusterAdmin.offsets`, the group's
OffsetFetch), checks the events, and checks each event's `owned` against the client's `assignment()` at
the moment it was emitted. The protocol x membership matrix (eager-range, cooperative-sticky, consumer;
dynamic, static) is covered by parametrization.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopConsumer
from kafka_coop.errors import ConsumerFailed, InstanceIdConflict
from kafka_coop.events import RebalanceEvent
from tests.integration.consumer.members import (
    ThreadMember,
    committed_offsets,
    consumer_conf,
    produce_keyed,
    wait_for,
)

REBALANCES = ["eager-range", "cooperative-sticky", "consumer"]
MEMBERSHIPS = ["dynamic", "static"]


class ProcessingError(Exception):
    pass


class Recorder:
    """An event sink that checks `owned` against the client's real assignment as each event is emitted."""

    def __init__(self) -> None:
        self.events: list[RebalanceEvent] = []
        self.mismatches: list[str] = []
        self.consumer: Any = None

    def __call__(self, event: RebalanceEvent) -> None:
        if (
            event.kind in ("assigned", "revoked", "lost")
            and self.consumer is not None
            and not self.consumer.closing
        ):
            real = tuple(sorted((tp.topic, tp.partition) for tp in self.consumer.assignment()))
            if real != event.owned:
                self.mismatches.append(f"{event.kind} owned={event.owned} real={real}")
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]


def conf_for(bootstrap: str, group: str, rebalance: str, **extra: Any) -> dict[str, Any]:
    """Explicit marks: these tests say which records are done (drop-in: test_dropin.py)."""
    return consumer_conf(bootstrap, group, rebalance, marks=True, **extra)


# --- the offset contract, for every protocol and membership ------------------------------------
@pytest.mark.parametrize("membership", MEMBERSHIPS)
@pytest.mark.parametrize("rebalance", REBALANCES)
def test_a_record_whose_processing_raised_is_not_committed_when_the_with_block_exits(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
    membership: str,
) -> None:
    """The issue's first scenario: the app commits itself (auto commit off), offset 3 raises."""
    topic = topic_factory(1)
    group = unique(f"raise-{rebalance}-{membership}")
    produce_keyed(bootstrap, topic, partitions=1, per_partition=10)
    extra: dict[str, Any] = {"auto.commit.interval.ms": "3600000"}
    if membership == "static":
        extra["group.instance.id"] = f"{group}-0"
    recorder = Recorder()
    consumer = CoopConsumer(conf_for(bootstrap, group, rebalance, **extra), events=recorder)
    recorder.consumer = consumer
    deadline = time.monotonic() + 60
    with pytest.raises(ProcessingError), consumer:
        consumer.subscribe([topic])
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            if msg.offset() == 3:
                raise ProcessingError("the database write failed")
            consumer.mark_done(msg)
    assert committed_offsets(admin, group) == {(topic, 0): 3}, (
        "0-2 were marked done; 3 raised and must come again"
    )
    assert recorder.kinds()[0] == "started" and recorder.kinds()[-1] == "closed"
    assert "assigned" in recorder.kinds() and not recorder.mismatches, recorder.mismatches
    assert recorder.events[-1].owned == ()


@pytest.mark.parametrize("membership", MEMBERSHIPS)
@pytest.mark.parametrize("rebalance", REBALANCES)
def test_revoke_commits_what_is_marked_done_and_the_next_owner_resumes_right_after_it(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
    membership: str,
) -> None:
    partitions, marked_below = 4, 6
    topic = topic_factory(partitions)
    group = unique(f"revoke-{rebalance}-{membership}")
    produce_keyed(bootstrap, topic, partitions=partitions, per_partition=10)

    def static(name: str) -> dict[str, Any]:
        return {"group_instance_id": f"{group}-{name}"} if membership == "static" else {}

    first = ThreadMember(
        bootstrap,
        group,
        [topic],
        rebalance,
        "first",
        mark=lambda msg: msg.offset() < marked_below,
        auto_commit_interval_ms=3600000,
        **static("first"),
    )
    second = None
    try:
        wait_for(lambda: sum(len(v) for v in first.processed.values()) == 40, what="first to read everything")
        second = ThreadMember(
            bootstrap,
            group,
            [topic],
            rebalance,
            "second",
            auto_commit_interval_ms=3600000,
            **static("second"),
        )
        wait_for(
            lambda: len(second.owned) > 0 and len(first.owned) + len(second.owned) == partitions,
            what="a split",
        )
        moved = second.owned
        wait_for(lambda: all(second.processed.get(p) for p in moved), what="second to consume what moved")
        broker = committed_offsets(admin, group)
    finally:
        first.stop()
        if second is not None:
            second.stop()
    revokes = [e for e in first.events if e.kind == "revoked"]
    assert revokes and "lost" not in first.kinds()
    revoked = {p for e in revokes for p in e.partitions}
    assert set(moved) <= revoked
    for part in moved:
        assert broker[part] == marked_below, f"{part}: the revoke committed exactly what was marked done"
        assert second.processed[part][0] == marked_below, f"{part}: the next owner resumed right after it"
    reported = {(t, p): o for e in revokes for t, p, o in e.committed or ()}
    assert all(reported[p] == marked_below for p in moved), reported
    assert not first.mismatches and not second.mismatches, first.mismatches + second.mismatches


# --- suspect 3: a static member fenced by a duplicate id -------------------------------------------
@pytest.mark.parametrize("rebalance", REBALANCES)
def test_a_member_fenced_by_a_duplicate_instance_id_loses_everything_and_poll_says_why(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
) -> None:
    """Classic fences the OLD member (the CoopConsumer here joins first); KIP-848 refuses the NEW one
    (the CoopConsumer here joins second)."""
    topic = topic_factory(2)
    group = unique(f"fenced-{rebalance}")
    produce_keyed(bootstrap, topic, partitions=2, per_partition=5)
    # No auto commit on either side: what the broker holds is exactly what the CoopConsumer committed.
    conf = conf_for(
        bootstrap, group, rebalance, **{"group.instance.id": "svc-3", "auto.commit.interval.ms": "3600000"}
    )
    plain_conf = {k: v for k, v in conf.items()}
    kip848 = rebalance == "consumer"
    recorder = Recorder()
    lost_hook: list[list[tuple[str, int]]] = []
    plain: Consumer | None = None
    stop = threading.Event()
    plain_thread: threading.Thread | None = None

    plain_owns: list[int] = [0]

    def keep_plain_polling() -> None:
        # confluent-kafka 2.16 serializes calls on one client: only this thread touches `plain`.
        assert plain is not None
        while not stop.is_set():
            plain.poll(0.2)
            plain_owns[0] = len(plain.assignment())

    if kip848:  # the holder: a plain consumer that owns the id first
        plain = Consumer(plain_conf)
        plain.subscribe([topic])
        plain_thread = threading.Thread(target=keep_plain_polling, daemon=True)
        plain_thread.start()
        wait_for(lambda: plain_owns[0] == 2, what="the plain holder to own the partitions")
    coop = CoopConsumer(conf, events=recorder, on_lost=lost_hook.append)
    recorder.consumer = coop
    coop.subscribe([topic])
    failure: InstanceIdConflict | None = None
    processed = 0
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline and failure is None:
            if not kip848 and plain is None and processed == 10:
                # Offsets 0-2 of each partition committed, 3-4 marked done but not yet committed.
                coop.commit(offsets=[TopicPartition(topic, p, 3) for p in range(2)], asynchronous=False)
                plain = Consumer(plain_conf)  # the duplicate pod arrives
                plain.subscribe([topic])
                plain_thread = threading.Thread(target=keep_plain_polling, daemon=True)
                plain_thread.start()
            try:
                msg = coop.poll(0.2)
            except InstanceIdConflict as exc:
                failure = exc
                continue
            if msg is not None and not msg.error():
                coop.mark_done(msg)
                processed += 1
        assert failure is not None, f"no fatal error in 90 s; events {recorder.kinds()}"
        assert "'svc-3'" in str(failure) and failure.code == (
            "UNRELEASED_INSTANCE_ID" if kip848 else "FENCED_INSTANCE_ID"
        )
        assert coop.owned == () and coop.assignment() == []
        with pytest.raises(InstanceIdConflict):
            coop.poll(0.1)
    finally:
        stop.set()
        if plain_thread is not None:
            plain_thread.join(10)
        coop.close()
        if plain is not None:
            plain.close()
    # Nothing after the fence, not even the close: the broker keeps the commit made before it (classic);
    # the refused KIP-848 member never owned anything and committed nothing.
    assert committed_offsets(admin, group) == ({} if kip848 else {(topic, 0): 3, (topic, 1): 3})
    if not kip848:
        lost = [e for e in recorder.events if e.kind == "lost"]
        assert len(lost) == 1 and set(lost[0].partitions) == {(topic, 0), (topic, 1)} and lost[0].owned == ()
        assert lost_hook == [sorted(lost[0].partitions)]
    assert recorder.events[-1].kind == "closed" and recorder.events[-1].owned == ()
    assert not recorder.mismatches, recorder.mismatches


# --- suspect 2: a static member past max.poll.interval.ms while a rebalance runs ------------------
# "default": librdkafka's auto commit, with explicit marks (finding 1 of issue 25: its own unassign used
# to commit with the reset member id, a fatal FENCED_INSTANCE_ID); "librdkafka-defaults": auto commit
# and auto offset store both on, a loop that never marks (the drop-in service).
OVERRUN_AUTO_COMMIT = ["no-interval", "default", "librdkafka-defaults"]


@pytest.mark.parametrize("auto_commit", OVERRUN_AUTO_COMMIT)
@pytest.mark.parametrize("rebalance", ["eager-range", "cooperative-sticky"])
def test_a_static_member_that_overran_its_poll_interval_mid_rebalance_loses_without_commit_and_rejoins(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
    auto_commit: str,
) -> None:
    """The issue's sandbox scenario: session 6 s, max.poll 7 s, a static member joins in a 10 s stall.
    Under librdkafka's default auto commit too (every record marked done), and under all of its
    defaults (no marks: what the loop polled past is done)."""
    topic = topic_factory(4)
    group = unique(f"maxpoll-{rebalance}")
    produce_keyed(bootstrap, topic, partitions=4, per_partition=20)
    # heartbeat 0.5 s: the stalled member learns of the join's rebalance well inside its 7 s poll limit
    timing = {
        "session_timeout_ms": 6000,
        "max_poll_interval_ms": 7000,
        "heartbeat_interval_ms": 500,
        **({"auto_commit_interval_ms": "3600000"} if auto_commit == "no-interval" else {}),
    }
    stalled = ThreadMember(
        bootstrap,
        group,
        [topic],
        rebalance,
        "stalls",
        group_instance_id=f"{group}-a",
        marks=auto_commit != "librdkafka-defaults",
        **timing,
    )
    joiner = None
    try:
        wait_for(lambda: sum(len(v) for v in stalled.processed.values()) == 80, what="all 80 records")
        stalled.call(
            lambda c: c.commit(offsets=[TopicPartition(topic, p, 10) for p in range(4)], asynchronous=False)
        )
        stalled.stalled.set()
        stall_started = time.monotonic()
        # The join starts a rebalance the stalled member cannot serve; then its poll interval runs out
        # mid-rebalance, librdkafka resets its member id and queues a revoke, not a loss.
        joiner = ThreadMember(
            bootstrap, group, [topic], rebalance, "joins", group_instance_id=f"{group}-b", **timing
        )
        time.sleep(max(0.0, 10.0 - (time.monotonic() - stall_started)))
        stalled.stalled.clear()
        wait_for(lambda: "lost" in stalled.kinds(), timeout_s=60, what="the stalled member's lost event")
        rejoined = lambda: "assigned" in stalled.kinds()[stalled.kinds().index("lost") :]  # noqa: E731
        wait_for(rejoined, timeout_s=90, what="the stalled member to rejoin the group")
        if rebalance == "eager-range":
            wait_for(lambda: len(stalled.owned) + len(joiner.owned) == 4, what="every partition owned again")
        # cooperative-sticky: librdkafka 2.16 leaves the two partitions of the interrupted revoke unassigned
        # after this rejoin (a plain Consumer does the same; seen on the sandbox), so no coverage check.
        assert stalled.consumer.failure is None
        broker = committed_offsets(admin, group)
    finally:
        stalled.stop()
        if joiner is not None:
            joiner.stop()
    lost = [e for e in stalled.events if e.kind == "lost"]
    assert all(e.committed is None for e in lost)
    assert any("member id reset" in (e.error or "") for e in lost), [e.error for e in lost]
    assert all(broker[(topic, p)] is not None and broker[(topic, p)] >= 10 for p in range(4)), broker
    assert not stalled.mismatches and not joiner.mismatches, stalled.mismatches + joiner.mismatches


# --- suspect 6: start offsets --------------------------------------------------------------------
@pytest.mark.parametrize("rebalance", REBALANCES)
def test_start_offsets_from_the_hook_and_from_a_legacy_on_assign_are_where_fetching_starts(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
) -> None:
    topic = topic_factory(2)
    group = unique(f"start-{rebalance}")
    produce_keyed(bootstrap, topic, partitions=2, per_partition=10)

    def legacy_on_assign(consumer: Any, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            if tp.partition == 1:
                tp.offset = 7  # offsets kept in a database, the confluent-kafka way
        consumer.assign(partitions)

    first: dict[int, int] = {}
    consumer = CoopConsumer(conf_for(bootstrap, group, rebalance), start_offsets=lambda ps: {(topic, 0): 4})
    try:
        consumer.subscribe([topic], on_assign=legacy_on_assign)
        deadline = time.monotonic() + 60
        while len(first) < 2 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error() and msg.partition() not in first:
                first[msg.partition()] = msg.offset()
                consumer.mark_done(msg)  # only the first record read from each partition
    finally:
        consumer.close()
    assert first == {0: 4, 1: 7}
    # The close committed right after the one record marked done where fetching started.
    assert committed_offsets(admin, group) == {(topic, 0): 5, (topic, 1): 8}


@pytest.mark.parametrize("rebalance", REBALANCES)
def test_a_seek_in_on_assigned_is_where_fetching_starts(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
) -> None:
    topic = topic_factory(2)
    group = unique(f"seek-{rebalance}")
    produce_keyed(bootstrap, topic, partitions=2, per_partition=10)
    recorder = Recorder()
    consumer: CoopConsumer

    def on_assigned(partitions: list[tuple[str, int]]) -> None:
        for t, p in partitions:
            consumer.seek(TopicPartition(t, p, 6 + p))

    first: dict[int, int] = {}
    consumer = CoopConsumer(conf_for(bootstrap, group, rebalance), on_assigned=on_assigned, events=recorder)
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(first) < 2 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                first.setdefault(msg.partition(), msg.offset())
    finally:
        consumer.close()
    assert first == {0: 6, 1: 7}, [(e.kind, e.partitions, e.error) for e in recorder.events]
    assert not any(e.error for e in recorder.events), [e.error for e in recorder.events]


# --- suspect 5: a commit that fails for one partition --------------------------------------------
def test_a_revoke_whose_commit_fails_for_one_partition_reports_what_the_broker_has(
    bootstrap: str, admin: ClusterAdmin, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    topic = topic_factory(2)
    group = unique("partial")
    produce_keyed(bootstrap, topic, partitions=2, per_partition=3)
    no_auto = {"auto_commit_interval_ms": "3600000"}
    first = ThreadMember(bootstrap, group, [topic], "eager-range", "first", mark=lambda msg: False, **no_auto)
    second = None
    try:
        wait_for(lambda: sum(len(v) for v in first.processed.values()) == 6, what="first to read everything")
        # offset.metadata.max.bytes (4096 by default) refuses this one partition's commit only.
        marks = [TopicPartition(topic, 0, 2), TopicPartition(topic, 1, 3, "x" * 5000)]
        first.call(lambda c: c.store_offsets(offsets=marks))
        second = ThreadMember(bootstrap, group, [topic], "eager-range", "second", **no_auto)
        wait_for(lambda: "revoked" in first.kinds(), what="the eager revoke")
        broker = committed_offsets(admin, group)
    finally:
        first.stop()
        if second is not None:
            second.stop()
    revoke = next(e for e in first.events if e.kind == "revoked")
    assert set(revoke.partitions) == {(topic, 0), (topic, 1)}
    assert revoke.committed == ((topic, 0, 2),), revoke
    assert "OFFSET_METADATA_TOO_LARGE" in (revoke.error or "")
    assert broker == {(topic, 0): 2}


# --- a static member fenced by its own eviction (issue 13, gap A) ----------------------------------
def test_a_static_member_fenced_after_its_own_poll_limit_ran_out_is_told_so_and_nothing_is_committed(
    bootstrap: str, admin: ClusterAdmin, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    """What a synchronous commit that outlasts max.poll.interval.ms (a coordinator move) ends in: librdkafka
    resets the member id, and the commit carrying the old identity is FENCED_INSTANCE_ID, fatal. No second
    member exists, so the error must not say another member uses the id."""
    topic = topic_factory(2)
    group = unique("self-fenced")
    produce_keyed(bootstrap, topic, partitions=2, per_partition=10)
    timing = {"session.timeout.ms": "6000", "max.poll.interval.ms": "6000", "heartbeat.interval.ms": "500"}
    conf = conf_for(bootstrap, group, "cooperative-sticky", **{"group.instance.id": f"{group}-0", **timing})
    conf["auto.commit.interval.ms"] = "3600000"
    recorder = Recorder()
    consumer = CoopConsumer(conf, events=recorder)
    recorder.consumer = consumer
    failure: Exception | None = None
    try:
        consumer.subscribe([topic])
        seen = 0
        deadline = time.monotonic() + 60
        while seen < 20 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                seen += 1
        assert seen == 20
        consumer.commit(offsets=[TopicPartition(topic, p, 4) for p in range(2)], asynchronous=False)
        # Blocked past max.poll.interval.ms (6 s): librdkafka evicts it (its 1 s timer) and stops
        # heartbeating, so the broker keeps the static member until its 6 s session runs out, ~12 s in;
        # the commit must reach the broker before that to be fenced rather than refused as unknown.
        time.sleep(8.0)
        try:
            consumer.commit(offsets=[TopicPartition(topic, p, 9) for p in range(2)], asynchronous=False)
        except Exception as exc:  # the fenced commit itself raises librdkafka's KafkaException
            assert "FENCED_INSTANCE_ID" in str(exc) or "fenced" in str(exc).lower(), exc
        deadline = time.monotonic() + 30
        while failure is None and time.monotonic() < deadline:
            try:
                consumer.poll(0.2)
            except ConsumerFailed as exc:
                failure = exc
        broker = committed_offsets(admin, group)
    finally:
        consumer.close()
    assert isinstance(failure, ConsumerFailed), f"no fatal error; events {recorder.kinds()}"
    text = str(failure)
    assert failure.code == "FENCED_INSTANCE_ID", text
    assert "Another member" not in text and "another running member" not in text, text
    assert "own max.poll.interval.ms" in text, text
    assert broker == {(topic, 0): 4, (topic, 1): 4}, "the fenced commit changed nothing on the broker"
    assert recorder.events[-1].kind == "closed" and recorder.events[-1].owned == ()

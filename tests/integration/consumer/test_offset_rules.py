"""The offset contract's two rules, read back from the broker, with confluent-kafka as the oracle.

- **Drop-in**: a program that uses only confluent's API leaves the committed offsets confluent leaves.
  kafka-coop commits on the application's behalf only where confluent would: with
  `enable.auto.commit=false`, nothing beyond what the application committed itself, on close or revoke;
  and never below an offset the application committed (`commit(message=)`), on any later commit.
- **Explicit marks**: never past a record the application has not finished, whichever thread or task
  commits, and whenever (an interval commit inside a call that returns unmarked records included).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopAIOConsumer, CoopConsumer, _core
from tests.integration.consumer.members import committed_offsets, consumer_conf, produce_keyed, wait_for

Factory = Callable[[dict[str, Any]], Any]
CLIENTS: dict[str, Factory] = {"confluent": Consumer, "kafka-coop": CoopConsumer}


def take(consumer: Any, count: int, deadline_s: float = 30.0) -> Iterator[Any]:
    """Poll until `count` records came (error events skipped), yielding each as it comes."""
    got = 0
    deadline = time.monotonic() + deadline_s
    while got < count and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got += 1
            yield msg
    assert got == count, f"{got} of {count} records came"


def held(admin: ClusterAdmin, group: str, topic: str, partition: int = 0) -> int | None:
    return committed_offsets(admin, group).get((topic, partition))


# --- drop-in: kafka-coop commits on the app's behalf only where confluent would ---------------------
def commit_after_batched_writes(factory: Factory, conf: dict[str, Any], topic: str, records: int) -> None:
    """Auto commit off; the application buffers, writes, and commits every 50 records; then closes."""
    consumer = factory(conf)
    consumer.subscribe([topic])
    for n, _msg in enumerate(take(consumer, records), start=1):
        if n % 50 == 0:  # the buffer is written: now it may be committed
            consumer.commit(asynchronous=False)
    consumer.close()


def test_with_auto_commit_off_close_commits_nothing_beyond_what_the_app_committed(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic = topic_factory(1)
    produce_keyed(bootstrap, topic, partitions=1, per_partition=80)
    results = {}
    for name, factory in CLIENTS.items():
        group = unique(f"batched-{name}")
        conf = consumer_conf(
            bootstrap, group, "cooperative-sticky", marks=False, **{"enable.auto.commit": "false"}
        )
        commit_after_batched_writes(factory, conf, topic, 70)
        results[name] = held(admin, group, topic)
    assert results == {"confluent": 50, "kafka-coop": 50}, "records 50-69 were never written"


def test_with_auto_commit_off_a_revoke_commits_nothing_beyond_what_the_app_committed(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic = topic_factory(1)
    produce_keyed(bootstrap, topic, partitions=1, per_partition=80)
    results = {}
    for name, factory in CLIENTS.items():
        group = unique(f"batched-revoke-{name}")
        conf = consumer_conf(bootstrap, group, "eager-range", marks=False, **{"enable.auto.commit": "false"})
        consumer = factory(conf)
        consumer.subscribe([topic])
        for n, _msg in enumerate(take(consumer, 60), start=1):
            if n % 50 == 0:
                consumer.commit(asynchronous=False)
        consumer.unsubscribe()  # a revoke of everything, served by the next poll
        consumer.poll(1.0)
        results[name] = held(admin, group, topic)
        consumer.close()
    assert results == {"confluent": 50, "kafka-coop": 50}, "records 50-59 were never written"


@pytest.mark.parametrize("auto_commit", [True, False])
def test_commit_of_a_message_with_auto_store_off_is_never_rewound(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    auto_commit: bool,
) -> None:
    """confluent's at-least-once pattern: auto store off, no store_offsets, `commit(message=msg)` after
    each write. Idle polling (interval commits) and close must keep what the application committed."""
    topic = topic_factory(1)
    produce_keyed(bootstrap, topic, partitions=1, per_partition=30)
    results = {}
    for name, factory in CLIENTS.items():
        group = unique(f"commit-message-{name}")
        conf = consumer_conf(
            bootstrap,
            group,
            "cooperative-sticky",
            marks=True,
            **{"enable.auto.commit": str(auto_commit).lower(), "auto.commit.interval.ms": 100},
        )
        consumer = factory(conf)
        consumer.subscribe([topic])
        for msg in take(consumer, 30):
            consumer.commit(message=msg, asynchronous=False)
        idle_until = time.monotonic() + 1.0
        while time.monotonic() < idle_until:  # interval commits fall due meanwhile
            consumer.poll(0.1)
        after_idle = held(admin, group, topic)
        consumer.close()
        results[name] = (after_idle, held(admin, group, topic))
    assert results == {"confluent": (30, 30), "kafka-coop": (30, 30)}


# --- explicit marks: never past an unfinished record, whoever commits -----------------------------
def test_an_asyncio_interval_commit_never_passes_the_batch_its_own_call_returns(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic = topic_factory(1)
    produce_keyed(bootstrap, topic, partitions=1, per_partition=100)
    group = unique("aio-interval")
    conf = consumer_conf(
        bootstrap, group, "cooperative-sticky", marks=True, **{"auto.commit.interval.ms": 300}
    )

    async def run() -> int | None:
        async with CoopAIOConsumer(conf) as consumer:
            await consumer.subscribe([topic])
            first: list[Any] = []
            while len(first) < 50:
                first += [m for m in await consumer.consume(50 - len(first), 1.0) if not m.error()]
            for msg in first:
                await consumer.mark_done(msg)
            await asyncio.sleep(0.5)  # the interval falls due: the next call commits
            second: list[Any] = []
            while len(second) < 50:
                second += [m for m in await consumer.consume(50 - len(second), 1.0) if not m.error()]
            await asyncio.sleep(1.0)  # the interval commit made inside that call has landed
            at = held(admin, group, topic)
            for msg in second:
                await consumer.mark_done(msg)
            return at

    assert asyncio.run(asyncio.wait_for(run(), 60)) == 50, "records 50-99 were in flight, not marked"


def test_a_commit_from_another_thread_never_passes_an_unmarked_record(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    """One thread polls and marks every record but offset 10; another commits in a loop while records
    trickle in (its commit reads the ledger while a `poll` runs on the first thread)."""
    topic = topic_factory(1)
    group = unique("thread-commit")
    conf = consumer_conf(
        bootstrap, group, "cooperative-sticky", marks=True, **{"enable.auto.commit": "false"}
    )
    consumer = CoopConsumer(conf)
    consumer.subscribe([topic])
    wait_for(lambda: consumer.poll(0.2) is None and bool(consumer.owned), 30, what="the partition")
    stop = threading.Event()
    highest: list[int] = []
    seen: list[int] = []

    def poller() -> None:
        while not stop.is_set():
            msg = consumer.poll(1.0)
            if msg is not None and not msg.error():
                seen.append(msg.offset())
            if msg is not None and not msg.error() and msg.offset() != 10:
                consumer.mark_done(msg)

    def committer() -> None:
        while not stop.is_set():
            with contextlib.suppress(KafkaException):  # _NO_OFFSET: nothing new
                highest.extend(tp.offset for tp in consumer.commit(asynchronous=False) if tp.offset >= 0)
            time.sleep(0.005)

    threads = [threading.Thread(target=poller), threading.Thread(target=committer)]
    for t in threads:
        t.start()
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(40):
        producer.produce(topic, f"0-{i}".encode(), partition=0)
        producer.flush(10)
        time.sleep(0.02)
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(10)
    assert sorted(seen) == list(range(40))
    final = consumer.commit(asynchronous=False)  # every record but 10 is marked now
    consumer.close()
    assert highest and max(highest) <= 10, f"committed up to {max(highest, default=None)}: 10 never finished"
    assert [tp.offset for tp in final] == [10] and held(admin, group, topic) == 10


def test_an_asynchronous_commit_with_nothing_new_reports_no_offset_through_on_commit(
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    """confluent reports it through the callback, inside the next poll, with the assigned partitions."""
    topic = topic_factory(1)
    produce_keyed(bootstrap, topic, partitions=1, per_partition=3)
    reported = {}
    for name, factory in CLIENTS.items():
        seen: list[tuple[Any, Any]] = []
        conf = consumer_conf(
            bootstrap,
            unique(f"no-offset-{name}"),
            "cooperative-sticky",
            marks=False,
            on_commit=lambda err, partitions, seen=seen: seen.append((err, partitions)),
        )
        consumer = factory(conf)
        consumer.subscribe([topic])
        list(take(consumer, 3))
        consumer.commit(asynchronous=False)
        assert consumer.commit(asynchronous=True) is None
        for _ in range(3):
            consumer.poll(0.2)
        consumer.close()
        reported[name] = [  # (a synchronous commit's own callback is not compared)
            (err.code(), [(tp.topic, tp.partition, tp.offset) for tp in parts])
            for err, parts in seen
            if err is not None
        ]
    assert reported["kafka-coop"] == reported["confluent"] == [(KafkaError._NO_OFFSET, [(topic, 0, -1001)])]


# --- a commit refused during a rebalance ---------------------------------------------------------
def test_an_interval_commit_refused_during_a_rebalance_is_made_as_soon_as_it_ends(
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    """A cooperative rebalance's second round: the interval commit that falls due between the revoke and
    the next assignment carries the old generation (ILLEGAL_GENERATION). It is made again by the first
    call after the assignment, not an interval (2.5 s) later: a kill in between redelivers less."""
    topic = topic_factory(4)
    group = unique("retry-after-rebalance")
    stop = threading.Event()

    def produce() -> None:
        producer = Producer({"bootstrap.servers": bootstrap})
        while not stop.is_set():
            for p in range(4):
                producer.produce(topic, b"x", partition=p)
            producer.poll(0)
            time.sleep(0.005)
        producer.flush(5)

    def serve(consumer: Any) -> None:  # the second member joins, and serves its rebalances
        for _ in range(300):
            consumer.poll(0.1)

    feeder = threading.Thread(target=produce, daemon=True)
    feeder.start()
    commits: list[tuple[float, int | None]] = []
    assigned: list[float] = []
    conf = consumer_conf(
        bootstrap,
        group,
        "cooperative-sticky",
        marks=False,
        **{"auto.commit.interval.ms": 2500},
        on_commit=lambda err, _parts: commits.append((time.monotonic(), err.code() if err else None)),
    )
    member = CoopConsumer(
        conf, events=lambda e: assigned.append(time.monotonic()) if e.kind == "assigned" else None
    )
    member.subscribe([topic])
    other = None
    refused = (KafkaError.ILLEGAL_GENERATION, KafkaError.REBALANCE_IN_PROGRESS, KafkaError.UNKNOWN_MEMBER_ID)
    try:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            member.poll(0.05)
            if other is None and len(assigned) >= 1 and any(code is None for _, code in commits):
                other = Consumer(consumer_conf(bootstrap, group, "cooperative-sticky", marks=False))
                other.subscribe([topic])
                threading.Thread(target=serve, args=(other,), daemon=True).start()
            failed = [t for t, code in commits if code in refused]
            if failed and any(t > failed[0] and code is None for t, code in commits):
                break
    finally:
        stop.set()
        member.close()
    failed = [t for t, code in commits if code in refused]
    assert failed, f"no interval commit fell inside the rebalance: {commits}"
    ended = min(t for t in assigned if t > failed[0])
    retried = min(t for t, code in commits if t > failed[0] and code is None)
    assert retried - ended < 0.6, f"made {retried - ended:.2f} s after the rebalance ended"


# --- explicit marks across an eager rebalance ------------------------------------------------------
def test_marks_of_records_handed_out_before_an_eager_rebalance_that_gives_the_partition_back_count(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    """The application marks records it was handed before an eager rebalance (every partition revoked,
    the same one assigned again): confluent accepts the store of a partition assigned again and commits
    it on close; so must kafka-coop (nothing unfinished below it)."""
    topic, other = topic_factory(1), topic_factory(1)
    produce_keyed(bootstrap, topic, partitions=1, per_partition=40)
    results = {}
    for name, factory in CLIENTS.items():
        group = unique(f"eager-back-{name}")
        consumer = factory(consumer_conf(bootstrap, group, "eager-range", marks=True))
        consumer.subscribe([topic])
        first = list(take(consumer, 40))
        consumer.subscribe([topic, other])  # an eager rebalance: revoke everything, assign it back
        # served by poll(0), which returns before fetching starts again: nothing is handed out anew
        wait_for(
            lambda consumer=consumer: [consumer.poll(0)] and len(consumer.assignment()) == 2,
            30,
            what="the assignment of both topics",
        )
        for msg in first:
            consumer.store_offsets(message=msg)
        consumer.close()
        results[name] = held(admin, group, topic)
    assert results == {"confluent": 40, "kafka-coop": 40}


# --- store_offsets of a partition this member does not own -----------------------------------------
def outcome(call: Callable[[], Any]) -> str:
    """`ok`, or the KafkaError name a call raised."""
    try:
        call()
    except KafkaException as exc:
        return str(exc.args[0].name())
    return "ok"


def test_store_offsets_of_a_partition_not_owned_is_refused_as_confluent_refuses_it(
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic, other = topic_factory(1), topic_factory(1)
    produce_keyed(bootstrap, topic, partitions=1, per_partition=3)
    results = {}
    for name, factory in CLIENTS.items():
        consumer = factory(
            consumer_conf(bootstrap, unique(f"store-unowned-{name}"), "eager-range", marks=True)
        )
        consumer.subscribe([topic])
        msg = next(take(consumer, 1))
        never = outcome(
            lambda consumer=consumer: consumer.store_offsets(offsets=[TopicPartition(other, 0, 1)])
        )
        mixed = outcome(
            lambda consumer=consumer, msg=msg: consumer.store_offsets(
                offsets=[TopicPartition(other, 0, 1), TopicPartition(topic, 0, msg.offset() + 1)]
            )
        )
        consumer.unsubscribe()  # the revoke is served by the next poll
        consumer.poll(1.0)
        revoked = outcome(lambda consumer=consumer, msg=msg: consumer.store_offsets(message=msg))
        consumer.close()
        results[name] = (never, mixed, revoked)
    assert results["confluent"] == ("_UNKNOWN_PARTITION", "ok", "_STATE")
    assert results["kafka-coop"] == results["confluent"]


# --- a synchronous commit's on_commit ----------------------------------------------------------------
def test_the_commit_close_makes_is_reported_to_on_commit_as_confluent_reports_it(
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic = topic_factory(1)
    produce_keyed(bootstrap, topic, partitions=1, per_partition=3)
    reported = {}
    for name, factory in CLIENTS.items():
        seen: list[tuple[Any, Any]] = []
        conf = consumer_conf(
            bootstrap,
            unique(f"sync-on-commit-{name}"),
            "cooperative-sticky",
            marks=False,
            on_commit=lambda err, partitions, seen=seen: seen.append((err, partitions)),
        )
        consumer = factory(conf)
        consumer.subscribe([topic])
        list(take(consumer, 3))
        consumer.commit(asynchronous=False)
        after_commit = len(seen)
        with contextlib.suppress(KafkaException):  # nothing new: _NO_OFFSET
            consumer.commit(asynchronous=False)
        after_second = len(seen)
        for _ in range(3):
            consumer.poll(0.2)
        after_polls = len(seen)
        consumer.close()
        reported[name] = (
            (after_commit, after_second, after_polls),
            [
                (err.code() if err else None, [(tp.topic, tp.partition, tp.offset) for tp in parts])
                for err, parts in seen
            ],
        )
    assert reported["kafka-coop"] == reported["confluent"]


# --- a call interrupted while it waited for records ------------------------------------------------
class Interrupted(Exception):
    """Raised by the test's SIGALRM handler inside the client's call (as Ctrl-C raises KeyboardInterrupt)."""


def interrupt_after(seconds: float, call: Callable[[], Any]) -> bool:
    """Run `call`, raising Interrupted in it after `seconds`; whether it was interrupted."""

    def handler(_signum: int, _frame: Any) -> None:
        raise Interrupted

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        call()
    except Interrupted:
        return True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return False


@pytest.mark.parametrize("how", ["poll-c", "poll-python", "consume"])
def test_a_call_interrupted_while_waiting_for_records_delivers_nothing_again(
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    """confluent-kafka checks for signals between 200 ms waits of a `poll`/`consume`, and a call
    interrupted there took no record: nothing may be sought back (every record would come again)."""
    if how == "poll-python":
        monkeypatch.setattr(_core, "FastPoll", None)
    topic = topic_factory(2)
    produce_keyed(bootstrap, topic, partitions=2, per_partition=5)
    again = {}
    for name, factory in CLIENTS.items():
        conf = consumer_conf(
            bootstrap,
            unique(f"interrupted-{name}"),
            "cooperative-sticky",
            marks=False,
            **{"enable.auto.commit": "false"},
        )
        consumer = factory(conf)
        consumer.subscribe([topic])
        assert len(list(take(consumer, 10))) == 10
        consumer.poll(0.3)  # the service idles
        if how == "consume":
            assert interrupt_after(0.5, lambda consumer=consumer: consumer.consume(10, 2.0))
        else:
            assert interrupt_after(0.5, lambda consumer=consumer: consumer.poll(2.0))
        redelivered = 0
        until = time.monotonic() + 1.0
        while time.monotonic() < until:
            redelivered += len([m for m in consumer.consume(10, 0.2) if not m.error()])
        consumer.close()
        again[name] = redelivered
    assert again == {"confluent": 0, "kafka-coop": 0}

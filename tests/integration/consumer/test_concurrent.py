"""Records processed concurrently (worker threads, one asyncio task per record), marked done out of order.

What services do with `mark_done`: hand each record to a worker and mark it when the worker is done, and
drain the work in flight in `on_revoked` (docs/consumer.md). The committed offsets are read back from
the broker; a partition's commit never passes a record that was not finished.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopAIOConsumer, CoopConsumer
from kafka_coop.events import RebalanceEvent
from tests.integration.consumer.members import (
    ThreadMember,
    committed_offsets,
    consumer_conf,
    produce_keyed,
    wait_for,
)

REBALANCES = ["eager-range", "cooperative-sticky", "consumer"]
DRAIN_TIMEOUT_S = 10.0
WORK_S = 0.2


def marking_conf(bootstrap: str, group: str, rebalance: str, name: str, **extra: Any) -> dict[str, Any]:
    return consumer_conf(bootstrap, group, rebalance, marks=True, **{"client.id": name, **extra})


def assert_commits_never_pass_unfinished_work(
    committed: dict[tuple[str, int], int | None], finished: dict[tuple[str, int], set[int]]
) -> None:
    for part, offset in committed.items():
        if offset is None:
            continue
        unfinished = set(range(offset)) - finished.get(part, set())
        assert not unfinished, f"{part}: committed {offset} past unfinished {sorted(unfinished)[:10]}"


@pytest.mark.parametrize("rebalance", REBALANCES)
def test_on_revoked_that_drains_worker_threads_gets_their_marks_committed_without_stalling(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
) -> None:
    topic = topic_factory(4)
    group = unique(f"drain-threads-{rebalance}")
    produce_keyed(bootstrap, topic, partitions=4, per_partition=40)
    # One worker per partition (records of a partition in order, partitions in parallel): when the revoke
    # comes, every partition has a record in the middle of its processing.
    pools = {p: concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"worker-{p}") for p in range(4)}
    futures: dict[tuple[str, int], list[concurrent.futures.Future[None]]] = {}
    finished: dict[tuple[str, int], set[int]] = {}
    at_revoke: dict[tuple[str, int], int] = {}  # the first record of each revoked partition not finished
    events: list[RebalanceEvent] = []
    stop = threading.Event()
    consumer: CoopConsumer

    def process(msg: Any) -> None:
        time.sleep(WORK_S)
        finished.setdefault((msg.topic(), msg.partition()), set()).add(msg.offset())
        consumer.mark_done(msg)

    def on_revoked(partitions: list[tuple[str, int]]) -> None:
        """Abandon what has not started, finish what has (the docs' drain)."""
        running = []
        for part in partitions:
            for future in futures.pop(part, []):
                if not future.cancel():
                    running.append(future)
        concurrent.futures.wait(running, timeout=DRAIN_TIMEOUT_S)
        for part in partitions:  # the first revoke's (close revokes what came back, later)
            at_revoke.setdefault(part, min(set(range(41)) - finished.get(part, set())))

    consumer = CoopConsumer(
        marking_conf(bootstrap, group, rebalance, "drains"), on_revoked=on_revoked, events=events.append
    )

    def serve() -> None:
        consumer.subscribe([topic])
        while not stop.is_set():
            msg = consumer.poll(0.1)
            if msg is None or msg.error():
                continue
            pool = pools[msg.partition()]
            futures.setdefault((msg.topic(), msg.partition()), []).append(pool.submit(process, msg))
        consumer.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    joiner: ThreadMember | None = None
    try:
        wait_for(lambda: sum(len(f) for f in futures.values()) == 160, what="every record handed to a worker")
        joiner = ThreadMember(bootstrap, group, [topic], rebalance, "joins")
        wait_for(lambda: any(e.kind == "revoked" for e in events), timeout_s=60, what="the revoke")
        revoked = next(e for e in events if e.kind == "revoked")
        broker = committed_offsets(admin, group)
    finally:
        stop.set()
        thread.join(60)
        for pool in pools.values():
            pool.shutdown(wait=True, cancel_futures=True)
        if joiner is not None:
            joiner.stop()
    assert revoked.callback_ms < DRAIN_TIMEOUT_S * 1000 / 2, f"the drain stalled: {revoked.callback_ms} ms"
    failed = [f.exception() for fs in futures.values() for f in fs if not f.cancelled() and f.exception()]
    assert not failed, failed
    reported = {(t, p): o for t, p, o in revoked.committed or ()}
    assert reported == {part: at_revoke[part] for part in revoked.partitions}, (reported, at_revoke)
    assert_commits_never_pass_unfinished_work(broker, finished)


class Feeder:
    """Produces to `topic` round-robin over its partitions at about `rate` records/s until stopped."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float) -> None:
        self.produced = 0
        self._stop = threading.Event()
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self._topic, self._partitions, self._rate = topic, partitions, rate
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for _ in range(10):
                self._producer.produce(self._topic, b"x", partition=self.produced % self._partitions)
                self.produced += 1
            self._producer.poll(0)
            time.sleep(10 / self._rate)

    def stop(self) -> int:
        """Stop producing; returns how many records were produced (all delivered)."""
        self._stop.set()
        self._thread.join(30)
        assert self._producer.flush(30) == 0
        return self.produced


def finished_anywhere(*sources: dict[tuple[str, int], Any]) -> dict[tuple[str, int], set[int]]:
    out: dict[tuple[str, int], set[int]] = {}
    for source in sources:
        for part, offsets in source.items():
            out.setdefault(part, set()).update(offsets)
    return out


class PipelinedService:
    """An asyncio service: a consume loop, and one task per record that marks it done when finished.

    Runs on its own thread with its own event loop; `on_revoked` waits for the revoked partitions' tasks.
    """

    def __init__(self, conf: dict[str, Any], topic: str, *, max_workers: int = 8) -> None:
        self.conf, self.topic, self.max_workers = conf, topic, max_workers
        self.events: list[RebalanceEvent] = []
        self.finished: dict[tuple[str, int], set[int]] = {}
        self.tasks: dict[tuple[str, int], set[asyncio.Task[None]]] = {}
        self.ended: BaseException | None = None
        self.consumed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:
            self.ended = exc

    async def _serve(self) -> None:
        async def on_revoked(partitions: list[tuple[str, int]]) -> None:
            waiting = [t for part in partitions for t in self.tasks.pop(part, set())]
            if waiting:
                await asyncio.wait(waiting, timeout=DRAIN_TIMEOUT_S)

        async with CoopAIOConsumer(
            self.conf, events=self.events.append, on_revoked=on_revoked, max_workers=self.max_workers
        ) as consumer:

            async def process(msg: Any) -> None:
                await asyncio.sleep(WORK_S * (msg.offset() % 3) / 2)  # finishes out of order
                self.finished.setdefault((msg.topic(), msg.partition()), set()).add(msg.offset())
                await consumer.mark_done(msg)

            await consumer.subscribe([self.topic])
            while not self._stop.is_set():
                for msg in await consumer.consume(num_messages=100, timeout=0.2):
                    if msg.error() is not None:
                        continue
                    self.consumed += 1
                    task = asyncio.create_task(process(msg))
                    part = (msg.topic(), msg.partition())
                    self.tasks.setdefault(part, set()).add(task)
                    task.add_done_callback(self.tasks[part].discard)
            await asyncio.gather(*(t for ts in self.tasks.values() for t in ts))

    def stop(self, timeout_s: float = 60.0) -> bool:
        self._stop.set()
        self._thread.join(timeout_s)
        return not self._thread.is_alive()


@pytest.mark.parametrize("rebalance", REBALANCES)
def test_an_asyncio_on_revoked_that_awaits_its_tasks_gets_their_marks_committed_without_stalling(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
) -> None:
    """Records keep coming, so tasks are always in flight when the revoke arrives."""
    topic = topic_factory(4)
    group = unique(f"drain-tasks-{rebalance}")
    feeder = Feeder(bootstrap, topic, 4, rate=200)
    service = PipelinedService(marking_conf(bootstrap, group, rebalance, "pipelined"), topic, max_workers=100)
    joiner: ThreadMember | None = None
    try:
        wait_for(lambda: service.consumed > 200, what="the service to take records")
        joiner = ThreadMember(bootstrap, group, [topic], rebalance, "joins")
        wait_for(lambda: any(e.kind == "revoked" for e in service.events), timeout_s=60, what="the revoke")
        revoked = next(e for e in service.events if e.kind == "revoked")
    finally:
        feeder.stop()
        stopped = service.stop()
        if joiner is not None:
            joiner.stop()
    broker = committed_offsets(admin, group)
    assert stopped, "the service did not stop"
    assert service.ended is None, service.ended
    assert revoked.callback_ms < DRAIN_TIMEOUT_S * 1000 / 2, f"the drain stalled: {revoked.callback_ms} ms"
    assert revoked.committed, f"nothing committed on revoke: {revoked}"
    assert joiner is not None
    assert_commits_never_pass_unfinished_work(broker, finished_anywhere(service.finished, joiner.processed))


def test_a_pipelined_asyncio_service_with_a_small_pool_goes_through_a_rebalance_under_load(
    bootstrap: str, admin: ClusterAdmin, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    """Each mark_done issued while a consume was in flight used to park a pool worker; the rebalance's
    next step then found none free and the service hung for good."""
    topic = topic_factory(4)
    group = unique("pipelined-load")
    rebalance = "cooperative-sticky"
    feeder = Feeder(bootstrap, topic, 4, rate=1000)
    service = PipelinedService(marking_conf(bootstrap, group, rebalance, "pipelined"), topic, max_workers=8)
    joiner: ThreadMember | None = None
    try:
        wait_for(lambda: service.consumed > 2000, timeout_s=60, what="the service to run under load")
        joiner = ThreadMember(bootstrap, group, [topic], rebalance, "joins")
        wait_for(lambda: any(e.kind == "revoked" for e in service.events), timeout_s=60, what="the revoke")
        after = service.consumed
        wait_for(lambda: service.consumed > after + 500, timeout_s=30, what="consuming after the rebalance")
        total = feeder.stop()

        def everything_committed() -> bool:
            time.sleep(0.5)
            return sum(v or 0 for v in committed_offsets(admin, group).values()) == total

        wait_for(everything_committed, timeout_s=60, what="every record committed")
    finally:
        feeder.stop()
        stopped = service.stop()
        if joiner is not None:
            joiner.stop()
    assert stopped, "the service hung"
    assert service.ended is None, service.ended
    assert joiner is not None
    broker = committed_offsets(admin, group)
    assert_commits_never_pass_unfinished_work(broker, finished_anywhere(service.finished, joiner.processed))

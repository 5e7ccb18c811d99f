"""The offset contract from where services stand: both drivers, all three protocols, read back.

- **defaults**: librdkafka's defaults (auto commit on, auto offset store on), a loop that neither marks
  nor commits; processing record 6 of partition 0 raises: the broker holds everything before it, not it.
- **drop-in**: code written for confluent-kafka, run unchanged with `Consumer`/`AIOConsumer` and with the
  kafka-coop class in its place: the broker holds the same offsets for both.
- **concurrent**: explicit marks from 8 threads (sync) or one task per record (asyncio), completed out of
  order, some records never finished: each partition's commit is its lowest unfinished record.
- **cancellation**: Ctrl-C (SIGINT) in a sync service, inside `poll` or not; awaits cancelled by
  `asyncio.wait_for` under asyncio: no record is lost, none is committed unseen.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.aio import AIOConsumer

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopAIOConsumer, CoopConsumer
from tests.integration.consumer.members import (
    committed_offsets,
    consumer_conf,
    produce_keyed,
    wait_for,
)

REBALANCES = ["eager-range", "cooperative-sticky", "consumer"]
DRIVERS = ["sync", "asyncio"]
ROOT = Path(__file__).resolve().parents[3]
PARTITIONS, PER_PARTITION = 2, 20


class ProcessingError(Exception):
    pass


def defaults(bootstrap: str, group: str, rebalance: str, **extra: Any) -> dict[str, Any]:
    """librdkafka's defaults for everything about offsets: only the start and the protocol are set."""
    return consumer_conf(bootstrap, group, rebalance, marks=False, **extra)


def run_sync_or_async(driver: str, sync: Callable[[], Any], aio: Callable[[], Awaitable[Any]]) -> Any:
    return sync() if driver == "sync" else asyncio.run(asyncio.wait_for(aio(), 120))  # type: ignore[arg-type]


# --- defaults ------------------------------------------------------------------------------------
@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("rebalance", REBALANCES)
def test_under_librdkafkas_defaults_a_raised_record_is_not_committed_and_everything_before_it_is(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
    driver: str,
) -> None:
    topic = topic_factory(PARTITIONS)
    group = unique(f"defaults-{driver}-{rebalance}")
    produce_keyed(bootstrap, topic, partitions=PARTITIONS, per_partition=PER_PARTITION)
    conf = defaults(bootstrap, group, rebalance)
    processed: dict[int, list[int]] = {}

    def process(msg: Any) -> None:
        if (msg.partition(), msg.offset()) == (0, 6):
            raise ProcessingError("the database write failed")
        processed.setdefault(msg.partition(), []).append(msg.offset())

    def sync() -> None:
        with CoopConsumer(conf) as consumer:
            consumer.subscribe([topic])
            while True:
                msg = consumer.poll(0.5)
                if msg is not None and not msg.error():
                    process(msg)

    async def aio() -> None:
        async with CoopAIOConsumer(conf) as consumer:
            await consumer.subscribe([topic])
            while True:
                for msg in await consumer.consume(5, 0.5):  # a batch: the raise is in its middle
                    if not msg.error():
                        process(msg)

    with pytest.raises(ProcessingError):
        run_sync_or_async(driver, sync, aio)
    committed = committed_offsets(admin, group)
    done_1 = processed.get(1, [])
    assert processed[0] == list(range(6)) and done_1 == list(range(len(done_1))), "in order, from the start"
    if driver == "sync":  # one record per poll: every record polled past was processed, 6 was not
        assert committed[(topic, 0)] == 6 and committed.get((topic, 1)) == (len(done_1) or None)
    else:  # the batch in hand when processing raised is not done: what it held comes again
        assert (committed[(topic, 0)] or 0) <= 6 and (committed.get((topic, 1)) or 0) <= len(done_1)


# --- drop-in: confluent code, unchanged ----------------------------------------------------------
def confluent_service(consumer: Any, topic: str, records: int) -> None:
    """A service written for confluent_kafka.Consumer: poll, process, commit every 7 records, close."""
    consumer.subscribe([topic])
    seen = 0
    while seen < records:
        msg = consumer.poll(1.0)
        if msg is None or msg.error():
            continue
        seen += 1
        if seen % 7 == 0:
            consumer.commit(asynchronous=False)
    consumer.close()


async def confluent_aio_service(consumer: Any, topic: str, records: int) -> None:
    """The same, written for confluent_kafka.aio.AIOConsumer."""
    await consumer.subscribe([topic])
    seen = 0
    while seen < records:
        for msg in await consumer.consume(3, 1.0):
            if msg.error():
                continue
            seen += 1
            if seen % 7 == 0:
                await consumer.commit(asynchronous=False)
            if seen == records:
                break
    await consumer.close()


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("rebalance", REBALANCES)
def test_confluent_code_run_unchanged_on_the_kafka_coop_class_commits_what_confluent_commits(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
    driver: str,
) -> None:
    topic = topic_factory(1)
    produce_keyed(bootstrap, topic, partitions=1, per_partition=PER_PARTITION)
    held: dict[str, dict[tuple[str, int], int | None]] = {}
    for side in ("confluent", "kafka-coop"):
        group = unique(f"dropin-{driver}-{rebalance}-{side}")
        conf = defaults(bootstrap, group, rebalance)
        if driver == "sync":
            confluent_service((Consumer if side == "confluent" else CoopConsumer)(conf), topic, 17)
        else:

            async def run(side: str = side, conf: dict[str, Any] = conf) -> None:
                consumer = AIOConsumer(dict(conf)) if side == "confluent" else CoopAIOConsumer(conf)
                await confluent_aio_service(consumer, topic, 17)

            asyncio.run(asyncio.wait_for(run(), 120))
        held[side] = committed_offsets(admin, group)
    assert held["kafka-coop"] == held["confluent"], held
    assert held["kafka-coop"][(topic, 0)] is not None and held["kafka-coop"][(topic, 0)] >= 14


# --- concurrent marks ----------------------------------------------------------------------------
@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("rebalance", REBALANCES)
def test_marks_from_many_threads_or_tasks_out_of_order_never_commit_past_an_unfinished_record(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
    driver: str,
) -> None:
    topic = topic_factory(PARTITIONS)
    group = unique(f"concurrent-{driver}-{rebalance}")
    produce_keyed(bootstrap, topic, partitions=PARTITIONS, per_partition=PER_PARTITION)
    conf = defaults(bootstrap, group, rebalance, **{"enable.auto.offset.store": "false"})
    never = {(0, 5), (0, 12), (1, 17)}  # failed: never marked done
    total = PARTITIONS * PER_PARTITION
    finished: set[tuple[int, int]] = set()

    def sync() -> None:
        pool = concurrent.futures.ThreadPoolExecutor(8)
        with CoopConsumer(conf) as consumer:

            def work(msg: Any) -> None:
                time.sleep(random.random() / 50)  # out of order
                if (msg.partition(), msg.offset()) not in never:
                    finished.add((msg.partition(), msg.offset()))
                    consumer.mark_done(msg)

            consumer.subscribe([topic])
            futures = []
            while len(futures) < total:
                msg = consumer.poll(0.5)
                if msg is not None and not msg.error():
                    futures.append(pool.submit(work, msg))
            while not all(f.done() for f in futures):
                consumer.poll(0.05)
        pool.shutdown()

    async def aio() -> None:
        async with CoopAIOConsumer(conf) as consumer:

            async def work(msg: Any) -> None:
                await asyncio.sleep(random.random() / 50)
                if (msg.partition(), msg.offset()) not in never:
                    finished.add((msg.partition(), msg.offset()))
                    await consumer.mark_done(msg)

            await consumer.subscribe([topic])
            tasks: list[asyncio.Task[None]] = []
            while len(tasks) < total:
                for msg in await consumer.consume(10, 0.5):
                    if not msg.error():
                        tasks.append(asyncio.create_task(work(msg)))
            await asyncio.gather(*tasks)

    run_sync_or_async(driver, sync, aio)
    assert committed_offsets(admin, group) == {(topic, 0): 5, (topic, 1): 17}
    assert len(finished) == total - len(never)


# --- cancellation --------------------------------------------------------------------------------
def _read_processed(path: Path) -> set[tuple[int, int]]:
    if not path.exists():
        return set()
    return {(int(p), int(o)) for p, o in (line.split() for line in path.read_text().splitlines() if line)}


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("rebalance", REBALANCES)
def test_cancelling_loses_no_record_and_commits_none_unseen(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    tmp_path: Path,
    rebalance: str,
    driver: str,
) -> None:
    topic = topic_factory(PARTITIONS)
    group = unique(f"cancel-{driver}-{rebalance}")
    total = PARTITIONS * PER_PARTITION * 5
    produce_keyed(bootstrap, topic, partitions=PARTITIONS, per_partition=PER_PARTITION * 5)
    if driver == "sync":
        out = tmp_path / "processed"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        argv = [sys.executable, "-m", "testbed.interrupt_member"]
        service = subprocess.Popen([*argv, bootstrap, group, topic, rebalance, str(out)], cwd=ROOT, env=env)
        try:
            wait_for(lambda: len(_read_processed(out)) >= 40, timeout_s=60, what="the service to process")
            service.send_signal(signal.SIGINT)  # Ctrl-C, wherever the loop is
            assert service.wait(30) == 130
        finally:
            if service.poll() is None:
                service.kill()
        processed = _read_processed(out)
    else:
        processed = set()

        async def service() -> None:
            async with CoopAIOConsumer(defaults(bootstrap, group, rebalance)) as consumer:
                await consumer.subscribe([topic])
                rng = random.Random(5)
                deadline = time.monotonic() + 60
                while len(processed) < total // 2 and time.monotonic() < deadline:
                    try:
                        batch = await asyncio.wait_for(
                            consumer.consume(7, 0.5), rng.choice([0.001, 0.01, 0.1])
                        )
                    except TimeoutError:
                        continue  # cancelled: what the call took comes again
                    processed.update((m.partition(), m.offset()) for m in batch if not m.error())

        asyncio.run(asyncio.wait_for(service(), 120))
    committed = committed_offsets(admin, group)
    for p in range(PARTITIONS):
        upto = committed.get((topic, p)) or 0
        missing = sorted(o for o in range(upto) if (p, o) not in processed)
        assert not missing, f"partition {p}: committed {upto}, never processed {missing[:10]}"
    # and the rest is still there for the next owner: reading from the commit covers everything
    assert sum((committed.get((topic, p)) or 0) for p in range(PARTITIONS)) <= len(processed) <= total

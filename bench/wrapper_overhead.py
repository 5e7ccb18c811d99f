"""Wrapper overhead: each kafka-coop consumer against the confluent-kafka consumer it wraps.

Five pairs on the same records: `CoopConsumer` vs a raw `confluent_kafka.Consumer` (driver "sync"),
`CoopAIOConsumer` vs a raw `confluent_kafka.aio.AIOConsumer` (driver "asyncio", each run in its own
`asyncio.run`), `CoopConsumer.poll` vs `Consumer.poll` one record per call (driver "sync-poll": a
service that calls `poll(timeout)` per record instead of `consume`, where the wrapper's frame is paid
per record, not per batch); then, with explicit marks on both sides (`enable.auto.offset.store=false`),
the README loop `poll` + `mark_done` vs `poll` + `store_offsets` (driver "poll-mark"), and 8 worker
threads marking the records of `consume` batches vs one thread storing them (driver "threads-mark":
concurrent marks cost the polling thread nothing, where a raw consumer's `store_offsets` from 8 threads
would queue behind its client lock, so the raw side stores from the polling thread itself).

One topic (12 partitions) is filled once with N small records; then,
interleaved (raw, wrapped / wrapped, raw / ..., the pairs one after the other in each round), a fresh
consumer in a fresh group reads all N records from the earliest offset. Both sides get the same
librdkafka conf (cooperative-sticky, auto.offset.reset=earliest, the same auto-commit and fetch settings,
fetch.queue.backoff.ms=10 so neither side idles in librdkafka's fetch back-off; the wrapper's rendered
conf is checked to equal the raw one) and run the same loop: `consume(num_messages=BATCH, timeout=1)`
(awaited under asyncio; `poll(timeout=1)` per record for sync-poll), check `error()` on every message,
stop at N. The wrapper's events go to a
MemorySink.

Per run it records wall-clock timestamps (construct, subscribe, first batch, last record, closed), the
record counts, the process CPU time (all threads, librdkafka's and the executor's included) and the
1-minute load average when it ended. Throughput is measured from the first batch to the last record
(the steady consume path); the end-to-end rate, from construction to the last record, adds settings
validation, the group join and the assign callback.

Figure, per driver: the median over rounds of wrapped/raw throughput, target >= 0.97
(`throughput_ratio` for sync, `aio_throughput_ratio`, `poll_throughput_ratio`,
`mark_throughput_ratio`; `threads_throughput_ratio` is reported without a target). Each round is a
back-to-back pair (order alternating), so the paired ratio cancels load that changes between rounds
(other jobs on a shared 2-core box); the unpaired median(wrapped) / median(raw) is reported too, but it
is not the gate:
when the machine's load steps up mid-run, which side has one more sample on the slow side of the step
decides it. The first pair of each driver is a warm-up (broker page cache, JIT, Python imports), kept
in `runs` but not in the figures.

Run: `.venv/bin/python -m bench --only wrapper_overhead` -> bench/results/wrapper-overhead.json/.png;
`--param drivers=sync-poll` runs one pair only (comma-separated: sync, asyncio, sync-poll, poll-mark,
threads-mark).
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from bench.harness.frame import (
    BenchArgs,
    BenchResult,
    Figure,
    Series,
    ab_order,
    main_for,
    new_result,
    sandbox,
)
from kafka_coop.admin import ClusterAdmin
from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION

NAME = "wrapper-overhead"
TITLE = "Wrapper overhead: CoopConsumer / CoopAIOConsumer vs raw confluent-kafka Consumer / AIOConsumer"
TOPIC = "bench-wrapper-overhead"
TARGET_RATIO = 0.97
RAW, WRAPPED = "raw", "wrapped"
SYNC, AIO, POLL, MARK, THREADS = "sync", "asyncio", "sync-poll", "poll-mark", "threads-mark"
DRIVERS = (SYNC, AIO, POLL, MARK, THREADS)
MARKING = (MARK, THREADS)  # explicit marks on both sides
MARKING_THREADS = 8
# figure and sample names: the sync ones keep their historical names
PREFIX = {SYNC: "", AIO: "aio_", POLL: "poll_", MARK: "mark_", THREADS: "threads_"}
WHAT = {
    SYNC: "CoopConsumer / Consumer",
    AIO: "CoopAIOConsumer / AIOConsumer",
    POLL: "CoopConsumer.poll / Consumer.poll, one record per call",
    MARK: "poll + mark_done / poll + store_offsets, one record per call",
    THREADS: f"consume + {MARKING_THREADS} threads marking / consume + store_offsets on the polling thread",
}
TARGETED = (SYNC, AIO, POLL, MARK)  # >= 0.97; the threads pair is reported, not gated

DEFAULTS: dict[str, int] = {
    "records": 1_000_000,
    "record_bytes": 100,
    "partitions": 12,
    "repeats": 25,  # measured pairs after one warm-up pair (a pair spreads ~0.05: docs/benchmarks.md)
    "batch": 1000,
}
QUICK: dict[str, int] = {"records": 200_000, "repeats": 3}
ALL_DRIVERS = ",".join(DRIVERS)
RUN_DEADLINE_S = 180.0
CONSUME_TIMEOUT_S = 1.0

PRODUCER_CONF: dict[str, Any] = {
    "linger.ms": 50,
    "batch.size": 1_000_000,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
    "compression.type": "none",
    "acks": "1",
}


def consumer_conf(bootstrap: str, group: str, *, marks: bool = False) -> dict[str, str]:
    """The one conf both sides get (`marks`: explicit marks, `enable.auto.offset.store=false`)."""
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "partition.assignment.strategy": "cooperative-sticky",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": "true",
        "enable.auto.offset.store": "false" if marks else "true",
        "enable.partition.eof": "false",
        # librdkafka pauses a partition's fetching for fetch.queue.backoff.ms (default 1000) whenever the
        # local queue is over queued.max.messages.kbytes (64 MiB); with 1 M records that made the run
        # ~70% idle waits of ~0.9 s, measuring the back-off rather than the consume path. Keep the
        # pipeline full, so the consumer's own work is the bottleneck on both sides.
        "fetch.queue.backoff.ms": "10",
    }


def produce(bootstrap: str, topic: str, records: int, record_bytes: int, partitions: int) -> float:
    """Fill `topic` round-robin over its partitions; returns seconds taken. Verified by watermarks."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONF})
    payload = b"x" * record_bytes
    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, payload, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    left = producer.flush(120)
    elapsed = time.perf_counter() - start
    if left:
        raise RuntimeError(f"{left} records were not delivered to {topic}")
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{uuid.uuid4().hex}"})
    try:
        stored = sum(
            probe.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)
        )
    finally:
        probe.close()
    if stored != records:
        raise RuntimeError(f"{topic} holds {stored} records, expected {records}")
    return elapsed


@dataclass
class Drained:
    first_at: float  # when the first non-empty batch returned
    first_n: int  # good records in that batch
    done_at: float  # when the last record was counted
    errors: int  # messages carrying an error (none expected)
    empty_polls: int  # consume() calls that returned nothing after the first batch
    max_gap_s: float  # longest wait between two non-empty batches (a stall shows here)


def _drain(consumer: Any, total: int, batch: int) -> Drained:
    """Consume until `total` good records. The loop is the same for both sides: the bound `consume`,
    a per-message error check, and one clock read per batch."""
    consume = consumer.consume
    clock = time.perf_counter
    n = errors = empty = 0
    first_at = last_at = 0.0
    first_n = 0
    max_gap = 0.0
    deadline = time.monotonic() + RUN_DEADLINE_S
    while n < total:
        msgs = consume(num_messages=batch, timeout=CONSUME_TIMEOUT_S)
        if not msgs:
            if time.monotonic() > deadline:
                raise RuntimeError(f"consumed only {n} of {total} records in {RUN_DEADLINE_S} s")
            empty += n > 0
            continue
        for msg in msgs:
            if msg.error() is None:
                n += 1
            else:
                errors += 1
        now = clock()
        if first_n == 0:
            first_at, first_n = now, n
        else:
            max_gap = max(max_gap, now - last_at)
        last_at = now
    return Drained(first_at, first_n, last_at, errors, empty, max_gap)


def _drain_poll(consumer: Any, total: int, batch: int) -> Drained:
    """The per-record loop of a service that polls: the bound `poll`, the error check, and no clock
    read per record (one at the first record, one at the last), so both sides pay only their poll."""
    poll = consumer.poll
    clock = time.perf_counter
    n = errors = empty = 0
    first_at = 0.0
    deadline = time.monotonic() + RUN_DEADLINE_S
    while n < total:
        msg = poll(CONSUME_TIMEOUT_S)
        if msg is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"consumed only {n} of {total} records in {RUN_DEADLINE_S} s")
            empty += n > 0
            continue
        if msg.error() is None:
            n += 1
            if n == 1:
                first_at = clock()
        else:
            errors += 1
    # max_gap_s is not measured per record (a clock read per record would be most of the cost)
    return Drained(first_at, 1, clock(), errors, empty, 0.0)


def _drain_poll_mark(consumer: Any, total: int, batch: int, mark: Any) -> Drained:
    """`_drain_poll` with one call per record that says it is done: `mark_done` or `store_offsets`."""
    poll = consumer.poll
    clock = time.perf_counter
    n = errors = empty = 0
    first_at = 0.0
    deadline = time.monotonic() + RUN_DEADLINE_S
    while n < total:
        msg = poll(CONSUME_TIMEOUT_S)
        if msg is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"consumed only {n} of {total} records in {RUN_DEADLINE_S} s")
            empty += n > 0
            continue
        if msg.error() is None:
            mark(msg)
            n += 1
            if n == 1:
                first_at = clock()
        else:
            errors += 1
    return Drained(first_at, 1, clock(), errors, empty, 0.0)


def _drain_marked(consumer: Any, total: int, batch: int, mark: Any, threads: int) -> Drained:
    """`_drain` where every record is marked: by `threads` worker threads (batches handed round-robin
    through queues), or on the polling thread itself when `threads` is 0. Done when the last is marked."""
    import queue
    import threading

    inboxes: list[queue.SimpleQueue[Any]] = [queue.SimpleQueue() for _ in range(threads)]
    marked = [0] * threads

    def worker(i: int) -> None:
        inbox = inboxes[i]
        while (msgs := inbox.get()) is not None:
            for msg in msgs:
                if msg.error() is None:
                    mark(msg)
                    marked[i] += 1

    workers = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
    for w in workers:
        w.start()
    consume = consumer.consume
    clock = time.perf_counter
    n = errors = empty = handed = 0
    first_at = 0.0
    first_n = 0
    deadline = time.monotonic() + RUN_DEADLINE_S
    while n < total:
        msgs = consume(num_messages=batch, timeout=CONSUME_TIMEOUT_S)
        if not msgs:
            if time.monotonic() > deadline:
                raise RuntimeError(f"consumed only {n} of {total} records in {RUN_DEADLINE_S} s")
            empty += n > 0
            continue
        if threads:
            inboxes[handed % threads].put(msgs)
            handed += 1
            n += sum(1 for m in msgs if m.error() is None)
        else:
            for msg in msgs:
                if msg.error() is None:
                    mark(msg)
                    n += 1
        if first_n == 0:
            first_at, first_n = clock(), n
    for inbox in inboxes:
        inbox.put(None)
    for w in workers:
        w.join()
    consumer.poll(0)  # the polling thread takes in the last marks (a commit would now include them)
    return Drained(first_at, first_n, clock(), errors, empty, 0.0)


async def _drain_async(consumer: Any, total: int, batch: int) -> Drained:
    """`_drain` line for line with the consume awaited, for AIOConsumer and CoopAIOConsumer alike
    (kept as a copy, not a shared helper: a helper call per message would slow both sides and hide
    the difference being measured)."""
    consume = consumer.consume
    clock = time.perf_counter
    n = errors = empty = 0
    first_at = last_at = 0.0
    first_n = 0
    max_gap = 0.0
    deadline = time.monotonic() + RUN_DEADLINE_S
    while n < total:
        msgs = await consume(num_messages=batch, timeout=CONSUME_TIMEOUT_S)
        if not msgs:
            if time.monotonic() > deadline:
                raise RuntimeError(f"consumed only {n} of {total} records in {RUN_DEADLINE_S} s")
            empty += n > 0
            continue
        for msg in msgs:
            if msg.error() is None:
                n += 1
            else:
                errors += 1
        now = clock()
        if first_n == 0:
            first_at, first_n = now, n
        else:
            max_gap = max(max_gap, now - last_at)
        last_at = now
    return Drained(first_at, first_n, last_at, errors, empty, max_gap)


@dataclass
class Timed:
    """Clock readings of one run around its drain."""

    t0: float
    t_sub: float
    cpu0: float
    cpu1: float
    t_closed: float
    drained: Drained


def _sync_run(
    side: str, conf: dict[str, str], sink: Any, total: int, batch: int, driver: str = SYNC
) -> tuple[Timed, bool | None]:
    from confluent_kafka import Consumer

    from kafka_coop.consumer import CoopConsumer

    hot_path_is_inner: bool | None = None
    gc.collect()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    consumer: Any
    if side == RAW:
        consumer = Consumer(conf)
    else:
        consumer = CoopConsumer(conf, events=sink)
        _check_fair(consumer, conf)
        # False since the freeze guard: CoopConsumer.consume is one thin frame around the inner consume (two
        # clock reads and a comparison per call, docs/consumer.md "A process that was frozen"), measured here.
        hot_path_is_inner = getattr(consumer.consume, "__self__", None) is consumer._consumer
    consumer.subscribe([TOPIC])
    t_sub = time.perf_counter()
    try:
        if driver == POLL:
            d = _drain_poll(consumer, total, batch)
        elif driver == MARK:
            mark = consumer.store_offsets if side == RAW else consumer.mark_done
            d = _drain_poll_mark(consumer, total, batch, mark)
        elif driver == THREADS:
            mark = consumer.store_offsets if side == RAW else consumer.mark_done
            d = _drain_marked(consumer, total, batch, mark, 0 if side == RAW else MARKING_THREADS)
        else:
            d = _drain(consumer, total, batch)
        cpu1 = time.process_time()
    finally:
        consumer.close()
    return Timed(t0, t_sub, cpu0, cpu1, time.perf_counter(), d), hot_path_is_inner


async def _aio_run(
    side: str, conf: dict[str, str], sink: Any, total: int, batch: int
) -> tuple[Timed, bool | None]:
    from confluent_kafka.aio import AIOConsumer

    from kafka_coop.consumer import CoopAIOConsumer

    hot_path_is_inner: bool | None = None
    gc.collect()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    consumer: Any
    if side == RAW:
        consumer = AIOConsumer(dict(conf))  # AIOConsumer edits the dict it is given
    else:
        consumer = CoopAIOConsumer(conf, events=sink)
        _check_fair(consumer, conf)
        # False by design: CoopAIOConsumer.consume is one thin coroutine around AIOConsumer.consume (it
        # turns a logged fatal error into ConsumerFailed), i.e. one frame of ours per batch, measured here.
        hot_path_is_inner = getattr(consumer.consume, "__self__", None) is consumer._consumer
    await consumer.subscribe([TOPIC])
    t_sub = time.perf_counter()
    try:
        d = await _drain_async(consumer, total, batch)
        cpu1 = time.process_time()
    finally:
        await consumer.close()
    return Timed(t0, t_sub, cpu0, cpu1, time.perf_counter(), d), hot_path_is_inner


def _check_fair(consumer: Any, conf: dict[str, str]) -> None:
    rendered = consumer.settings.render()
    if rendered != conf:
        raise RuntimeError(f"unfair comparison: the wrapper renders {rendered}, raw gets {conf}")


def one_run(
    driver: str, side: str, bootstrap: str, total: int, batch: int, label: str
) -> dict[str, JsonValue]:
    from kafka_coop.sinks import MemorySink

    group = f"bench-wo-{label}-{driver}-{side}-{uuid.uuid4().hex[:8]}"
    conf = consumer_conf(bootstrap, group, marks=driver in MARKING)
    sink = MemorySink()
    if driver != AIO:
        timed, hot_path_is_inner = _sync_run(side, conf, sink, total, batch, driver)
    else:
        timed, hot_path_is_inner = asyncio.run(_aio_run(side, conf, sink, total, batch))
    d = timed.drained
    first_at, done_at, t0, cpu = d.first_at, d.done_at, timed.t0, timed.cpu1 - timed.cpu0
    return {
        "label": label,
        "driver": driver,
        "side": side,
        "group": group,
        "records": total,
        "error_messages": d.errors,
        "first_batch_records": d.first_n,
        "empty_polls": d.empty_polls,
        "max_gap_s": d.max_gap_s,
        "construct_s": timed.t_sub - t0,
        "to_first_batch_s": first_at - t0,
        "consume_s": done_at - first_at,
        "end_to_end_s": done_at - t0,
        "close_s": timed.t_closed - done_at,
        "cpu_s": cpu,
        "records_per_s": (total - d.first_n) / (done_at - first_at),
        "end_to_end_records_per_s": total / (done_at - t0),
        "cpu_us_per_record": cpu / total * 1e6,
        "load_avg_1m": os.getloadavg()[0],
        "events": [e.kind for e in sink.events],
        "consume_is_inner_method": hot_path_is_inner,
    }


def _measured(runs: list[dict[str, JsonValue]], driver: str) -> list[dict[str, JsonValue]]:
    # Results written before the asyncio pair existed carry no driver: they are all sync.
    return [r for r in runs if r.get("driver", SYNC) == driver and r["label"] != "warmup"]


def _values(runs: list[dict[str, JsonValue]], driver: str, side: str, key: str) -> list[float]:
    out = []
    for run in _measured(runs, driver):
        if run["side"] == side:
            value = run[key]
            assert isinstance(value, int | float)
            out.append(float(value))
    return out


def _pair_ratios(runs: list[dict[str, JsonValue]], driver: str, key: str) -> list[float]:
    by_round: dict[str, dict[str, float]] = {}
    for run in _measured(runs, driver):
        value, label, side = run[key], run["label"], run["side"]
        assert isinstance(value, int | float) and isinstance(label, str) and isinstance(side, str)
        by_round.setdefault(label, {})[side] = float(value)
    return [r[WRAPPED] / r[RAW] for r in by_round.values() if RAW in r and WRAPPED in r]


def installed_package() -> dict[str, JsonValue]:
    """Which kafka-coop ran: where it was imported from, the tags of the wheel it was installed from (none
    for a checkout) and which per-record `poll` path it has (the compiled module of the default wheel, or
    the pure wheel's Python closure): the sync-poll figure depends on it (docs/install.md)."""
    import importlib.metadata
    import importlib.util

    import kafka_coop

    wheel = importlib.metadata.distribution("kafka-coop").read_text("WHEEL") or ""
    compiled = importlib.util.find_spec("kafka_coop.consumer._fastcall")
    return {
        "imported_from": str(Path(kafka_coop.__file__).parent),
        "wheel_tags": [line.removeprefix("Tag: ") for line in wheel.splitlines() if line.startswith("Tag: ")],
        "poll_path": "c" if compiled is not None else "python",
        "compiled_module": compiled.origin if compiled is not None else None,
    }


def run(args: BenchArgs) -> BenchResult:
    params = {**DEFAULTS, **(QUICK if args.quick else {})}
    params = {key: args.param(key, value) for key, value in params.items()}
    records, repeats, batch = params["records"], params["repeats"], params["batch"]
    drivers = tuple(d.strip() for d in args.param("drivers", ALL_DRIVERS).split(",") if d.strip())
    if not drivers or not set(drivers) <= set(DRIVERS):
        raise SystemExit(f"--param drivers={','.join(drivers)}: use some of {ALL_DRIVERS}")
    result = new_result(
        NAME,
        TITLE,
        {
            **params,
            "drivers": ",".join(drivers),
            "topic": TOPIC,
            "consume_timeout_s": CONSUME_TIMEOUT_S,
            "warmup_pairs": 1,
        },
        kafka_version=DEFAULT_KAFKA_VERSION,
    )
    result.parameters["kafka_coop_install"] = installed_package()
    with sandbox(kafka_version=DEFAULT_KAFKA_VERSION) as kafka:
        ClusterAdmin(kafka.bootstrap).ensure_topic(TOPIC, params["partitions"])
        produce_s = produce(kafka.bootstrap, TOPIC, records, params["record_bytes"], params["partitions"])
        result.parameters["consumer_conf"] = {
            k: v for k, v in consumer_conf(kafka.bootstrap, "<fresh per run>").items()
        }
        result.parameters["producer_conf"] = {k: str(v) for k, v in PRODUCER_CONF.items()}
        result.parameters["order"] = (
            "per driver (sync, asyncio, sync-poll, poll-mark, threads-mark): warm-up raw, wrapped; then "
            "rounds alternate raw-first / wrapped-first, each round running every driver's pair in turn"
        )
        result.parameters["marking_conf"] = {"enable.auto.offset.store": "false"}
        result.parameters["marking_threads"] = MARKING_THREADS
        runs: list[dict[str, JsonValue]] = []
        for driver in drivers:
            for side in (RAW, WRAPPED):
                runs.append(one_run(driver, side, kafka.bootstrap, records, batch, "warmup"))
        order = ab_order(repeats, (RAW, WRAPPED))
        for i in range(0, len(order), 2):
            for driver in drivers:
                for rnd, side in order[i : i + 2]:
                    run_ = one_run(driver, side, kafka.bootstrap, records, batch, f"r{rnd}")
                    runs.append(run_)
                    print(
                        f"  round {rnd} {driver:9s} {side:7s} {run_['records_per_s']:>12,.0f} rec/s",
                        flush=True,
                    )
    result.runs = runs
    result.notes.append(f"producing {records:,} records took {produce_s:.1f} s (not part of any figure)")
    loads = [load for r in runs if isinstance(load := r.get("load_avg_1m"), int | float)]
    if loads:
        result.notes.append(
            f"1-minute load average over the runs: {min(loads):.2f} to {max(loads):.2f} on "
            f"{os.cpu_count()} cores (a shared machine; the paired ratios cancel load that changes "
            "between rounds)"
        )
    return _summarize(result, runs)


def _summarize(result: BenchResult, runs: list[dict[str, JsonValue]]) -> BenchResult:
    med = statistics.median
    for driver in DRIVERS:
        pre = PREFIX[driver]
        raw, wrapped = (
            _values(runs, driver, RAW, "records_per_s"),
            _values(runs, driver, WRAPPED, "records_per_s"),
        )
        if not raw or not wrapped:
            continue
        pairs = _pair_ratios(runs, driver, "records_per_s")
        pairs_e2e = _pair_ratios(runs, driver, "end_to_end_records_per_s")
        pairs_cpu = _pair_ratios(runs, driver, "cpu_us_per_record")
        result.samples.update(
            {
                f"{pre}raw_records_per_s": Series(unit="records/s", values=raw),
                f"{pre}wrapped_records_per_s": Series(unit="records/s", values=wrapped),
                f"{pre}pair_ratio": Series(unit="ratio", values=pairs),
                f"{pre}raw_end_to_end_records_per_s": Series(
                    unit="records/s", values=_values(runs, driver, RAW, "end_to_end_records_per_s")
                ),
                f"{pre}wrapped_end_to_end_records_per_s": Series(
                    unit="records/s", values=_values(runs, driver, WRAPPED, "end_to_end_records_per_s")
                ),
                f"{pre}pair_ratio_end_to_end": Series(unit="ratio", values=pairs_e2e),
                f"{pre}raw_cpu_us_per_record": Series(
                    unit="us/record", values=_values(runs, driver, RAW, "cpu_us_per_record")
                ),
                f"{pre}wrapped_cpu_us_per_record": Series(
                    unit="us/record", values=_values(runs, driver, WRAPPED, "cpu_us_per_record")
                ),
                f"{pre}pair_ratio_cpu": Series(unit="ratio", values=pairs_cpu),
            }
        )
        what = WHAT[driver]
        result.figures.update(
            {
                f"{pre}throughput_ratio": Figure(
                    value=med(pairs),
                    unit="ratio",
                    description=f"{what}: median over rounds of wrapped/raw records/s (first batch to last "
                    "record); each round is a back-to-back pair, order alternating",
                    target=TARGET_RATIO if driver in TARGETED else None,
                    better="higher",
                ),
                f"{pre}ratio_of_medians": Figure(
                    value=med(wrapped) / med(raw),
                    unit="ratio",
                    description=f"{what}: median wrapped / median raw records/s (unpaired; a load step "
                    "between rounds moves it, the paired figure cancels it)",
                ),
                f"{pre}end_to_end_ratio": Figure(
                    value=med(pairs_e2e),
                    unit="ratio",
                    description=f"{what}: paired, construction + group join + assign callback included",
                ),
                f"{pre}cpu_per_record_ratio": Figure(
                    value=med(pairs_cpu),
                    unit="ratio",
                    description=f"{what}: paired CPU per record (all threads), wrapped / raw; lower is "
                    "better",
                ),
                f"{pre}raw_records_per_s": Figure(
                    value=med(raw), unit="records/s", description=f"{what}: raw, median"
                ),
                f"{pre}wrapped_records_per_s": Figure(
                    value=med(wrapped), unit="records/s", description=f"{what}: wrapped, median"
                ),
            }
        )
    return result.finish()


def plot(result: BenchResult, fig: Any) -> None:
    left, right = fig.subplots(1, 2)
    for driver, style in ((SYNC, "-"), (AIO, ":"), (POLL, "--"), (MARK, "-."), (THREADS, (0, (1, 4)))):
        for side, marker in ((RAW, "o"), (WRAPPED, "s")):
            points = [
                (int(str(r["label"])[1:]), r["records_per_s"])
                for r in _measured(result.runs, driver)
                if r["side"] == side
            ]
            if points:
                xs, ys = zip(*points, strict=True)
                left.plot(xs, ys, marker=marker, linestyle=style, label=f"{driver} {side}")
    left.set_xlabel("round (order alternates each round)")
    left.set_ylabel("records/s (first batch to last record)")
    left.ticklabel_format(axis="y", style="plain")
    left.legend(fontsize=8)
    left.grid(alpha=0.3)
    width = 0.17
    everything = [TARGET_RATIO, 1.0]
    bars = (
        (-2 * width, SYNC, "tab:gray"),
        (-width, AIO, "tab:olive"),
        (0.0, POLL, "tab:cyan"),
        (width, MARK, "tab:purple"),
        (2 * width, THREADS, "tab:brown"),
    )
    for offset, driver, color in bars:
        pre = PREFIX[driver]
        if f"{pre}pair_ratio" not in result.samples:
            continue
        pairs = result.samples[f"{pre}pair_ratio"].values
        ratio = result.figures[f"{pre}throughput_ratio"].value
        right.bar(
            [i + offset for i in range(len(pairs))], pairs, width, color=color, label=f"{driver} per round"
        )
        right.axhline(ratio, color=color, label=f"{driver} median {ratio:.3f}")
        everything += [*pairs, ratio]
    right.axhline(TARGET_RATIO, color="tab:red", linestyle="--", label=f"target {TARGET_RATIO}")
    right.set_ylim(min(everything) - 0.05, max(everything) + 0.12)  # head-room for the legend
    right.set_xlabel("round")
    right.set_ylabel("wrapped / raw")
    right.legend(loc="upper left", fontsize=8, framealpha=0.9)
    right.grid(alpha=0.3)


if __name__ == "__main__":
    main_for(run, plot)

"""Where the sync wrapper's overhead comes from: one process, the same records, one change at a time.

The inner `Consumer` of a `CoopConsumer` differs from a raw one by its `logger` (librdkafka's log into
Python logging) and its `error_cb` (the one-sentence outage warning), and by the wrapper around it. This
runs, interleaved in rotating order, a raw `Consumer`, the raw one with only kafka-coop's `logger`, with
only its `error_cb`, with both, and a `CoopConsumer`, each draining the same topic from the earliest
offset in a fresh group (bench/wrapper_overhead.py's drain loop and conf), and reports each variant's
median throughput ratio and CPU-per-record ratio to the raw consumer of its own round, with the
1-minute load average.

Run: `.venv/bin/python -m bench.wrapper_overhead_ab [--records N] [--rounds R]` (prints JSON lines).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench._common import sandbox
from bench.wrapper_overhead import TOPIC, _drain, consumer_conf, produce
from kafka_coop.admin import ClusterAdmin

VARIANTS = ("raw", "logger", "error_cb", "both", "coop")


def _client(variant: str, conf: dict[str, str]) -> Any:
    from confluent_kafka import Consumer

    from kafka_coop.consumer import CoopConsumer
    from kafka_coop.consumer._client_callbacks import ClientErrors, ClientLog
    from kafka_coop.consumer._setup import LIBRDKAFKA_LOGGER

    extra: dict[str, Any] = {}
    if variant in ("logger", "both"):
        extra["logger"] = ClientLog(logging.getLogger(LIBRDKAFKA_LOGGER))
    if variant in ("error_cb", "both"):
        extra["error_cb"] = ClientErrors(
            logging.getLogger("kafka_coop.consumer"), conf["bootstrap.servers"], None
        )
    if variant == "coop":
        return CoopConsumer(conf)
    return Consumer({**conf, **extra})


def one(variant: str, bootstrap: str, total: int, batch: int) -> tuple[float, float]:
    """(records/s from the first batch to the last record, process CPU µs per record over the drain).

    CPU time (all threads, librdkafka's included) is what load disturbs least: on a shared machine the
    wall-clock rate mostly measures the other jobs."""
    conf = consumer_conf(bootstrap, f"ab-{variant}-{uuid.uuid4().hex[:8]}")
    gc.collect()
    consumer = _client(variant, conf)
    consumer.subscribe([TOPIC])
    try:
        cpu0 = time.process_time()
        d = _drain(consumer, total, batch)
        cpu = time.process_time() - cpu0
    finally:
        consumer.close()
    return (total - d.first_n) / (d.done_at - d.first_at), cpu / total * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    ns = parser.parse_args()
    variants = [v for v in ns.variants.split(",") if v]
    emit: Callable[[dict[str, Any]], None] = lambda row: print(json.dumps(row), flush=True)  # noqa: E731
    with sandbox() as kafka:
        ClusterAdmin(kafka.bootstrap).ensure_topic(TOPIC, 12)
        produce(kafka.bootstrap, TOPIC, ns.records, 100, 12)
        for v in variants:  # warm-up, not counted
            one(v, kafka.bootstrap, ns.records, ns.batch)
        ratios: dict[str, list[float]] = {v: [] for v in variants if v != "raw"}
        cpu_ratios: dict[str, list[float]] = {v: [] for v in variants if v != "raw"}
        for r in range(ns.rounds):
            order = variants[r % len(variants) :] + variants[: r % len(variants)]
            measured = {v: one(v, kafka.bootstrap, ns.records, ns.batch) for v in order}
            for v, values in ratios.items():
                values.append(measured[v][0] / measured["raw"][0])
                cpu_ratios[v].append(measured[v][1] / measured["raw"][1])
            emit(
                {
                    "round": r,
                    "order": order,
                    "records_per_s": {v: m[0] for v, m in measured.items()},
                    "cpu_us_per_record": {v: m[1] for v, m in measured.items()},
                    "load_avg_1m": os.getloadavg()[0],
                }
            )
        emit(
            {
                "median_ratio_to_raw": {v: statistics.median(x) for v, x in ratios.items()},
                "median_cpu_per_record_ratio_to_raw": {
                    v: statistics.median(x) for v, x in cpu_ratios.items()
                },
                "records": ns.records,
                "rounds": ns.rounds,
                "load_avg_1m_end": os.getloadavg()[0],
                "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        )


if __name__ == "__main__":
    main()

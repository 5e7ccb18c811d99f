"""The live pipeline's throughput: `kafka-coop pipeline run` over a backlog on local[2], 5 s trigger.

A fresh sandbox broker; N generated RebalanceEvents (independent fleets side by side) produced to a
4-partition events topic; then, in one SparkSession, two streaming queries over that topic, each
until it has read every record:

* **baseline**: the pipeline's own source and decoding (`_pipeline.pipeline_input`) written straight to
  Parquet, no per-group step: what Spark's Kafka source, the JVM decoder and the file sink cost here.
* **pipeline**: the real job (`_pipeline.start_pipeline`): the same, plus the per-group step
  (`applyInPandasWithState` running `_stream` in Python workers) and its state store.

Figures come from Spark's own progress reports: events/s = input rows / the summed `triggerExecution`
time of the batches that read them (the 5 s trigger is a floor between batches, not work). The
ratio pipeline/baseline says what the Python step costs. Correctness: the pipeline's output read back
(`_figures`) must count every event. The load average is recorded: the machine is shared.

Run: `.venv/bin/python -m bench --only pipeline_throughput` -> bench/results/pipeline-throughput.json/.png
(`--quick` for 40 k events; `--param events=400000` to override).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import BenchArgs, BenchResult, Figure, Series, main_for, new_result, sandbox

NAME = "pipeline-throughput"
TITLE = "Live pipeline throughput: Structured Streaming over the events topic, local[2], 5 s trigger"
TARGET_EVENTS_PER_S = 100_000.0
DEFAULTS: dict[str, Any] = {
    "events": 200_000,
    "fleets": 8,
    "members": 12,
    "partitions": 12,
    "topic_partitions": 4,
    "trigger_s": 5.0,
    "master": "local[2]",
    "seed": 7,
}
QUICK: dict[str, Any] = {"events": 40_000, "fleets": 4}
TIMEOUT_S = 900.0


def _produce(bootstrap: str, topic: str, lines: list[bytes]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000})
    for line in lines:
        while True:
            try:
                producer.produce(topic, line)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120) != 0:
        raise RuntimeError("the producer could not deliver every event")


def _drain(query: Any, records: int) -> list[dict[str, Any]]:
    """Wait until the query's committed batches have read `records` rows; its progress reports."""
    deadline = time.monotonic() + TIMEOUT_S
    seen: dict[int, dict[str, Any]] = {}
    while time.monotonic() < deadline:
        if not query.isActive:
            raise RuntimeError(f"the query stopped: {query.exception()}")
        for progress in query.recentProgress:
            seen[int(progress["batchId"])] = progress
        if sum(int(p["numInputRows"]) for p in seen.values()) >= records:
            query.stop()
            return [seen[k] for k in sorted(seen)]
        time.sleep(0.5)
    query.stop()
    raise RuntimeError(f"the query did not read {records} records in {TIMEOUT_S} s")


def _rate(progress: list[dict[str, Any]]) -> tuple[int, float, float]:
    """Rows read, summed trigger execution (s) of the batches that read any, rows/s."""
    busy = [p for p in progress if int(p["numInputRows"]) > 0]
    rows = sum(int(p["numInputRows"]) for p in busy)
    seconds = sum(int(p["durationMs"]["triggerExecution"]) for p in busy) / 1000
    return rows, seconds, rows / seconds if seconds else 0.0


def run(args: BenchArgs) -> BenchResult:
    import pyspark

    from kafka_coop.admin import ClusterAdmin
    from kafka_coop.analytics import (
        PipelineConfig,
        event_line,
        generate_events,
        get_session,
        outcome_from_rows,
        pipeline_input,
        pipeline_records,
        read_pipeline_rows,
        start_pipeline,
        stop_session,
    )

    params = {**DEFAULTS, **(QUICK if args.quick else {})}
    params = {key: args.param(key, value) for key, value in params.items()}
    n, fleets = int(params["events"]), int(params["fleets"])
    trigger_s = float(params["trigger_s"])
    result = new_result(NAME, TITLE, {**params, "pyspark": pyspark.__version__})
    load_start = [round(x, 2) for x in os.getloadavg()]
    per_fleet = n // fleets
    lines = [
        event_line(e).rstrip("\n").encode()
        for f in range(fleets)
        for e in generate_events(
            per_fleet,
            members=int(params["members"]),
            partitions=int(params["partitions"]),
            seed=int(params["seed"]) + f,
            prefix=f"f{f}-",
        )
    ]
    with sandbox() as kafka, tempfile.TemporaryDirectory(prefix="kafka-coop-bench-pipeline-") as tmp:
        root = Path(tmp)
        topic = "rebalance-events"
        ClusterAdmin(kafka.bootstrap).ensure_topic(topic, int(params["topic_partitions"]))
        t0 = time.perf_counter()
        _produce(kafka.bootstrap, topic, lines)
        produce_s = time.perf_counter() - t0
        print(f"  produced {len(lines):,} events in {produce_s:.1f} s", flush=True)

        stop_session()
        spark = get_session(str(params["master"]), kafka=True, app="kafka-coop pipeline bench")
        spark.conf.set("spark.sql.shuffle.partitions", "2")
        config = PipelineConfig(
            topic=topic,
            out=root / "out",
            checkpoint=root / "ckpt",
            bootstrap=kafka.bootstrap,
            trigger_s=trigger_s,
            master=str(params["master"]),
        )
        trigger = f"{int(trigger_s * 1000)} milliseconds"
        load_baseline = [round(x, 2) for x in os.getloadavg()]
        baseline_query = (
            pipeline_input(pipeline_records(spark, config), config.markers_topic)
            .drop("raw")
            .writeStream.format("parquet")
            .option("path", str(root / "baseline"))
            .option("checkpointLocation", str(root / "baseline-ckpt"))
            .trigger(processingTime=trigger)
            .start()
        )
        baseline = _drain(baseline_query, len(lines))
        load_pipeline = [round(x, 2) for x in os.getloadavg()]
        (root / "out").mkdir()
        (root / "ckpt").mkdir()
        pipeline = _drain(start_pipeline(spark, config), len(lines))
        counted = outcome_from_rows(read_pipeline_rows(root / "out")).summary.events
        stop_session()
    b_rows, b_s, b_rate = _rate(baseline)
    p_rows, p_s, p_rate = _rate(pipeline)
    print(f"  baseline {b_rate:,.0f} events/s ({b_rows:,} in {b_s:.1f} s)", flush=True)
    print(f"  pipeline {p_rate:,.0f} events/s ({p_rows:,} in {p_s:.1f} s); counted {counted:,}", flush=True)
    # events in windows still open at the end are not yet in the output: the last minute of each fleet
    result.runs = [
        {
            "events": len(lines),
            "produce_s": round(produce_s, 3),
            "baseline_batches": [
                [int(p["numInputRows"]), int(p["durationMs"]["triggerExecution"])] for p in baseline
            ],
            "pipeline_batches": [
                [int(p["numInputRows"]), int(p["durationMs"]["triggerExecution"])] for p in pipeline
            ],
            "pipeline_events_counted": counted,
            "load_avg_start": list(load_start),
            "load_avg_baseline": list(load_baseline),
            "load_avg_pipeline": list(load_pipeline),
            "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        }
    ]
    result.samples = {"events_per_s": Series(unit="events/s", values=[b_rate, p_rate])}
    result.parameters["sides"] = json.dumps(
        ["baseline: source + decode + Parquet", "pipeline: + per-group step"]
    )
    result.figures = {
        "events_per_s": Figure(
            value=round(p_rate),
            unit="events/s",
            description=f"the pipeline over a backlog of {len(lines):,} events, {params['master']}: input "
            "rows / summed trigger execution time (Spark's progress)",
            target=TARGET_EVENTS_PER_S,
            better="higher",
        ),
        "baseline_events_per_s": Figure(
            value=round(b_rate),
            unit="events/s",
            description="baseline, same run and session: source + JVM decoder + Parquet, no per-group step",
        ),
        "pipeline_vs_baseline": Figure(
            value=round(p_rate / b_rate, 3) if b_rate else 0.0,
            unit="x",
            description="pipeline events/s over the baseline's, same run",
        ),
        "events_counted": Figure(
            value=float(counted),
            unit="events",
            description=f"events in the output's closed windows (of {len(lines):,}; open windows come later)",
        ),
    }
    result.notes.append(
        f"load average (1/5/15 min) at start {load_start}, before the baseline {load_baseline}, before the "
        f"pipeline {load_pipeline} on {os.cpu_count()} cores (shared with other jobs)"
    )
    return result.finish()


def plot(result: BenchResult, fig: Any) -> None:
    ax = fig.add_subplot(1, 1, 1)
    values = result.samples["events_per_s"].values
    bars = ax.barh(
        ["baseline: source + decode + Parquet", "pipeline: + per-group step (Python)"],
        values,
        color=["tab:gray", "tab:blue"],
    )
    ax.bar_label(bars, labels=[f"{v:,.0f}/s" for v in values], padding=3, fontsize=8)
    ax.axvline(TARGET_EVENTS_PER_S, color="tab:red", linestyle="--", label="target 100,000 events/s")
    ax.set_xlabel("events/s (input rows / trigger execution time)")
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)


if __name__ == "__main__":
    main_for(run, plot)

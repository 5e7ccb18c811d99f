"""The live pipeline's end-to-end latency: an event produced -> its figure visible in the output.

A fresh sandbox broker; `kafka-coop pipeline`'s job (`_pipeline.start_pipeline`, local[2], 5 s trigger)
running over an empty events topic; then a producer sends generated fleets' events at a fixed rate
(10,000 events/s) for `seconds`, each stamped with the time it is due to be sent (and sent then:
the send lag is recorded). A watcher polls the file sink's log (`_spark_metadata`, what readers list:
a file is visible once its batch is committed there) and reads each new file: the group's
`window_open` rows say the latest event time they count (`last_ts`), a `window` row everything
before its end. An event's latency = the wall time its group's figures first count it - the time it
was produced. Every 50th event is sampled; p50/p95/max over the samples after `warmup_s` (the job's
first batches start Python workers and JIT-compile).

Run: `.venv/bin/python -m bench --only pipeline_latency` -> bench/results/pipeline-latency.json/.png
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness.frame import BenchArgs, BenchResult, Figure, Series, main_for, new_result, sandbox
from bench.harness.pipeline_feed import Watcher, produce_paced, restamped, timeline
from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION

NAME = "pipeline-latency"
TITLE = (
    "Live pipeline end-to-end latency at 10,000 events/s: produced -> figure visible, local[2], 5 s trigger"
)
TARGET_P95_S = 10.0
DEFAULTS: dict[str, Any] = {
    "rate": 10_000,
    "seconds": 60,
    "warmup_s": 15,
    "fleets": 8,
    "members": 12,
    "partitions": 12,
    "topic_partitions": 4,
    "trigger_s": 5.0,
    "watermark_ms": 2_000,
    "master": "local[2]",
    "seed": 3,
    "sample_every": 50,
}
QUICK: dict[str, Any] = {"seconds": 25, "warmup_s": 10}


def _pct(values: list[float], q: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(1, -(-int(q * 100) * len(ordered) // 100))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True)
class Streamed:
    """One run of the job: the events sent (stamped from `start_ms`), the producer's lag behind its
    schedule, the sampled (group, ts) pairs, what the watcher saw, and the job's batches."""

    start_ms: int
    sent: int
    last_ts: int
    lags: list[float]
    sampled: list[tuple[str, int]]
    watcher: Watcher
    progress: list[Any]


def run(args: BenchArgs) -> BenchResult:
    import pyspark

    params = {**DEFAULTS, **(QUICK if args.quick else {})}
    params = {key: args.param(key, value) for key, value in params.items()}
    result = new_result(
        NAME, TITLE, {**params, "pyspark": pyspark.__version__}, kafka_version=DEFAULT_KAFKA_VERSION
    )
    load_start = [round(x, 2) for x in os.getloadavg()]
    with sandbox() as kafka, tempfile.TemporaryDirectory(prefix="kafka-coop-bench-latency-") as tmp:
        streamed = stream_and_watch(kafka.bootstrap, Path(tmp), params)
    latencies, missing = latencies_after_warmup(streamed, params)
    record(result, params, streamed, latencies, missing, load_start)
    return result.finish()


def stream_and_watch(bootstrap: str, root: Path, params: dict[str, Any]) -> Streamed:
    """Start the job, send the fleets' events on their schedule, and watch the output until the last
    sampled events are counted (60 s at most)."""
    from kafka_coop.admin import ClusterAdmin
    from kafka_coop.analytics import PipelineConfig, get_session, start_pipeline, stop_session

    topic = "rebalance-events"
    ClusterAdmin(bootstrap).ensure_topic(topic, int(params["topic_partitions"]))
    stop_session()
    spark = get_session(str(params["master"]), kafka=True, app="kafka-coop pipeline bench")
    config = PipelineConfig(
        topic=topic,
        out=root / "out",
        checkpoint=root / "ckpt",
        bootstrap=bootstrap,
        trigger_s=float(params["trigger_s"]),
        watermark_ms=int(params["watermark_ms"]),
        master=str(params["master"]),
    )
    (root / "out").mkdir()
    (root / "ckpt").mkdir()
    query = start_pipeline(spark, config)
    watcher = Watcher(root / "out")
    watcher.start()
    events = timeline(params)  # the job warms up meanwhile
    start_ms = int(time.time() * 1000) + 10_000
    lines, keys = restamped(events, int(params["rate"]), start_ms)
    print(f"  {len(lines):,} events to send from {start_ms}", flush=True)
    lags = produce_paced(bootstrap, topic, lines, keys)
    last_ts = keys[-1][1]
    deadline = time.time() + 60
    sampled = keys[:: int(params["sample_every"])]
    while time.time() < deadline and any(watcher.visible_at(g, t) is None for g, t in sampled[-20:]):
        time.sleep(0.5)
    watcher.stop.set()
    watcher.join(5)
    watcher.poll()
    progress = list(query.recentProgress)
    query.stop()
    stop_session()
    return Streamed(
        start_ms=start_ms,
        sent=len(lines),
        last_ts=last_ts,
        lags=lags,
        sampled=sampled,
        watcher=watcher,
        progress=progress,
    )


def latencies_after_warmup(streamed: Streamed, params: dict[str, Any]) -> tuple[list[float], int]:
    """Each sampled event past the warm-up: seconds from its stamp to its group's figures counting it;
    and how many were never counted."""
    warm = streamed.start_ms + int(params["warmup_s"]) * 1000
    latencies, missing = [], 0
    for group, ts in streamed.sampled:
        if ts < warm:
            continue
        seen = streamed.watcher.visible_at(group, ts)
        if seen is None:
            missing += 1
        else:
            latencies.append((seen - ts) / 1000)
    return latencies, missing


def record(
    result: BenchResult,
    params: dict[str, Any],
    streamed: Streamed,
    latencies: list[float],
    missing: int,
    load_start: list[float],
) -> None:
    """Print the run's line and fill the result: the run, the latency samples, the figures."""
    lags = streamed.lags
    p50, p95, worst = _pct(latencies, 0.5), _pct(latencies, 0.95), max(latencies, default=0.0)
    print(f"  latency p50 {p50:.2f} s, p95 {p95:.2f} s, max {worst:.2f} s; {missing} never seen", flush=True)
    result.runs = [
        {
            "events": streamed.sent,
            "sent_until_ms": streamed.last_ts,
            "send_lag_ms": [round(x, 1) for x in lags],
            "samples": len(latencies),
            "never_visible": missing,
            "batches": [
                [int(p["batchId"]), int(p["numInputRows"]), int(p["durationMs"]["triggerExecution"])]
                for p in streamed.progress
            ],
            "load_avg_start": list(load_start),
            "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        }
    ]
    result.samples = {"latency_s": Series(unit="s", values=[round(x, 3) for x in latencies])}
    result.figures = {
        "latency_p95_s": Figure(
            value=round(p95, 2),
            unit="s",
            description=f"event produced -> its group's figures count it in a committed output file, "
            f"{params['rate']:,} events/s, {params['master']}, {params['trigger_s']} s trigger "
            "(after warm-up)",
            target=TARGET_P95_S,
            better="lower",
        ),
        "latency_p50_s": Figure(value=round(p50, 2), unit="s", description="the same, median"),
        "latency_max_s": Figure(value=round(worst, 2), unit="s", description="the same, worst sample"),
        "send_lag_p95_ms": Figure(
            value=round(_pct(lags, 0.95), 1), unit="ms", description="producer behind its schedule, p95"
        ),
        "never_visible": Figure(
            value=float(missing),
            unit="events",
            description="sampled events never counted in the output by the end",
            target=0.0,
            better="lower",
        ),
    }
    result.notes.append(f"load average at start {load_start} on {os.cpu_count()} cores (shared)")


def plot(result: BenchResult, fig: Any) -> None:
    values = result.samples["latency_s"].values
    ax = fig.add_subplot(1, 2, 1)
    ax.plot(range(len(values)), values, ".", markersize=2, color="tab:blue")
    ax.axhline(TARGET_P95_S, color="tab:red", linestyle="--", label="target p95 10 s")
    ax.set_xlabel("sampled event (in production order)")
    ax.set_ylabel("produced -> visible (s)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax2 = fig.add_subplot(1, 2, 2)
    ordered = sorted(values)
    ax2.plot(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], color="tab:blue")
    ax2.axvline(TARGET_P95_S, color="tab:red", linestyle="--")
    ax2.axhline(0.95, color="gray", linestyle=":")
    ax2.set_xlabel("latency (s)")
    ax2.set_ylabel("fraction of events")
    ax2.grid(alpha=0.3)


if __name__ == "__main__":
    main_for(run, plot)

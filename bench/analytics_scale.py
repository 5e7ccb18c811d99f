"""Analytics at scale: `kafka-coop report --engine spark` over 10 M RebalanceEvents on local[2].

Generates N events as JSONL files in a temporary directory (`write_jsonl`: one simulated shard of
N/files events, every file that shard under its own prefix, i.e. independent fleets side by side),
then runs `run_report(engine="spark", master=local[2])` with a fresh SparkSession, as a user's
`kafka-coop report` does: parse and validate every line (JVM decoder), repartition by group,
intervals and pauses per task, Parquet tables, summary, plot.

Figures: the wall time of that report (JVM start included; target < 120 s), the same without the
session start, and events/s (target >= 200,000 events/s, issue 18: 10 M events in <= 50 s).
Baselines from the same run: the Python reference engine's events/s on one shard (the ratio says what
Spark buys on this machine), and the floor, Spark reading the same files as text and counting the
lines in the same session (no decoding, no shuffle, no analysis). The 1/5/15-minute load average is
recorded at the start, before the Spark job and at the end: the machine is shared.

Correctness: the Python reference engine summarizes one shard file, and the Spark summary must hold
exactly that shard's per-member and per-partition figures under its prefix, and every total,
per-protocol and per-phase figure times the file count.

Run: `.venv/bin/python -m bench --only analytics_scale` -> bench/results/analytics-scale.json/.png
(`--quick` for 200 k events; `--param events=2000000` to override).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import JsonValue

from bench.harness.frame import BenchArgs, BenchResult, Figure, Series, main_for, new_result

NAME = "analytics-scale"
TITLE = "Analytics at scale: kafka-coop report, Spark engine, local[2]"
TARGET_S = 120.0
TARGET_EVENTS_PER_S = 200_000.0
DEFAULTS: dict[str, Any] = {
    "events": 10_000_000,
    "files": 40,
    "members": 30,
    "partitions": 24,
    "seed": 42,
    "master": "local[2]",
}
QUICK: dict[str, Any] = {"events": 200_000, "files": 4}


def _check(spark: Any, shard: Any, files: int) -> list[str]:
    """Differences between the Spark summary and `files` copies of the Python shard summary."""
    problems: list[str] = []
    prefix = "s0-"
    for field in ("events", "intervals", "partition_unavailable_ms_total", "pauses", "pause_ms_total"):
        if getattr(spark, field) != files * getattr(shard, field):
            problems.append(f"{field}: spark {getattr(spark, field)} != {files} x {getattr(shard, field)}")
    if [m for m in spark.members if m.name.startswith(prefix)] != shard.members:
        problems.append("members of shard 0 differ")
    if [p for p in spark.partitions if p.topic.startswith(prefix)] != shard.partitions:
        problems.append("partitions of shard 0 differ")
    for protocol, stat in shard.rebalances.items():
        scaled = {k: files * v for k, v in stat.model_dump().items()}
        if spark.rebalances[protocol].model_dump() != scaled:
            problems.append(f"rebalances[{protocol}] differ")
    for got, want in zip(spark.phases, shard.phases, strict=True):
        scaled = {
            k: v if k in ("name", "start_ms", "end_ms") else files * v for k, v in want.model_dump().items()
        }
        if got.model_dump() != scaled:
            problems.append(f"phase {want.name} differs")
    return problems


class Measured(NamedTuple):
    """One run's stages: what was generated, the Python engine on one shard, the Spark report, the floor."""

    events: int
    files: int
    input_bytes: int
    generate_s: float
    shard_events: int
    python_s: float
    session_s: float
    job_s: float
    floor_s: float
    summary: Any  # the Spark report's Summary
    problems: list[str]
    load_start: list[float]
    load_spark: list[float]
    load_end: list[float]

    @property
    def wall_s(self) -> float:
        return self.session_s + self.job_s


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _measure(params: dict[str, Any], load_start: list[float]) -> Measured:
    """Generate the shards, summarize one with the Python engine, then report on all with Spark in a
    fresh session and count the same files as text (the floor) after it."""
    from kafka_coop.analytics import (
        get_session,
        read_event_lines,
        run_report,
        stop_session,
        summarize,
        write_jsonl,
    )

    n, files = int(params["events"]), int(params["files"])
    with tempfile.TemporaryDirectory(prefix="kafka-coop-bench-analytics-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        paths = write_jsonl(
            root / "events",
            n,
            files=files,
            seed=int(params["seed"]),
            members=int(params["members"]),
            partitions=int(params["partitions"]),
        )
        generate_s = time.perf_counter() - t0
        input_bytes = sum(p.stat().st_size for p in paths)
        print(f"  generated {n:,} events, {input_bytes / 1e9:.2f} GB in {generate_s:.1f} s", flush=True)

        t0 = time.perf_counter()
        shard_events, shard_bad = read_event_lines([paths[0]])
        shard = summarize(shard_events)
        python_s = time.perf_counter() - t0
        print(f"  python engine on one shard ({len(shard_events):,} events): {python_s:.1f} s", flush=True)

        stop_session()  # a fresh JVM, as a user's command gets
        load_spark = _load()
        t0 = time.perf_counter()
        spark = get_session(str(params["master"]))
        session_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        report = run_report([root / "events"], root / "out", engine="spark", master=str(params["master"]))
        job_s = time.perf_counter() - t1
        t2 = time.perf_counter()  # the floor, after the report (which it must not warm)
        lines = spark.read.text([str(p.absolute()) for p in paths]).count()
        floor_s = time.perf_counter() - t2
        stop_session()
        if lines != n:
            raise RuntimeError(f"read {lines} lines, wrote {n}")
        print(f"  spark: session {session_s:.1f} s + report {job_s:.1f} s", flush=True)
        problems = _check(report.summary, shard, files) if n % files == 0 else ["uneven shards: not checked"]
        if shard_bad or report.summary.malformed:
            problems.append("generated lines were refused")
        load_end = _load()
    return Measured(
        n,
        files,
        input_bytes,
        generate_s,
        len(shard_events),
        python_s,
        session_s,
        job_s,
        floor_s,
        report.summary,
        problems,
        load_start,
        load_spark,
        load_end,
    )


def run(args: BenchArgs) -> BenchResult:
    import pyspark

    params = {**DEFAULTS, **(QUICK if args.quick else {})}
    params = {key: args.param(key, value) for key, value in params.items()}
    result = new_result(NAME, TITLE, {**params, "pyspark": pyspark.__version__})
    m = _measure(params, _load())
    result.runs = [_run_record(m)]
    result.samples = {
        "stage_s": Series(unit="s", values=[m.generate_s, m.python_s, m.session_s, m.job_s, m.floor_s]),
    }
    result.parameters["stages"] = [
        "generate",
        "python one shard",
        "spark session",
        "spark report",
        "spark read floor (text count)",
    ]
    result.figures = _figures(m, str(params["master"]))
    if m.problems:
        result.notes.append("MISMATCH: " + "; ".join(m.problems))
    result.notes.append(
        f"load average (1/5/15 min) at start {m.load_start}, before the Spark session {m.load_spark}, at "
        f"end {result.runs[0]['load_avg_end']} on {os.cpu_count()} cores (shared with other jobs)"
    )
    result.notes.append(
        f"input: {m.files} files, {m.input_bytes / 1e9:.2f} GB of JSONL; generation ({m.generate_s:.0f} s) "
        "and the Python check are not part of any time figure"
    )
    return result.finish()


def _run_record(m: Measured) -> dict[str, JsonValue]:
    return {
        "events": m.events,
        "files": m.files,
        "input_bytes": m.input_bytes,
        "generate_s": round(m.generate_s, 3),
        "python_shard_events": m.shard_events,
        "python_shard_s": round(m.python_s, 3),
        "spark_session_s": round(m.session_s, 3),
        "spark_report_s": round(m.job_s, 3),
        "spark_wall_s": round(m.wall_s, 3),
        "spark_read_floor_s": round(m.floor_s, 3),
        "load_avg_start": list(m.load_start),
        "load_avg_before_spark": list(m.load_spark),
        "load_avg_end": list(m.load_end),
        "intervals": m.summary.intervals,
        "pauses": m.summary.pauses,
        "partition_unavailable_ms_total": m.summary.partition_unavailable_ms_total,
        "pause_ms_total": m.summary.pause_ms_total,
        "summary_matches_python": not m.problems,
        "problems": list(m.problems),
    }


def _figures(m: Measured, master: str) -> dict[str, Figure]:
    python_rate = m.shard_events / m.python_s
    spark_rate = m.events / m.wall_s
    return {
        "wall_s": Figure(
            value=round(m.wall_s, 2),
            unit="s",
            description=f"kafka-coop report --engine spark on {m.events:,} events, {master}, "
            "SparkSession start included",
            target=TARGET_S,
            better="lower",
        ),
        "report_s": Figure(
            value=round(m.job_s, 2), unit="s", description="the same without the session start"
        ),
        "events_per_s": Figure(
            value=round(spark_rate),
            unit="events/s",
            description="events / wall_s (session start included)",
            target=TARGET_EVENTS_PER_S,
            better="higher",
        ),
        "python_events_per_s": Figure(
            value=round(python_rate),
            unit="events/s",
            description="baseline, same run: the Python reference engine (read + summarize) on one shard",
        ),
        "spark_vs_python": Figure(
            value=round(spark_rate / python_rate, 2),
            unit="x",
            description="Spark events/s over the Python engine's, same run",
        ),
        "read_floor_s": Figure(
            value=round(m.floor_s, 2),
            unit="s",
            description="Spark reading the same files as text, counting lines (no decode, shuffle, analysis)",
        ),
        "matches_python": Figure(
            value=1.0 if not m.problems else 0.0,
            unit="bool",
            description="Spark summary == Python reference on a shard (scaled by the file count)",
            target=1.0,
            better="higher",
        ),
    }


def plot(result: BenchResult, fig: Any) -> None:
    ax = fig.add_subplot(1, 1, 1)
    stages = result.parameters.get("stages")
    labels = [str(s) for s in stages] if isinstance(stages, list) else []
    values = result.samples["stage_s"].values
    bars = ax.barh(
        labels, values, color=["tab:gray", "tab:green", "tab:orange", "tab:blue", "tab:purple"][: len(values)]
    )
    ax.bar_label(bars, labels=[f"{v:.1f} s" for v in values], padding=3, fontsize=8)
    wall = result.figures["wall_s"]
    ax.axvline(TARGET_S, color="tab:red", linestyle="--", label=f"target {TARGET_S:.0f} s (session + report)")
    ax.set_xlabel("seconds")
    ax.set_title(
        f"{result.parameters['events']} events: Spark wall {wall.value:.1f} s, "
        f"{result.figures['events_per_s'].value:,.0f} events/s",
        fontsize=9,
    )
    ax.invert_yaxis()
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)


if __name__ == "__main__":
    main_for(run, plot)

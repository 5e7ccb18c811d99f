"""The live pipeline's sustained throughput: `kafka-coop pipeline run` on local[2], 5 s trigger.

A fresh sandbox broker; N generated RebalanceEvents (independent fleets side by side, a day-old
back-fill) produced to a 4-partition events topic; then, in one SparkSession, two streaming queries
over that topic, each reading it in micro-batches of at most `max_offsets` records (Kafka source's
`maxOffsetsPerTrigger`) with the 5 s trigger, until every record is read. `max_offsets` is 500,000:
what a sustained 100,000 events/s brings in one 5 s trigger. Smaller batches understate every query:
each batch writes a file per group and day, whatever its size (at 200,000 per batch the ceiling below
measured 61,000-89,000, at 500,000 108,000-113,000).

**Target**: the pipeline's processing rate over the ceiling's, measured in the same run, >= 0.85
(`pipeline_vs_ceiling`), the absolute rate shown beside it. The ceiling is what Spark writing the same
output with no step allows on this machine at this load, so the ratio is what the step costs, and it
does not move with the machine; an absolute events/s target judged the machine as much as the step
(docs/pipeline.md says why 100,000 events/s was retired).

* **source** and **decode** floors: Spark's Kafka source alone, then with the JVM decoder, into
  Spark's `noop` sink: what reading and decoding cost before anything is written.
* **baseline**: the pipeline's own source and decoding (`_pipeline.pipeline_input`) written straight to
  Parquet, no per-group step: what Spark's Kafka source, the JVM decoder and the file sink cost here.
* **ceiling**: what any per-group step writing this output costs, in the JVM, no state: the baseline's
  input shuffled by group into `state_partitions` partitions (as the stateful operator's input is), each
  event expanded into the pipeline's output rows (`OUTPUT_MIX`: the kinds and rows per event of the
  pipeline's own output, 2.15 per event; each row fills its kind's columns from the event's, the rest
  null, as the step's rows do) with the output's columns and types, to Parquet partitioned by group and
  date as the pipeline's sink. The pipeline's step does this and more.
* **pipeline**: the real job (`_pipeline.start_pipeline`): the same, plus the per-group step
  (`GroupStep` in the JVM, through `flatMapGroupsWithState`) and its state store.

Steady state: the first `warmup` batches that read data (JIT, first files)
are left out. For the rest, from Spark's own progress reports: **processing rate** = input rows /
summed `triggerExecution` (what the job can take: the work, not the 5 s floor between triggers), and
**wall rate** = input rows / the time from the first steady batch's start to the last one's end (what
it took, capped at max_offsets / trigger when a batch takes less than the trigger). Each batch's
`durationMs` breakdown and the state operator's metrics are kept in the result (the profile).
Correctness: the pipeline's output read back (`_figures`) must count every event once the groups are
idle. The load average is recorded: the machine is shared.

Run: `.venv/bin/python -m bench --only pipeline_throughput` -> bench/results/pipeline-throughput.json/.png
(`--quick` for 1 M events in batches of 250 k; `--param events=6000000` etc. to override).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import json
import os
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from bench.harness.frame import BenchArgs, BenchResult, Figure, Series, main_for, new_result, sandbox
from bench.harness.pipeline_feed import fleet_records, produce
from kafka_coop.analytics import KIND_FIELDS, OUTPUT_FIELDS, TS_FROM_END
from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION

NAME = "pipeline-throughput"
TITLE = (
    "Live pipeline sustained throughput: Structured Streaming over the events topic, local[2], 5 s trigger"
)
BATCH_INPUT_EVENTS_PER_S = 100_000.0  # the input rate a batch of max_offsets stands for (not a target)
TARGET_CEILING_RATIO = 0.85  # the pipeline's rate over the ceiling's, same run
DEFAULTS: dict[str, Any] = {
    "events": 3_000_000,
    "max_offsets": 500_000,  # BATCH_INPUT_EVENTS_PER_S x trigger_s
    "warmup": 1,
    "fleets": 8,
    "members": 12,
    "partitions": 12,
    "topic_partitions": 4,
    "trigger_s": 5.0,
    "master": "local[2]",
    "state_partitions": 2,
    "seed": 7,
    "idle_ms": 2_000,
    # the ceiling's output shapes, run one after the other in the same session (`start_ceiling`); the
    # first must be control (the ceiling figures and the output check read it): `--param
    # ceilings=control,no_interval,by_date` measures what another shape of the output would allow
    "ceilings": "control",
    "huge_method_limit": 0,  # experiments: spark.sql.codegen.hugeMethodLimit for the bench's session
    # experiments: session settings for the pipeline's query only, "key=value;key=value"
    "pipeline_conf": "",
}
QUICK: dict[str, Any] = {"events": 1_000_000, "max_offsets": 250_000, "fleets": 4}
TIMEOUT_S = 1800.0
# rows per event of each kind in the pipeline's output: its 1,000,000-event run of 2026-11-26 (2.15 in
# all, no dead letters); each run records the pipeline's own mix next to it
OUTPUT_MIX: dict[str, float] = {
    "interval": 1.405589,
    "callbacks": 0.345606,
    "pause": 0.263177,
    "window": 0.131090,
    "window_open": 0.003341,
    "partition": 0.001749,
    "member": 0.000577,
}
_TIMES = frozenset({"ts", "window_end", "first_ts", "last_ts", "start_ms", "end_ms", "since", "event_ts"})
_MEMBERS = frozenset({"member", "from_member", "to_member", "owner", "handover_from", "handover_to"})
PHASES = ("latestOffset", "getBatch", "queryPlanning", "addBatch", "walCommit", "commitOffsets")


def drain(query: Any, records: int) -> list[dict[str, Any]]:
    """Wait until the query's batches have read `records` rows; its progress reports (all batches)."""
    deadline = time.monotonic() + TIMEOUT_S
    seen: dict[int, dict[str, Any]] = {}
    while time.monotonic() < deadline:
        if not query.isActive:
            raise RuntimeError(f"the query stopped: {query.exception()}")
        for progress in query.recentProgress:
            seen[int(progress["batchId"])] = progress
        if sum(int(p["numInputRows"]) for p in seen.values()) >= records:
            return [seen[k] for k in sorted(seen)]
        time.sleep(0.5)
    query.stop()
    raise RuntimeError(f"the query did not read {records} records in {TIMEOUT_S} s")


def _start_ms(progress: dict[str, Any]) -> float:
    stamp = dt.datetime.fromisoformat(str(progress["timestamp"]).replace("Z", "+00:00"))
    return stamp.timestamp() * 1000


def steady(progress: list[dict[str, Any]], warmup: int) -> dict[str, Any]:
    """The batches after `warmup` that read data: rows, processing and wall rates, time per phase."""
    busy = [p for p in progress if int(p["numInputRows"]) > 0]
    kept = busy[warmup:] if len(busy) > warmup else busy
    rows = sum(int(p["numInputRows"]) for p in kept)
    busy_ms = sum(int(p["durationMs"]["triggerExecution"]) for p in kept)
    wall_ms = (_start_ms(kept[-1]) + int(kept[-1]["durationMs"]["triggerExecution"])) - _start_ms(kept[0])
    phases = {k: sum(int(p["durationMs"].get(k, 0)) for p in kept) for k in PHASES}
    return {
        "batches": len(kept),
        "rows": rows,
        "busy_s": busy_ms / 1000,
        "wall_s": wall_ms / 1000,
        "processing_rate": rows * 1000 / busy_ms if busy_ms else 0.0,
        "wall_rate": rows * 1000 / wall_ms if wall_ms else 0.0,
        "phase_ms": phases,
    }


def filled_by() -> dict[str, tuple[str, ...]]:
    """Each output column but kind, group and date -> the kinds of row that fill it (as the step does)."""
    return {
        name: tuple(k for k in KIND_FIELDS if name in KIND_FIELDS[k] or (name == "ts" and k in TS_FROM_END))
        for name, _ in OUTPUT_FIELDS
        if name not in ("kind", "group", "date")
    }


def ceiling_rows(events: Any, partitions: int, mix: dict[str, float] = OUTPUT_MIX) -> Any:
    """`events` (the pipeline's input) shuffled by group, each event as its share of OUTPUT_MIX's rows.

    Per event: floor(total) rows, one more for a hashed fraction of events; each row's kind drawn by a
    hash from the mix. A column is the event's value (a time, a member, the topic, a count, varied by
    the row's slot) where the row's kind fills it, null elsewhere."""
    from pyspark.sql import functions as F

    total = sum(mix.values())
    whole = int(total)

    def uniform(seed: int) -> Any:
        return F.pmod(F.xxhash64(F.lit(seed), "partition", "offset", "slot"), F.lit(1_000_000)) / 1e6

    draw, cuts = uniform(2) * total, itertools.accumulate(mix.values())
    pick = F.lit(list(mix)[-1])
    for kind, cut in reversed(list(zip(mix, cuts, strict=True))[:-1]):  # the first cut above
        pick = F.when(draw < cut, F.lit(kind)).otherwise(pick)
    rows = (
        events.repartition(partitions, "group")
        .withColumn("slot", F.explode(F.sequence(F.lit(0), F.lit(whole))))
        .where((F.col("slot") < whole) | (uniform(1) < total - whole))
        .withColumn("okind", pick)
    )
    types = dict(OUTPUT_FIELDS)
    counts = ("seq", "cb_us", "n_owned", "offset", "partition")
    columns = [F.col("okind").alias("kind"), F.col("group")]
    for i, (name, filling) in enumerate(filled_by().items()):
        if types[name] == "binary":
            value = F.col("raw")
        elif types[name] == "long":
            value = (F.col("ts") if name in _TIMES else F.col(counts[i % len(counts)])) + F.col("slot")
        elif name in _MEMBERS:
            value = F.col("member")
        elif name == "topic":
            value = F.col("topic")
        else:
            value = F.concat(F.lit(f"{name}-"), F.col("okind"))
        spark_type = {"long": "bigint"}.get(types[name], types[name])
        columns.append(F.when(F.col("okind").isin(*filling), value).cast(spark_type).alias(name))
    shaped = rows.select(*columns)
    return shaped.withColumn("date", F.date_format(F.timestamp_millis(F.col("ts")), "yyyy-MM-dd"))


FOREACH_BATCH = ("split", "fb_control", "split_nopersist", "fb_nopersist")
# control's output written under other session settings (set for the variant's start only)
CONF_VARIANTS: dict[str, dict[str, str]] = {
    "concurrent": {"spark.sql.maxConcurrentOutputFileWriters": "64"},
    "lz4": {"spark.sql.parquet.compression.codec": "lz4"},
    "uncompressed": {"spark.sql.parquet.compression.codec": "uncompressed"},
    "concurrent_uncompressed": {
        "spark.sql.maxConcurrentOutputFileWriters": "64",
        "spark.sql.parquet.compression.codec": "uncompressed",
    },
}


def start_ceiling(events: Any, variant: str, partitions: int, path: Path, trigger: str) -> Any:
    """One shape of the ceiling's output, as a streaming query writing under `path`.

    control: the pipeline's output as it is. no_interval: without its per-partition `interval` rows.
    by_date: partitioned by date only. interval_only: the interval rows alone, with only the columns they
    fill. split: interval rows to such a narrow table, the rest to the wide one, in one foreachBatch
    (the expanded batch persisted, two writes); fb_control: the same foreachBatch and persist, one wide
    table (the split's own mechanism, as its baseline). *_nopersist: those two without the persist
    (each write recomputes the batch from the source).
    """
    from pyspark.sql import functions as F

    mix = {k: v for k, v in OUTPUT_MIX.items() if k != "interval"} if variant == "no_interval" else OUTPUT_MIX
    if variant == "interval_only":  # the split's narrow half alone, through the file sink
        mix = {"interval": OUTPUT_MIX["interval"]}
    narrow = ["kind", "group", "date", *(n for n, kinds in filled_by().items() if "interval" in kinds)]
    rows = ceiling_rows(events, partitions, mix)
    writer = (
        (rows.select(*narrow) if variant == "interval_only" else rows)
        .writeStream.option("checkpointLocation", f"{path}-ckpt")
        .trigger(processingTime=trigger)
    )
    if variant in FOREACH_BATCH:  # *_nopersist: each write recomputes the batch from the source

        def write(batch: Any, _batch_id: int) -> None:
            persist = not variant.endswith("_nopersist")
            if persist:
                batch.persist()
            wide = batch
            if variant.startswith("split"):
                interval = batch.where(F.col("kind") == "interval").select(*narrow)
                interval.write.mode("append").partitionBy("group", "date").parquet(str(path / "narrow"))
                wide = batch.where(F.col("kind") != "interval")
            wide.write.mode("append").partitionBy("group", "date").parquet(str(path / "wide"))
            if persist:
                batch.unpersist()

        return writer.foreachBatch(write).start()
    # a CONF_VARIANTS variant is control's output, its settings set by the caller (`_session_conf`)
    if variant not in ("control", "no_interval", "by_date", "interval_only", *CONF_VARIANTS):
        raise ValueError(f"unknown ceiling variant {variant!r}")
    by = ("date",) if variant == "by_date" else ("group", "date")
    return writer.format("parquet").option("path", str(path)).partitionBy(*by).start()


@contextlib.contextmanager
def _session_conf(spark: Any, settings: Mapping[str, str]) -> Iterator[None]:
    """Session settings while a query runs (a streaming query reads them as it goes), then as before."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _files(path: Path) -> tuple[int, int]:
    files = [f for f in path.rglob("*.parquet") if f.is_file()]
    return len(files), sum(f.stat().st_size for f in files)


def batch_table(progress: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for p in progress:
        state = (p.get("stateOperators") or [{}])[0]
        out.append(
            {
                "batch": int(p["batchId"]),
                "rows": int(p["numInputRows"]),
                "ms": {k: int(p["durationMs"].get(k, 0)) for k in ("triggerExecution", *PHASES)},
                "state_rows": state.get("numRowsTotal"),
                "state_bytes": state.get("memoryUsedBytes"),
                "state_update_ms": state.get("allUpdatesTimeMs"),
                "state_commit_ms": state.get("commitTimeMs"),
            }
        )
    return out


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _floors(
    spark: Any, config: Any, root: Path, trigger: str, events: int
) -> dict[str, list[dict[str, Any]]]:
    """What reading alone costs, then reading and decoding: the source and decode floors' progress."""
    from kafka_coop.analytics import pipeline_input, pipeline_records

    floors: dict[str, list[dict[str, Any]]] = {}
    for side in ("source", "decode"):
        frame = pipeline_records(spark, config)
        if side == "decode":
            frame = pipeline_input(frame, config.markers_topic).drop("raw")
        floor_query = (
            frame.writeStream.format("noop")
            .option("checkpointLocation", str(root / f"{side}-ckpt"))
            .trigger(processingTime=trigger)
            .start()
        )
        floors[side] = drain(floor_query, events)
        floor_query.stop()
    return floors


def _baseline(spark: Any, config: Any, root: Path, trigger: str, events: int) -> list[dict[str, Any]]:
    """The pipeline's source and decoding written straight to Parquet: the baseline's progress."""
    from kafka_coop.analytics import pipeline_input, pipeline_records

    baseline_query = (
        pipeline_input(pipeline_records(spark, config), config.markers_topic)
        .drop("raw")
        .writeStream.format("parquet")
        .option("path", str(root / "baseline"))
        .option("checkpointLocation", str(root / "baseline-ckpt"))
        .trigger(processingTime=trigger)
        .start()
    )
    baseline = drain(baseline_query, events)
    baseline_query.stop()
    return baseline


class Ceilings(NamedTuple):
    """The ceiling shapes' runs: each variant's record, and the control's progress and output."""

    variants: list[dict[str, Any]]
    progress: list[dict[str, Any]]
    written: Any  # the control's output, read back (its columns must be the pipeline's)
    rows_written: int


def _ceilings(
    spark: Any, events: Any, params: Mapping[str, Any], root: Path, trigger: str, count: int
) -> Ceilings:
    """Every ceiling shape of `--param ceilings`, one after the other in the session; control first."""
    warmup = int(params["warmup"])
    variants: list[dict[str, Any]] = []
    shapes = str(params["ceilings"]).split(",")
    if shapes[0] != "control":
        raise ValueError("the first of --param ceilings must be control: the ceiling figures read it")
    for i, variant in enumerate(shapes):
        path = root / f"ceiling-{i}-{variant}"
        load_before = _load()
        t_variant = time.perf_counter()
        with _session_conf(spark, CONF_VARIANTS.get(variant, {})):
            variant_query = start_ceiling(events, variant, int(params["state_partitions"]), path, trigger)
            progress = drain(variant_query, count)
            variant_query.stop()
        tables = ("narrow", "wide") if variant in FOREACH_BATCH else ("",)
        written = {
            t or "all": spark.read.parquet(str(path / t)).count() for t in tables if (path / t).exists()
        }
        files, size = _files(path)
        s = steady(progress, warmup)
        per_event = sum(written.values()) / count
        variants.append(
            {
                "variant": variant,
                "steady": json.loads(json.dumps(s)),
                "rows_written": written,
                "rows_per_event": round(per_event, 4),
                "rows_per_s_processing": round(s["processing_rate"] * per_event),
                "rows_per_s_wall": round(s["wall_rate"] * per_event),
                "files": files,
                "bytes": size,
                "query_s": round(time.perf_counter() - t_variant, 1),
                "load_avg_before": load_before,
                "batches": json.loads(json.dumps(batch_table(progress))),
            }
        )
        print(
            f"  ceiling[{i}] {variant}: {s['processing_rate']:,.0f} events/s processing, "
            f"{s['wall_rate']:,.0f} wall; {per_event:.3f} rows/event {written} -> "
            f"{s['processing_rate'] * per_event:,.0f} rows/s processing, "
            f"{s['wall_rate'] * per_event:,.0f} wall; {files} files {size / 1e6:.1f} MB; "
            f"{s['batches']} steady batches {s['busy_s']:.1f} s busy; load before {load_before}; "
            f"{s['phase_ms']}",
            flush=True,
        )
        if i == 0:
            control = Ceilings(
                variants, progress, spark.read.parquet(str(path / tables[-1])), sum(written.values())
            )
    return control


class PipelineRun(NamedTuple):
    """The real job's progress and what its output, read back, counts."""

    progress: list[dict[str, Any]]
    counted: int
    dead_letters: dict[str, int]
    output_counts: dict[str, int]
    schema: list[tuple[str, Any]]


def _pipeline(spark: Any, config: Any, root: Path, pipeline_conf: str, events: int) -> PipelineRun:
    """`start_pipeline` over the backlog, drained, then waited on until its output counts every event."""
    import pyarrow.compute as pc

    from kafka_coop.analytics import outcome_from_rows, read_pipeline_rows, start_pipeline

    (root / "out").mkdir()
    (root / "ckpt").mkdir()
    tried = dict(kv.split("=", 1) for kv in pipeline_conf.split(";") if kv)
    for key, value in tried.items():
        spark.conf.set(key, value)
    query = start_pipeline(spark, config)
    pipeline = drain(query, events)
    # every event is in the output once the groups are idle and their last windows closed
    deadline = time.monotonic() + 120
    counted = 0
    while time.monotonic() < deadline:
        counted = outcome_from_rows(read_pipeline_rows(root / "out")).summary.events
        if counted >= events:
            break
        time.sleep(2)
    rows = read_pipeline_rows(root / "out")
    dead = rows.filter(pc.equal(rows["kind"], "deadletter"))["reason"].to_pylist()
    dead_letters = {str(reason): dead.count(reason) for reason in sorted(set(dead), key=str)}
    kinds = rows["kind"].to_pylist()
    output_counts = {kind: kinds.count(kind) for kind in sorted(set(kinds))}
    pipeline = [
        *pipeline,
        *(p for p in query.recentProgress if int(p["batchId"]) > pipeline[-1]["batchId"]),
    ]
    query.stop()
    shape = [(f.name, f.dataType) for f in spark.read.parquet(str(root / "out")).schema]
    return PipelineRun(pipeline, counted, dead_letters, output_counts, shape)


class Loads(NamedTuple):
    """The load average (1/5/15 min) before each stage: the machine is shared."""

    start: list[float]
    baseline: list[float]
    ceiling: list[float]
    pipeline: list[float]


class Measured(NamedTuple):
    """What one run's queries reported, before any figure is made of it."""

    events: int
    produce_s: float
    floors: dict[str, list[dict[str, Any]]]
    baseline: list[dict[str, Any]]
    ceilings: Ceilings
    pipeline: PipelineRun
    loads: Loads


def _measure(
    params: Mapping[str, Any], lines: list[tuple[bytes, bytes]], load_start: list[float]
) -> Measured:
    """One sandbox, the backlog produced, then one SparkSession: floors, baseline, ceilings, pipeline."""
    from kafka_coop.admin import ClusterAdmin
    from kafka_coop.analytics import (
        PipelineConfig,
        get_session,
        pipeline_input,
        pipeline_records,
        stop_session,
    )

    trigger_s = float(params["trigger_s"])
    with sandbox() as kafka, tempfile.TemporaryDirectory(prefix="kafka-coop-bench-pipeline-") as tmp:
        root = Path(tmp)
        topic = "rebalance-events"
        ClusterAdmin(kafka.bootstrap).ensure_topic(topic, int(params["topic_partitions"]))
        t0 = time.perf_counter()
        produce(kafka.bootstrap, topic, lines)
        produce_s = time.perf_counter() - t0
        print(f"  produced {len(lines):,} events in {produce_s:.1f} s", flush=True)

        stop_session()
        spark = get_session(str(params["master"]), kafka=True, app="kafka-coop pipeline bench")
        config = PipelineConfig(
            topic=topic,
            out=root / "out",
            checkpoint=root / "ckpt",
            bootstrap=kafka.bootstrap,
            trigger_s=trigger_s,
            master=str(params["master"]),
            state_partitions=int(params["state_partitions"]),
            max_offsets_per_trigger=int(params["max_offsets"]),
            idle_ms=int(params["idle_ms"]),
        )
        spark.conf.set("spark.sql.shuffle.partitions", str(params["state_partitions"]))
        if params.get("huge_method_limit"):
            spark.conf.set("spark.sql.codegen.hugeMethodLimit", str(params["huge_method_limit"]))
        trigger = f"{int(trigger_s * 1000)} milliseconds"
        load_baseline = _load()
        floors = _floors(spark, config, root, trigger, len(lines))
        baseline = _baseline(spark, config, root, trigger, len(lines))
        events = pipeline_input(pipeline_records(spark, config), config.markers_topic)
        load_ceiling = _load()
        ceilings = _ceilings(spark, events, params, root, trigger, len(lines))
        load_pipeline = _load()
        pipeline = _pipeline(spark, config, root, str(params["pipeline_conf"]), len(lines))
        if [
            (f.name, f.dataType) for f in ceilings.written.schema
        ] != pipeline.schema:  # as written, read back
            raise RuntimeError(
                f"the ceiling's columns {ceilings.written.schema} are not the pipeline's {pipeline.schema}"
            )
        stop_session()
    loads = Loads(load_start, load_baseline, load_ceiling, load_pipeline)
    return Measured(len(lines), produce_s, floors, baseline, ceilings, pipeline, loads)


def run(args: BenchArgs) -> BenchResult:
    import pyspark

    params = {**DEFAULTS, **(QUICK if args.quick else {})}
    params = {key: args.param(key, value) for key, value in params.items()}
    warmup = int(params["warmup"])
    result = new_result(
        NAME, TITLE, {**params, "pyspark": pyspark.__version__}, kafka_version=DEFAULT_KAFKA_VERSION
    )
    load_start = _load()
    t0 = time.perf_counter()
    lines = fleet_records(params)
    print(f"  generated {len(lines):,} events in {time.perf_counter() - t0:.1f} s", flush=True)
    m = _measure(params, lines, load_start)
    steadies = {
        "source": steady(m.floors["source"], warmup),
        "decode": steady(m.floors["decode"], warmup),
        "baseline": steady(m.baseline, warmup),
        "ceiling": steady(m.ceilings.progress, warmup),
        "pipeline": steady(m.pipeline.progress, warmup),
    }
    _print_steadies(m, steadies)
    result.runs = [_run_record(m, steadies)]
    queries = {
        **m.floors,
        "baseline": m.baseline,
        "ceiling": m.ceilings.progress,
        "pipeline": m.pipeline.progress,
    }
    result.samples = {
        f"{side}_batch_rate": Series(
            unit="events/s", values=[r * 1000 / max(1, ms) for r, ms in _busy(progress)]
        )
        for side, progress in queries.items()
    }
    result.figures = _figures(m, steadies, params)
    loads = m.loads
    result.notes.append(
        f"load average (1/5/15 min) at start {loads.start}, before the baseline {loads.baseline}, before "
        f"the ceiling {loads.ceiling}, before the pipeline {loads.pipeline} on {os.cpu_count()} cores "
        "(shared with other jobs)"
    )
    return result.finish()


def _print_steadies(m: Measured, steadies: Mapping[str, dict[str, Any]]) -> None:
    for side, s in steadies.items():
        print(
            f"  {side}: {s['processing_rate']:,.0f} events/s processing, {s['wall_rate']:,.0f} wall "
            f"({s['rows']:,} rows in {s['batches']} steady batches, {s['busy_s']:.1f} s busy); "
            f"{s['phase_ms']}",
            flush=True,
        )
    pipeline, ceilings = m.pipeline, m.ceilings
    print(
        f"  pipeline counted {pipeline.counted:,} of {m.events:,}; dead letters {pipeline.dead_letters}",
        flush=True,
    )
    pipeline_ratio = sum(pipeline.output_counts.values()) / m.events
    print(
        f"  output rows by kind {pipeline.output_counts}: {pipeline_ratio:.3f} per event; the ceiling wrote "
        f"{ceilings.rows_written:,} ({ceilings.rows_written / m.events:.3f} per event)",
        flush=True,
    )


def _run_record(m: Measured, steadies: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """The run's raw record: every query's steady state and batches, the output's counts, the loads."""
    pipeline, ceilings = m.pipeline, m.ceilings
    return {
        "events": m.events,
        "produce_s": round(m.produce_s, 3),
        "source_steady": json.loads(json.dumps(steadies["source"])),
        "decode_steady": json.loads(json.dumps(steadies["decode"])),
        "baseline_steady": json.loads(json.dumps(steadies["baseline"])),
        "ceiling_steady": json.loads(json.dumps(steadies["ceiling"])),
        "pipeline_steady": json.loads(json.dumps(steadies["pipeline"])),
        "baseline_batches": json.loads(json.dumps(batch_table(m.baseline))),
        "ceiling_batches": json.loads(json.dumps(batch_table(ceilings.progress))),
        "pipeline_batches": json.loads(json.dumps(batch_table(pipeline.progress))),
        "pipeline_events_counted": pipeline.counted,
        "pipeline_dead_letters": pipeline.dead_letters,
        "pipeline_output_rows": pipeline.output_counts,
        "pipeline_rows_per_event": round(sum(pipeline.output_counts.values()) / m.events, 4),
        "ceiling_output_mix": json.loads(json.dumps(OUTPUT_MIX)),
        "ceiling_rows_written": ceilings.rows_written,
        "ceiling_rows_per_event": round(ceilings.rows_written / m.events, 4),
        "ceiling_variants": json.loads(json.dumps(ceilings.variants)),
        "load_avg_start": list(m.loads.start),
        "load_avg_baseline": list(m.loads.baseline),
        "load_avg_ceiling": list(m.loads.ceiling),
        "load_avg_pipeline": list(m.loads.pipeline),
        "load_avg_end": _load(),
    }


def _figures(
    m: Measured, steadies: Mapping[str, dict[str, Any]], params: Mapping[str, Any]
) -> dict[str, Figure]:
    p, b, c = steadies["pipeline"], steadies["baseline"], steadies["ceiling"]
    f_source, f_decode = steadies["source"], steadies["decode"]
    warmup, events = int(params["warmup"]), m.events
    return {
        "events_per_s": Figure(
            value=round(p["processing_rate"]),
            unit="events/s",
            description=f"pipeline, steady state ({p['batches']} batches of <= {params['max_offsets']:,} "
            f"after {warmup} warm-up) over a {events:,}-event backlog, {params['master']}: input rows "
            "/ summed trigger execution time (Spark's progress); judged by pipeline_vs_ceiling",
        ),
        "wall_events_per_s": Figure(
            value=round(p["wall_rate"]),
            unit="events/s",
            description="pipeline, steady state: input rows / wall time, first steady batch to last",
        ),
        "source_events_per_s": Figure(
            value=round(f_source["processing_rate"]),
            unit="events/s",
            description="floor, same run: Spark's Kafka source alone (noop sink), steady state",
        ),
        "decode_events_per_s": Figure(
            value=round(f_decode["processing_rate"]),
            unit="events/s",
            description="floor, same run: source + the JVM decoder (noop sink), steady state",
        ),
        "baseline_events_per_s": Figure(
            value=round(b["processing_rate"]),
            unit="events/s",
            description="baseline, same run and session: source + JVM decoder + Parquet, no per-group step",
        ),
        "ceiling_events_per_s": Figure(
            value=round(c["processing_rate"]),
            unit="events/s",
            description="ceiling, same run: the baseline's input shuffled by group, expanded in the JVM "
            f"to the pipeline's output rows ({sum(OUTPUT_MIX.values()):.2f} per event, its columns) into "
            "Parquet by group and date; no step, no state",
        ),
        "pipeline_vs_ceiling": ceiling_ratio(p["processing_rate"], c["processing_rate"]),
        "ceiling_wall_events_per_s": Figure(
            value=round(c["wall_rate"]),
            unit="events/s",
            description="ceiling, steady state: input rows / wall time, first steady batch to last",
        ),
        "pipeline_vs_baseline": Figure(
            value=round(p["processing_rate"] / b["processing_rate"], 3) if b["processing_rate"] else 0.0,
            unit="x",
            description="pipeline processing rate over the baseline's, same run",
        ),
        "events_counted": Figure(
            value=float(m.pipeline.counted),
            unit="events",
            description=f"events the pipeline's output counts (of {events:,}; none may be lost or late)",
        ),
    }


def ceiling_ratio(pipeline_rate: float, ceiling_rate: float) -> Figure:
    """The benchmark's target: the pipeline's processing rate over the ceiling's of the same run."""
    return Figure(
        value=round(pipeline_rate / ceiling_rate, 3) if ceiling_rate else 0.0,
        unit="x",
        description="pipeline processing rate over the ceiling's (Spark writing the same output with no "
        "step), same run: what the per-group step costs",
        target=TARGET_CEILING_RATIO,
        better="higher",
    )


def _busy(progress: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [
        (int(p["numInputRows"]), int(p["durationMs"]["triggerExecution"]))
        for p in progress
        if int(p["numInputRows"]) > 0
    ]


def plot(result: BenchResult, fig: Any) -> None:
    ax = fig.add_subplot(1, 1, 1)
    for key, color in (
        ("source_batch_rate", "tab:green"),
        ("decode_batch_rate", "tab:olive"),
        ("baseline_batch_rate", "tab:gray"),
        ("ceiling_batch_rate", "tab:purple"),
        ("pipeline_batch_rate", "tab:blue"),
    ):
        values = result.samples[key].values
        ax.plot(range(1, len(values) + 1), values, marker="o", color=color, label=key.replace("_", " "))
    ceiling = result.figures["ceiling_events_per_s"].value
    ax.axhline(
        TARGET_CEILING_RATIO * ceiling,
        color="tab:red",
        linestyle="--",
        label=f"target {TARGET_CEILING_RATIO:g} x ceiling ({TARGET_CEILING_RATIO * ceiling:,.0f} events/s)",
    )
    warmup = int(str(result.parameters["warmup"]))
    ax.axvline(warmup + 0.5, color="black", linestyle=":", label="end of warm-up")
    ax.set_xlabel("micro-batch reading data (1 = first)")
    ax.set_ylabel("events/s (batch rows / trigger execution)")
    ax.set_yscale("log")
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)


if __name__ == "__main__":
    main_for(run, plot)

"""The live pipeline: a Spark Structured Streaming job from the events topic to Parquet, exactly once.

The shell around `_stream` (the per-group step, pure): it reads the events topic and the markers topic
with Spark's Kafka source, decodes events in the JVM with the report's decoder, hands each group's rows
to the step (the JVM's `GroupStep`, a port of `_stream.GroupStream` tested equal to it, through
`flatMapGroupsWithState`: the group's state in Spark's state store; its clock is the events' own time,
and a processing-time timeout wakes an idle group so its last windows close), and
writes the rows to Spark's file sink, partitioned by group and date. The checkpoint (Kafka offsets,
state, the sink's log) makes a restart resume where the last committed micro-batch ended: nothing
counted twice, nothing lost.
docs/pipeline.md is the user's page; docs/design/analytics.md has the design.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Final

from kafka_coop import __version__
from kafka_coop.analytics._engine import SPARK_HINT
from kafka_coop.analytics._figures import PIPELINE_FILE, PROGRESS_FILE
from kafka_coop.analytics._kafka_options import java_client_options
from kafka_coop.analytics._markers import MARKERS_TOPIC
from kafka_coop.analytics._stream import (
    INPUT_FIELDS,
    OUTPUT_FIELDS,
    TOPICS_SEP,
    StreamConfig,
)
from kafka_coop.errors import ClusterUnavailable, InvalidInput

try:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.query import StreamingQuery
except ImportError as exc:  # pragma: no cover - exercised by users without the extra
    raise InvalidInput("The live pipeline needs pyspark, which is not installed.", hint=SPARK_HINT) from exc

from kafka_coop.analytics._spark import DECODE, SPARK_LOG_LEVEL, get_session

PIPELINE_FORMAT: Final = 2  # bump when the checkpoint or the output changes shape (2: the JVM step)
STATE_FORMAT: Final = 4  # what the step's state is: `GroupStep.STATE_FORMAT` (the Python step's was 2)
CHECKPOINT_FILE: Final = "kafka-coop.json"
QUERY_DIR: Final = "query"
APP_NAME: Final = "kafka-coop pipeline"
POLL_S: Final = 0.5
TASKS_END_WAIT_S: Final = 10.0  # how long a stop waits, Spark's log off, for the query's tasks to end
HOTSPOT_HUGE_METHOD_LIMIT: Final = 8_000  # bytes of bytecode: HotSpot's `-XX:HugeMethodLimit`
_SPARK_TYPES: Final = {"string": "string", "long": "bigint", "binary": "binary"}
# every column, `date` too: the step leaves it null and `output_rows` fills it
STEP_OUTPUT_DDL: Final = ", ".join(f"`{name}` {_SPARK_TYPES[kind]}" for name, kind in OUTPUT_FIELDS)


@dataclass(frozen=True)
class PipelineConfig:
    """What `kafka-coop pipeline run` was given."""

    topic: str
    out: Path
    checkpoint: Path
    bootstrap: str
    kafka_conf: Mapping[str, str] = field(default_factory=dict)
    master: str | None = None
    trigger_s: float = 5.0
    watermark_ms: int = 2_000
    window_ms: int = 60_000
    idle_ms: int = 10_000
    markers_topic: str = MARKERS_TOPIC
    state_partitions: int | None = None
    max_offsets_per_trigger: int | None = None  # a backlog read in bounded micro-batches
    figures_topic: str | None = None  # made (compacted) by preflight; `_figures_topic` writes it

    @property
    def stream(self) -> StreamConfig:
        return StreamConfig(
            watermark_ms=self.watermark_ms,
            window_ms=self.window_ms,
            idle_ms=self.idle_ms,
            topic=self.topic,
            markers_topic=self.markers_topic,
        )

    def recorded(self) -> dict[str, Any]:
        """What the checkpoint records and a restart must match."""
        return {
            "format": PIPELINE_FORMAT,
            "state_format": STATE_FORMAT,
            "topic": self.topic,
            "markers_topic": self.markers_topic,
            "out": str(self.out.absolute()),
            "window_ms": self.window_ms,
        }


# --- preflight: one sentence for each way the inputs can be wrong -------------------------------------
def check_writable(path: Path, what: str) -> None:
    """Create `path` if needed and prove a file can be written in it (InvalidInput otherwise)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".kafka-coop-probe-{uuid.uuid4().hex[:8]}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InvalidInput(
            f"Cannot write to {what} {path}: {reason}.", hint=f"Give {what} a directory you can write to."
        ) from None


def check_checkpoint(config: PipelineConfig) -> None:
    """A checkpoint is resumed only by the pipeline that wrote it: same format, topic, output, window."""
    record = config.checkpoint / CHECKPOINT_FILE
    wanted = config.recorded()
    start_fresh = "Start with an empty --checkpoint (and --out), or run the kafka-coop that wrote it."
    if record.exists():
        try:
            found = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidInput(
                f"Checkpoint record {record} is unreadable: {exc}.", hint=start_fresh
            ) from None
        if found.get("format") != PIPELINE_FORMAT or found.get("state_format") != STATE_FORMAT:
            raise InvalidInput(
                f"Checkpoint {config.checkpoint} was written by pipeline format {found.get('format')} "
                f"(state {found.get('state_format')}), written by kafka-coop {found.get('kafka_coop')}; "
                f"this kafka-coop {__version__} writes format {PIPELINE_FORMAT} (state {STATE_FORMAT}).",
                hint=start_fresh,
            )
        for key in ("topic", "markers_topic", "out", "window_ms"):
            if found.get(key) != wanted[key]:
                raise InvalidInput(
                    f"Checkpoint {config.checkpoint} belongs to a pipeline with {key} {found.get(key)!r}, "
                    f"not {wanted[key]!r}.",
                    hint=start_fresh,
                )
        return
    if (config.checkpoint / QUERY_DIR).exists() or any(
        (config.checkpoint / name).exists() for name in ("offsets", "commits", "metadata")
    ):
        raise InvalidInput(
            f"{config.checkpoint} holds a Spark checkpoint that kafka-coop did not write.", hint=start_fresh
        )


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    staging = path.with_name(f".{path.name}.{uuid.uuid4().hex[:6]}")
    staging.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(staging, path)


def preflight(config: PipelineConfig) -> None:
    """Everything that can be wrong before Spark starts (exit 2 or 3), in the order a user fixes it;
    a refused run leaves no directory it made behind."""
    from kafka_coop.analytics._report import check_kafka
    from kafka_coop.analytics._spark_cluster import check_master, removing_new_dirs

    with removing_new_dirs(config.out, config.checkpoint):
        check_writable(config.out, "--out")
        check_writable(config.checkpoint, "--checkpoint")
        check_checkpoint(config)
        check_kafka(config.bootstrap, [config.topic], config.kafka_conf)
        check_master(config.master)
        if config.figures_topic is not None:
            from kafka_coop.analytics._figures_topic import prepare_figures_topic

            prepare_figures_topic(config.figures_topic, config.topic, config.bootstrap, config.kafka_conf)


# --- the step Spark runs per group -------------------------------------------------------------------
# --- the query -------------------------------------------------------------------------------------
def pipeline_records(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    """The events topic and the markers topic as one stream of Kafka records (new partitions join)."""
    # anchored: the source finds the pattern anywhere in a topic's name (`events` read `events-figures`)
    pattern = "^(?:" + "|".join(f"\\Q{t}\\E" for t in (config.topic, config.markers_topic)) + ")$"
    reader = (
        spark.readStream.format("kafka")
        .options(**java_client_options(config.kafka_conf))
        .option("kafka.bootstrap.servers", config.bootstrap)
        .option("subscribePattern", pattern)
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "false")
    )
    if config.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(config.max_offsets_per_trigger))
    return reader.load()


def pipeline_input(records: DataFrame, markers_topic: str) -> DataFrame:
    """Kafka records as the step's input columns, keyed by `group` (null: records with no group)."""
    is_marker = F.col("topic") == F.lit(markers_topic)
    d = F.col("d")
    decoded = records.select(
        is_marker.alias("marker"),
        F.when(~is_marker, F.call_function(DECODE, F.col("value"))).alias("d"),
        F.col("value"),
        F.col("partition"),
        F.col("offset"),
        F.unix_millis(F.col("timestamp")).alias("kts"),
    ).where(F.col("marker") | (F.coalesce(d["reason"], F.lit("-")) != ""))  # "": a blank line
    bad = d["reason"].isNotNull()
    marker_group = F.get_json_object(F.col("value").cast("string"), "$.group")
    return decoded.select(
        F.when(F.col("marker"), marker_group).otherwise(d["group"]).alias("group"),
        F.col("marker"),
        d["reason"].alias("reason"),
        d["member"].alias("member"),
        d["member_id"].alias("member_id"),
        d["ts"].alias("ts"),
        d["seq"].alias("seq"),
        d["kind"].alias("kind"),
        d["protocol"].alias("protocol"),
        d["topic"].alias("topic"),
        F.when(F.size(d["topics"]) > 0, F.concat_ws(TOPICS_SEP, d["topics"])).alias("topics"),
        d["parts"].alias("parts"),
        d["n_owned"].alias("n_owned"),
        d["cb_us"].alias("cb_us"),
        F.col("partition"),
        F.col("offset"),
        F.col("kts"),
        F.when(F.col("marker") | bad, F.col("value")).alias("raw"),
    )


def output_rows(rows: DataFrame, config: StreamConfig) -> DataFrame:
    """The step over every group (`LiveStep`, in the JVM), then the date each row is filed under."""
    spark = rows.sparkSession
    step_input = rows.select("group", *(name for name, _ in INPUT_FIELDS))
    stepped = spark._jvm.kafkacoop.LiveStep.apply(  # type: ignore[union-attr]
        step_input._jdf,
        STEP_OUTPUT_DDL,
        config.watermark_ms,
        config.window_ms,
        config.max_future_ms,
        config.idle_ms,
        config.live,
        config.topic,
        config.markers_topic,
    )
    return DataFrame(stepped, spark).withColumn(
        "date", F.date_format(F.timestamp_millis(F.col("ts")), "yyyy-MM-dd")
    )


def start_pipeline(spark: SparkSession, config: PipelineConfig) -> StreamingQuery:
    """Start the job (preflight done); the checkpoint record is written once Spark accepted it."""
    partitions = config.state_partitions or max(2, spark.sparkContext.defaultParallelism)
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))  # a new checkpoint keeps it
    # The step's 47-column output rows make a whole-stage method HotSpot will not compile (over its 8,000
    # bytes), so it ran interpreted: half the job's time (JFR). Spark then generates smaller methods.
    spark.conf.set("spark.sql.codegen.hugeMethodLimit", str(HOTSPOT_HUGE_METHOD_LIMIT))
    rows = output_rows(pipeline_input(pipeline_records(spark, config), config.markers_topic), config.stream)
    query = (
        rows.writeStream.format("parquet")
        .option("path", str(config.out.absolute()))
        .option("checkpointLocation", str((config.checkpoint / QUERY_DIR).absolute()))
        .partitionBy("group", "date")
        .outputMode("append")
        .trigger(processingTime=f"{int(config.trigger_s * 1000)} milliseconds")
        .queryName(APP_NAME)
        .start()
    )
    recorded = {**config.recorded(), "kafka_coop": __version__}
    _write_json(config.checkpoint / CHECKPOINT_FILE, recorded)
    _write_json(
        config.out / PIPELINE_FILE,
        {
            **recorded,
            "checkpoint": str(config.checkpoint.absolute()),
            "watermark_ms": config.watermark_ms,
            "idle_ms": config.idle_ms,
            "trigger_s": config.trigger_s,
        },
    )
    return query


# --- progress ----------------------------------------------------------------------------------------
def committed_batch(checkpoint: Path) -> tuple[int, int] | None:
    """The last committed micro-batch and its timestamp (Spark's offset log records it), or None."""
    commits = checkpoint / QUERY_DIR / "commits"
    if not commits.is_dir():
        return None
    ids = [int(p.name) for p in commits.iterdir() if p.name.isdigit()]
    if not ids:
        return None
    batch = max(ids)
    lines = (checkpoint / QUERY_DIR / "offsets" / str(batch)).read_text(encoding="utf-8").splitlines()
    return batch, int(json.loads(lines[1])["batchTimestampMs"])


def write_progress(config: PipelineConfig, batch: int, batch_time_ms: int) -> None:
    """`_kafka_coop_progress.json` in --out: the last committed batch and its time. (How far each
    group's figures reach is its own event-time clock: the `ts` of its latest state rows.)"""
    _write_json(
        config.out / PROGRESS_FILE,
        {
            "batch": batch,
            "batch_time_ms": batch_time_ms,
            "written_ms": int(time.time() * 1000),
        },
    )


class _Stop:
    """Ctrl-C (SIGINT) and SIGTERM ask the loop to stop the query; the second Ctrl-C is not needed."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _Stop:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *_: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.signal = signum
        self.event.set()


@dataclass
class RunResult:
    batches: int
    last_batch: int | None
    interrupted: bool
    stopped_by: str  # "interrupt" | "terminate" | "stop" (the caller's event) | "idle"


def run_pipeline(
    config: PipelineConfig,
    *,
    stop: threading.Event | None = None,
    on_batch: Callable[[int, int], None] | None = None,
    spark: SparkSession | None = None,
) -> RunResult:
    """Run the pipeline until Ctrl-C, SIGTERM or `stop` is set; the query is stopped cleanly (the
    checkpoint stays consistent: a batch cut short is run again on restart)."""
    preflight(config)
    session = spark or get_session(config.master, kafka=True, app=APP_NAME)
    try:
        query = start_pipeline(session, config)
    except Exception as exc:  # Spark refused the query or the checkpoint
        raise _spark_error(exc, config) from None
    seen = 0
    resumed = committed_batch(config.checkpoint)  # a restart's earlier batches are not this run's
    last: int | None = resumed[0] if resumed is not None else None
    reason = "stop"
    with _Stop() as signals:
        try:
            while True:
                if signals.event.is_set():
                    reason = "interrupt" if signals.signal == signal.SIGINT else "terminate"
                    break
                if stop is not None and stop.is_set():
                    break
                if not query.isActive:
                    failure = query.exception()
                    raise (
                        _spark_error(failure, config)
                        if failure is not None
                        else InvalidInput("The pipeline's query stopped without an error.")
                    )
                done = committed_batch(config.checkpoint)
                if done is not None and done[0] != last:
                    last = done[0]
                    seen += 1
                    write_progress(config, *done)
                    if on_batch is not None:
                        on_batch(*done)
                signals.event.wait(POLL_S)
        finally:
            _stop_between_batches(query, config.trigger_s, session)
            done = committed_batch(config.checkpoint)
            if done is not None and done[0] != last:
                last = done[0]
                write_progress(config, *done)
    return RunResult(batches=seen, last_batch=last, interrupted=reason == "interrupt", stopped_by=reason)


def _stop_between_batches(query: StreamingQuery, trigger_s: float, spark: SparkSession) -> None:
    """Stop while the query waits for its next trigger, so no batch is cut short (one that is runs
    again on restart: consistent either way). A query that is behind never waits: it is stopped as soon
    as the batch under way commits, and Spark's log of the next one's interruption is silenced."""
    deadline = time.monotonic() + max(30.0, 3 * trigger_s)
    running = _batch_id(query)
    while query.isActive and time.monotonic() < deadline:
        try:
            if not query.status.get("isTriggerActive", False) or _batch_id(query) != running:
                break
        except Exception:  # the query ended meanwhile
            break
        time.sleep(0.05)
    if query.isActive:
        quiet_spark_log(spark)
        try:
            query.stop()  # returns once the query's thread has ended ...
            _wait_for_tasks(spark)  # ... not its tasks: an aborting one logged a Java trace (CI, run Z)
        finally:
            spark.sparkContext.setLogLevel(SPARK_LOG_LEVEL)


def _wait_for_tasks(spark: SparkSession, timeout_s: float = TASKS_END_WAIT_S) -> None:
    """Until no stage runs (bounded): a stopped query's tasks go on aborting, and log while they do."""
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + timeout_s
    while tracker.getActiveStageIds() and time.monotonic() < deadline:
        time.sleep(0.05)


def _batch_id(query: StreamingQuery) -> int | None:
    progress = query.lastProgress
    return None if progress is None else int(progress["batchId"])


def quiet_spark_log(spark: SparkSession) -> None:
    """Nothing from Spark's log until the query stopped: a query stopped on purpose logs its interrupted
    batch as errors with Java stack traces (the checkpoint is consistent: that batch runs again)."""
    spark.sparkContext.setLogLevel("OFF")


def _spark_error(exc: BaseException, config: PipelineConfig) -> Exception:
    """Spark's failure as one sentence (the first line of its message names the cause)."""
    text = str(getattr(exc, "desc", None) or exc)
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
    if "TimeoutException" in text or "Timed out waiting for a node" in text:
        return ClusterUnavailable(
            f"The pipeline lost the Kafka cluster at {config.bootstrap}: {first[:200]}",
            hint="Check that the brokers run; the pipeline resumes from its checkpoint when restarted.",
        )
    return InvalidInput(
        f"The pipeline's Spark query failed: {first[:300]}",
        hint=f"Its checkpoint {config.checkpoint} is consistent: run the same command again to resume.",
    )

"""The Spark engine: the reference engine's `Summary` from any number of events, on any Spark master.

The only module that imports pyspark: one pass with one shuffle (by consumer group), each task running
the whole-array core (`_columnar`) over Arrow batches, the driver merging partial records; nothing
collects events to the driver. docs/design/analytics.md has the steps and why.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlparse

from kafka_coop._waiting import interruptible_call
from kafka_coop.analytics._engine import (
    INTERVALS_TABLE,
    MAX_MALFORMED_KEPT,
    PAUSES_TABLE,
    SPARK_HINT,
    EngineOutcome,
)
from kafka_coop.analytics._kafka_options import java_client_options
from kafka_coop.analytics._model import Malformed, PhaseWindow
from kafka_coop.analytics._read import expand_paths, is_kafka_source, kafka_topic
from kafka_coop.analytics._timeline import LevelChange, levels
from kafka_coop.analytics._versions import refusal
from kafka_coop.errors import InvalidInput
from kafka_coop.events import PartitionKey

try:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        ByteType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )
except ImportError as exc:  # pragma: no cover - exercised by users without the extra
    raise InvalidInput(
        "The Spark engine needs pyspark and pyarrow, which are not installed.", hint=SPARK_HINT
    ) from exc

from kafka_coop.analytics._columnar import (
    EVENT_COLUMNS,
    RECORD_SCHEMA,
    analyse,
    merge_deltas,
    pack_deltas,
    span_deltas,
    summary_of,
    unpack_deltas,
)

DEFAULT_MASTER: Final = "local[*]"
DRIVER_MEMORY: Final = os.environ.get("KAFKA_COOP_SPARK_DRIVER_MEMORY", "3g")
SHUFFLE_PARTITIONS: Final = int(os.environ.get("KAFKA_COOP_SPARK_SHUFFLE_PARTITIONS", "8"))
ROW_BITS: Final = 33  # monotonically_increasing_id = partition index << 33 | row within partition
TASKS_PER_CORE: Final = 8  # groups are hashed onto tasks: more, smaller tasks even out the load
ARROW_BATCH_ROWS: Final = 100_000
# Spark's byte limit on an Arrow batch for Python is checked after every row by summing the sizes of every
# vector (ArrowWriter.sizeInBytes): over half the JVM time of feeding the Python tasks in a profile (JFR,
# 2 M events). Exactly Int.MaxValue skips the check; batches stay bounded by ARROW_BATCH_ROWS.
NO_ARROW_BYTE_LIMIT: Final = 2**31 - 1
# The engine hands Spark files, not directories (`expand_paths`): above Spark's default of 32 paths it
# lists them with a Spark job of one task per file (0.7 s for the benchmark's 40), the driver does it in
# a few stat calls.
LIST_ON_DRIVER_UP_TO: Final = 10_000
# A task allocates and frees a few GB of numpy temporaries; glibc's defaults hand large blocks back to
# the OS at once, so the next task of the same Python worker faults every page in again (measured: the
# first analysis of 1.25 M events 4.4 s, 2.2 s with these, warm 1.5 s).
WORKER_ENV: Final = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(8 << 30)}
DECODE: Final = "kafka_coop_decode"
SPARK_LOG_LEVEL: Final = "ERROR"
TRAINING_TIMEOUT_S: Final = 300

DECODED: Final = StructType(
    [
        StructField("reason", StringType()),
        StructField("group", StringType()),
        StructField("member", StringType()),
        StructField("member_id", StringType()),
        StructField("ts", LongType()),
        StructField("seq", LongType()),
        StructField("kind", ByteType()),
        StructField("protocol", ByteType()),
        StructField("topic", StringType()),
        StructField("topics", ArrayType(StringType())),
        StructField("parts", BinaryType()),
        StructField("n_owned", IntegerType()),
        StructField("cb_us", LongType()),
    ]
)

LOG4J2: Final = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""

_session: SparkSession | None = None
JVM_STOP_S = 3.0  # its shutdown hooks may wait on work that will not finish now


# --- the session ----------------------------------------------------------------------------------
def _log_config() -> Path:
    path = Path(tempfile.gettempdir()) / "kafka-coop-spark-log4j2.properties"
    if not path.exists() or path.read_text() != LOG4J2:
        path.write_text(LOG4J2)
    return path


def java_options() -> str:
    """The JVM options of the driver and the executors (the driver adds its AppCDS archive's)."""
    log = _log_config()
    return f"-Dlog4j2.configurationFile=file:{log} -Dlog4j.configurationFile=file:{log} -XX:+UseParallelGC"


def get_session(
    master: str | None = None, *, kafka: bool = False, app: str = "kafka-coop report"
) -> SparkSession:
    """One quiet SparkSession per process (tests share it), with our decoder registered and the Kafka
    connector on its classpath whenever it is cached (fetched first when a `kafka://` source needs it).
    Python workers run this interpreter, so they import the same kafka_coop, numpy and pyarrow."""
    global _session  # noqa: PLW0603  # one JVM per process, as Spark itself insists
    from kafka_coop.analytics._spark_cds import archive_options
    from kafka_coop.analytics._spark_cluster import check_master, is_local, package_zip
    from kafka_coop.analytics._spark_jars import (
        DECODER_CLASS,
        analytics_jar,
        cached_kafka_jars,
        resolve_kafka_jars,
    )

    if _session is not None:
        active = _session.sparkContext._jsc is not None
        if active and (not kafka or "spark-sql-kafka" in (_session.conf.get("spark.jars", "") or "")):
            return _session
        _session.stop()
        _session = None
    check_master(master)
    jars = [analytics_jar(), *(resolve_kafka_jars() if kafka else (cached_kafka_jars() or []))]
    java_opts = java_options()
    driver_opts = " ".join([java_opts, *archive_options(java_opts)])
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master or DEFAULT_MASTER)
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", DRIVER_MEMORY)
        .config("spark.driver.extraJavaOptions", driver_opts)
        .config("spark.executor.extraJavaOptions", java_opts)
        .config("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.jars", ",".join(str(j) for j in jars))
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(ARROW_BATCH_ROWS))
        .config("spark.sql.execution.arrow.maxBytesPerBatch", str(NO_ARROW_BYTE_LIMIT))
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", str(LIST_ON_DRIVER_UP_TO))
    )
    for name, value in WORKER_ENV.items():
        builder = builder.config(f"spark.executorEnv.{name}", value)
    try:
        # Made off the main thread: a SparkContext made in the main thread puts its own SIGINT handler in
        # (it cancels the jobs and raises a bare KeyboardInterrupt inside the py4j call under way, which
        # then logs its tracebacks), and the command's own handling of Ctrl-C would be gone.
        with _gateway_in_its_own_session():
            session = interruptible_call(builder.getOrCreate, name="kafka-coop-spark-start")
    except Exception as exc:  # the JVM did not start: no Java, bad master URL, ...
        raise InvalidInput(
            f"Spark could not start ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}).",
            hint="Spark needs Java 17+ on PATH and a reachable --master (default local[*]).",
        ) from None
    session.sparkContext.setLogLevel(SPARK_LOG_LEVEL)
    session.udf.registerJavaFunction(DECODE, DECODER_CLASS, DECODED)
    if not is_local(master):  # executors elsewhere run the driver's kafka_coop, not whatever they have
        session.sparkContext.addPyFile(str(package_zip()))
    _session = session
    return session


class _SessionPopen(subprocess.Popen):  # type: ignore[type-arg]
    """pyspark's gateway launch, with its `preexec_fn` (SIG_IGN for SIGINT, Python run in the forked child)
    replaced by a new session: Ctrl-C of the terminal still never reaches the JVM, and nothing runs
    between fork and exec. Python code in the child of a process with native threads (librdkafka's, the
    watchdog) is unsafe (the subprocess docs say so); it crashed the child twice in CI."""

    def __init__(self, *args: Any, preexec_fn: Any = None, **kwargs: Any) -> None:
        kwargs.setdefault("start_new_session", True)
        super().__init__(*args, **kwargs)


@contextlib.contextmanager
def _gateway_in_its_own_session() -> Iterator[None]:
    """While a session starts: pyspark's gateway launcher uses `_SessionPopen`."""
    from pyspark import java_gateway

    launcher = getattr(java_gateway, "Popen")  # noqa: B009 - the module's own name for subprocess.Popen
    setattr(java_gateway, "Popen", _SessionPopen)  # noqa: B010
    try:
        yield
    finally:
        setattr(java_gateway, "Popen", launcher)  # noqa: B010


def stop_session() -> None:
    global _session  # noqa: PLW0603
    if _session is not None:
        _session.stop()
        _session = None


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C (any KeyboardInterrupt) during Spark work stops the session: its jobs are cancelled and
    its JVM ends, instead of a JVM left computing. The interrupt goes on. While the work runs, py4j's
    report of a call broken by the interrupt is kept off stderr: it logs it on the root logger, with
    its traceback (`logging.exception`, which configures the root logger if nothing has)."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    root.setLevel(logging.CRITICAL)
    try:
        yield
    except KeyboardInterrupt:
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        with contextlib.suppress(Exception):
            # the jobs it cancels log their killed tasks with Java stack traces (seen in CI under load)
            if _session is not None:
                _session.sparkContext.setLogLevel("OFF")
            stop_session()
        # A session stopped mid-call leaves its gateway JVM serving py4j (seen: alive after its
        # parent exited), so the JVM this process launched is ended too.
        proc = getattr(gateway, "proc", None)
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(JVM_STOP_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        SparkContext._gateway = None
        SparkContext._jvm = None
        raise
    finally:
        root.setLevel(level)
        root.handlers[:] = handlers


# --- reading --------------------------------------------------------------------------------------
def _file_lines(spark: SparkSession, paths: Sequence[Path]) -> DataFrame:
    """value (the line's UTF-8 bytes), path, pid, row: the row index inside its Spark partition (line
    numbers come later)."""
    mono = F.monotonically_increasing_id()
    return (
        spark.read.text([str(p.absolute()) for p in paths])
        .select(
            F.col("value").cast("binary").alias("value"),
            F.input_file_name().alias("path"),
            F.shiftright(mono, ROW_BITS).alias("pid"),
            (mono - F.shiftleft(F.shiftright(mono, ROW_BITS), ROW_BITS)).alias("row"),
        )
        .withColumn("line", F.lit(None).cast("long"))
    )


def _kafka_lines(
    spark: SparkSession, bootstrap: str, topic: str, security: Mapping[str, str] | None = None
) -> DataFrame:
    """Every retained record, earliest to latest at the time of the read (a batch, not a stream)."""
    return (
        spark.read.format("kafka")
        .options(**java_client_options(security or {}))
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .option("failOnDataLoss", "false")
        .load()
        .select(
            F.col("value"),
            F.concat(F.lit("kafka://"), F.col("topic"), F.lit("/"), F.col("partition").cast("string")).alias(
                "path"
            ),
            F.lit(None).cast("long").alias("pid"),
            F.lit(None).cast("long").alias("row"),
            F.col("offset").alias("line"),
        )
    )


def _decoded(lines: DataFrame) -> DataFrame:
    """Event columns (EVENT_COLUMNS) for events; `reason` and where the line is for refused ones."""
    d = F.col("d")
    bad = d["reason"].isNotNull()
    return (
        lines.select(
            F.call_function(DECODE, F.col("value")).alias("d"), "path", "pid", "row", "line", "value"
        )
        .where(~bad | (d["reason"] != ""))  # "" = a blank line: not an event, not an error
        .select(
            *(d[c].alias(c) for c in EVENT_COLUMNS),
            d["reason"].alias("reason"),
            *(F.when(bad, F.col(c)).alias(c) for c in ("path", "pid", "row", "line", "value")),
        )
    )


# --- the tasks (run in Python workers) ------------------------------------------------------------
def _analyse_partition(
    batches: Iterator[pa.RecordBatch],
    *,
    out_dir: str,
    windows: tuple[tuple[str, int, int], ...],
    keep: int,
) -> Iterator[pa.RecordBatch]:
    """One task: analyse its groups, write its Parquet parts, return the partial records."""
    from pyspark import TaskContext

    context = TaskContext.get()
    part = context.partitionId() if context is not None else 0
    received = list(batches)
    records: list[dict[str, Any]] = []
    table = pa.Table.from_batches(received) if received else None
    if table is not None and table.num_rows:
        refused = pc.is_valid(table["reason"])
        bad = table.filter(refused)
        records.append({"rec": "head", "events": 0, "malformed": bad.num_rows})
        records.extend(
            {"rec": "malformed", **row, "reason": refusal(row["reason"], value)}
            for row, value in zip(
                bad.select(["path", "pid", "row", "line", "reason"]).slice(0, keep).to_pylist(),
                bad["value"].slice(0, keep).to_pylist(),
                strict=True,
            )
        )
        events = table.filter(pc.invert(refused)).select(list(EVENT_COLUMNS))
        phases = [PhaseWindow(name=name, start_ms=start, end_ms=end) for name, start, end in windows]
        analysis = analyse(events, phases)
        for name, data in ((INTERVALS_TABLE, analysis.intervals), (PAUSES_TABLE, analysis.pauses)):
            if data.num_rows:
                target = Path(out_dir) / name / f"part-{part:05d}.parquet"
                staging = target.with_name(f".{target.name}.partial")
                pq.write_table(data, staging)
                os.replace(staging, target)
        records.extend(analysis.records)
        for series, data in (("unowned", analysis.intervals), ("paused", analysis.pauses)):
            ts, d = span_deltas(data["start_ms"].to_numpy(), data["end_ms"].to_numpy())
            records.append({"rec": "deltas", "name": series, "blob": pack_deltas(ts, d)})
    yield pa.RecordBatch.from_pylist(records, schema=RECORD_SCHEMA)


# --- the job --------------------------------------------------------------------------------------
def spark_engine(
    sources: Sequence[str],
    out_dir: Path,
    *,
    phases: Sequence[PhaseWindow] | None = None,
    master: str | None = None,
    bootstrap: str | None = None,
    kafka_conf: Mapping[str, str] | None = None,
) -> EngineOutcome:
    """Summary, malformed lines and plot series; Parquet tables `intervals/` and `pauses/` in out_dir."""
    with interruptible():
        return _spark_engine(sources, out_dir, phases, master, bootstrap, kafka_conf)


def _spark_engine(
    sources: Sequence[str],
    out_dir: Path,
    phases: Sequence[PhaseWindow] | None,
    master: str | None,
    bootstrap: str | None,
    kafka_conf: Mapping[str, str] | None,
) -> EngineOutcome:
    kafka_sources = [s for s in sources if is_kafka_source(s)]
    spark = get_session(master, kafka=bool(kafka_sources))
    files = expand_paths([s for s in sources if not is_kafka_source(s)])
    parts: list[DataFrame] = []
    if files:
        parts.append(_file_lines(spark, files))
    for source in kafka_sources:
        if not bootstrap:
            raise InvalidInput("kafka:// sources need --bootstrap-server.")
        parts.append(_kafka_lines(spark, bootstrap, kafka_topic(source), kafka_conf))
    lines = parts[0]
    for more in parts[1:]:
        lines = lines.unionByName(more)
    for table in (INTERVALS_TABLE, PAUSES_TABLE):
        (out_dir / table).mkdir(parents=True, exist_ok=True)
    task = functools.partial(
        _analyse_partition,
        out_dir=str(out_dir.absolute()),
        windows=tuple((w.name, w.start_ms, w.end_ms) for w in phases or ()),
        keep=MAX_MALFORMED_KEPT,
    )
    tasks = max(SHUFFLE_PARTITIONS, spark.sparkContext.defaultParallelism * TASKS_PER_CORE)
    records = [
        row.asDict()
        for row in _decoded(lines)
        .repartition(tasks, "group")
        .mapInArrow(task, from_arrow_schema(RECORD_SCHEMA))
        .collect()
    ]
    summary = summary_of(records, list(phases) if phases is not None else None)
    kept = sorted(
        (r for r in records if r["rec"] == "malformed"),
        key=lambda r: (r["path"], r["pid"] or 0, r["row"] or 0),
    )[:MAX_MALFORMED_KEPT]
    numbers = _line_numbers(lines, kept)
    malformed = sorted(
        (
            Malformed(
                path=_local_path(r["path"]),
                line=int(r["line"]) if r["line"] is not None else numbers[(r["path"], r["pid"], r["row"])],
                reason=r["reason"],
            )
            for r in kept
        ),
        key=lambda m: (m.path, m.line),
    )
    return EngineOutcome(
        summary=summary,
        malformed=malformed,
        unowned=_series(records, "unowned"),
        paused=_series(records, "paused"),
    )


def _series(records: list[dict[str, Any]], name: str) -> list[LevelChange]:
    """The plot series `name` from every task's deltas: summed, then `levels` as the Python engine."""
    ts, d = merge_deltas(
        unpack_deltas(bytes(r["blob"])) for r in records if r["rec"] == "deltas" and r["name"] == name
    )
    return levels(zip(ts.tolist(), d.tolist(), strict=True))


def _line_numbers(lines: DataFrame, bad: list[dict[str, Any]]) -> dict[tuple[str, int, int], int]:
    """1-based line numbers of refused file lines: rows of the same file in earlier Spark partitions
    (a file's splits are in offset order) plus the row's place in its own split."""
    files = sorted({r["path"] for r in bad if r["line"] is None})
    if not files:
        return {}
    splits = (
        lines.where(F.col("path").isin(files))
        .groupBy("path", "pid")
        .agg(F.min("row").alias("first"), F.count(F.lit(1)).alias("n"))
        .collect()
    )
    before: dict[PartitionKey, int] = {}
    first: dict[PartitionKey, int] = {}
    for path in files:
        seen = 0
        for split in sorted((s for s in splits if s["path"] == path), key=lambda s: s["pid"]):
            before[(path, split["pid"])] = seen
            first[(path, split["pid"])] = split["first"]
            seen += split["n"]
    return {
        (r["path"], r["pid"], r["row"]): before[(r["path"], r["pid"])]
        + r["row"]
        - first[(r["path"], r["pid"])]
        + 1
        for r in bad
        if r["line"] is None
    }


def _local_path(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


# --- the driver's class archive (`_spark_cds`) ----------------------------------------------------
def _train_class_archive(tmp: Path) -> None:
    """The training child: the engine over a small generated stream, then the driver JVM exits and
    writes the archive (`-XX:ArchiveClassesAtExit`, which `get_session` adds in this child)."""
    from pyspark import SparkContext

    from kafka_coop.analytics._generate import write_jsonl
    from kafka_coop.analytics._spark_cds import TRAINING_EVENTS

    write_jsonl(tmp / "events", TRAINING_EVENTS, files=2)
    spark_engine([str(tmp / "events")], tmp / "out", master="local[2]")
    gateway = SparkContext._gateway
    if gateway is None:
        raise RuntimeError("no Spark driver JVM was started")
    jvm: subprocess.Popen[bytes] = gateway.proc  # the driver JVM PySpark started
    stop_session()
    if jvm.stdin is not None:
        jvm.stdin.close()  # PySpark's gateway exits when its stdin closes; the archive is written then
    jvm.wait(TRAINING_TIMEOUT_S)


def main(argv: Sequence[str]) -> None:
    """`python -m kafka_coop.analytics._spark --train-class-archive DIR`: the class archive's training
    child, started by `make_archive` (`kafka-coop prepare-spark` is the command that makes it)."""
    from kafka_coop.analytics._spark_cds import TRAINING_FLAG

    if len(argv) != 2 or argv[0] != TRAINING_FLAG:
        raise SystemExit("internal: run `kafka-coop prepare-spark` to make the Spark driver's class archive")
    _train_class_archive(Path(argv[1]))


if __name__ == "__main__":  # run the imported module's code, not a second copy of it named __main__
    from kafka_coop.analytics._spark import main as _main

    _main(sys.argv[1:])

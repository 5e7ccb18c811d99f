"""The Spark engine: the reference engine's definitions (kafka_coop.analytics._summary) as DataFrame
jobs, so the same `Summary` comes out of 10 M events on a cluster.

The only module that imports pyspark. Nothing collects raw events to the driver: intervals come from
window functions per partition, pauses from window functions per member, and the driver receives only
aggregates, the malformed lines (at most `MAX_MALFORMED_KEPT`) and a thinned plot series.

Intervals, per (topic, partition), rows ordered by `(ts_ms, member, seq)` like the reference:
assigned / revoked / lost rows from each event's delta, plus one `closed` row per partition its member
was ever assigned. A segment starts at each `assigned` row; its owner is that row's member; the first
revoked/lost/closed row of the owner inside the segment releases the partition. The next segment's
assignment closes an interval from that release, or, with no release and a different new owner, from
the old owner's last event before it (an as-of lookup with a window over that member's events).

Pauses, per member, rows ordered by `(ts_ms, seq)`: grouped by the number of pause-ending rows
(`assigned` with a non-empty `owned`) strictly before; a group's first pause-starting row (`started`,
or revoked/lost leaving `owned` empty) to its ending row is one pause.

Validation mirrors the reference's strict RebalanceEvent check: JSON syntax, required and unknown keys
(`json_object_keys`), types (a typed `from_json` with a corrupt-record column, plus a check that the
string fields hold JSON strings), enums, and `[topic, partition]` pairs. Known difference: a topic
written as a number inside `partitions` is accepted here (Spark reads array elements as text).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlparse

from kafka_coop.analytics._model import (
    Malformed,
    MemberStat,
    PartitionStat,
    PhaseStat,
    PhaseWindow,
    ProtocolStat,
    Summary,
)
from kafka_coop.analytics._read import expand_paths, is_kafka_source, kafka_topic
from kafka_coop.analytics._report import (
    INTERVALS_TABLE,
    MAX_MALFORMED_KEPT,
    PAUSES_TABLE,
    SPARK_HINT,
    EngineOutcome,
)
from kafka_coop.analytics._summary import default_phases
from kafka_coop.analytics._timeline import MAX_POINTS, Step
from kafka_coop.errors import InvalidInput

try:
    from pyspark.sql import Column, DataFrame, SparkSession, Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import (
        ArrayType,
        DoubleType,
        LongType,
        StringType,
        StructField,
        StructType,
    )
except ImportError as exc:  # pragma: no cover - exercised by users without the extra
    raise InvalidInput("The Spark engine needs pyspark, which is not installed.", hint=SPARK_HINT) from exc

DEFAULT_MASTER: Final = "local[*]"
DRIVER_MEMORY: Final = os.environ.get("KAFKA_COOP_SPARK_DRIVER_MEMORY", "3g")
SHUFFLE_PARTITIONS: Final = int(os.environ.get("KAFKA_COOP_SPARK_SHUFFLE_PARTITIONS", "8"))
ROW_BITS: Final = 33  # monotonically_increasing_id = partition index << 33 | row within partition

STRING_FIELDS: Final = ("group", "member_id", "instance_id", "client_id", "protocol", "kind", "error")
REQUIRED: Final = (
    "ts_ms",
    "seq",
    "group",
    "member_id",
    "instance_id",
    "client_id",
    "protocol",
    "kind",
    "partitions",
    "owned",
    "callback_ms",
)
OPTIONAL: Final = ("v", "committed", "error")
NOT_NULL: Final = tuple(f for f in REQUIRED if f != "instance_id")
PROTOCOLS: Final = ("eager", "cooperative", "consumer")
KINDS: Final = ("assigned", "revoked", "lost", "started", "closed")
STRICT_STRINGS: Final = (
    r'(?<!\\)"(group|member_id|client_id|protocol|kind)"\s*:\s*[^"\s]'
    r'|(?<!\\)"(instance_id|error)"\s*:\s*[^"\sn]'
)

_PAIRS = ArrayType(ArrayType(StringType()))
EVENT_SCHEMA: Final = StructType(
    [
        StructField("v", LongType()),
        StructField("ts_ms", LongType()),
        StructField("seq", LongType()),
        *(StructField(f, StringType()) for f in STRING_FIELDS[:-1]),
        StructField("partitions", _PAIRS),
        StructField("owned", _PAIRS),
        StructField("callback_ms", DoubleType()),
        StructField("committed", _PAIRS),
        StructField("error", StringType()),
        StructField("_corrupt", StringType()),
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


# --- the session ----------------------------------------------------------------------------------
def _log_config() -> Path:
    path = Path(tempfile.gettempdir()) / "kafka-coop-spark-log4j2.properties"
    if not path.exists() or path.read_text() != LOG4J2:
        path.write_text(LOG4J2)
    return path


def get_session(master: str | None = None, *, kafka: bool = False) -> SparkSession:
    """One quiet SparkSession per process (tests share it). The Kafka connector is on its classpath
    whenever it is cached (and is fetched first when a `kafka://` source needs it)."""
    global _session  # noqa: PLW0603  # one JVM per process, as Spark itself insists
    from kafka_coop.analytics._spark_jars import cached_kafka_jars, resolve_kafka_jars

    if _session is not None:
        active = _session.sparkContext._jsc is not None
        if active and (not kafka or "spark-sql-kafka" in (_session.conf.get("spark.jars", "") or "")):
            return _session
        _session.stop()
        _session = None
    jars = resolve_kafka_jars() if kafka else (cached_kafka_jars() or [])
    log = _log_config()
    java_opts = f"-Dlog4j2.configurationFile=file:{log} -Dlog4j.configurationFile=file:{log}"
    builder = (
        SparkSession.builder.master(master or DEFAULT_MASTER)
        .appName("kafka-coop report")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", DRIVER_MEMORY)
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.executor.extraJavaOptions", java_opts)
        .config("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.adaptive.enabled", "true")
    )
    if jars:
        builder = builder.config("spark.jars", ",".join(str(j) for j in jars))
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # the JVM did not start: no Java, bad master URL, ...
        raise InvalidInput(
            f"Spark could not start ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}).",
            hint="Spark needs Java 17+ on PATH and a reachable --master (default local[*]).",
        ) from None
    session.sparkContext.setLogLevel("ERROR")
    _session = session
    return session


def stop_session() -> None:
    global _session  # noqa: PLW0603
    if _session is not None:
        _session.stop()
        _session = None


# --- reading --------------------------------------------------------------------------------------
def _file_lines(spark: SparkSession, paths: Sequence[Path]) -> DataFrame:
    """value, path, pid, row: the row index inside its Spark partition (line numbers come later)."""
    mono = F.monotonically_increasing_id()
    return (
        spark.read.text([str(p.absolute()) for p in paths])
        .select(
            F.col("value"),
            F.input_file_name().alias("path"),
            F.shiftright(mono, ROW_BITS).alias("pid"),
            (mono - F.shiftleft(F.shiftright(mono, ROW_BITS), ROW_BITS)).alias("row"),
        )
        .withColumn("line", F.lit(None).cast("long"))
    )


def _kafka_lines(spark: SparkSession, bootstrap: str, topic: str) -> DataFrame:
    """Every retained record, earliest to latest at the time of the read (a batch, not a stream)."""
    return (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .option("failOnDataLoss", "false")
        .load()
        .select(
            F.col("value").cast("string").alias("value"),
            F.concat(F.lit("kafka://"), F.col("topic"), F.lit("/"), F.col("partition").cast("string")).alias(
                "path"
            ),
            F.lit(None).cast("long").alias("pid"),
            F.lit(None).cast("long").alias("row"),
            F.col("offset").alias("line"),
        )
    )


def _reason(parsed: Column, keys: Column, value: Column) -> Column:
    """Why a line is refused, or null for a valid event (the checks of `validate_line`)."""
    checks: list[tuple[Column, Column]] = [(keys.isNull(), F.lit("invalid JSON or not an object"))]
    for field in REQUIRED:
        checks.append((~F.array_contains(keys, field), F.lit(f"{field}: Field required")))
    allowed = F.array(*(F.lit(k) for k in (*REQUIRED, *OPTIONAL)))
    extra = F.array_except(keys, allowed)
    checks.append((F.size(extra) > 0, F.concat(extra[0], F.lit(": Extra inputs are not permitted"))))
    # a JSON string value starts with a quote; null only where the model allows it
    not_string = value.rlike(STRICT_STRINGS)
    which = F.concat(F.regexp_extract(value, STRICT_STRINGS, 1), F.regexp_extract(value, STRICT_STRINGS, 2))
    checks.append((not_string, F.concat(which, F.lit(": Input should be a valid string"))))
    checks.append((parsed["_corrupt"].isNotNull(), F.lit("a field has the wrong type")))
    for field in NOT_NULL:
        checks.append((parsed[field].isNull(), F.lit(f"{field}: wrong type or null")))
    checks.append(
        (F.array_contains(keys, "v") & ~F.coalesce(parsed["v"] == 1, F.lit(False)), F.lit("v: must be 1"))
    )
    checks.append((~parsed["protocol"].isin(*PROTOCOLS), F.lit("protocol: unknown protocol")))
    checks.append((~parsed["kind"].isin(*KINDS), F.lit("kind: unknown kind")))
    for field, width in (("partitions", 2), ("owned", 2), ("committed", 3)):
        ok = F.forall(F.coalesce(parsed[field], F.array()), _pair_check(width))
        shape = "[topic, partition, offset]" if width == 3 else "[topic, partition]"
        checks.append((~ok, F.lit(f"{field}: expected {shape} pairs")))
    reason: Column = F.lit(None).cast("string")
    for condition, text in reversed(checks):
        reason = F.when(F.coalesce(condition, F.lit(False)), text).otherwise(reason)
    return reason


def _pair_check(width: int) -> Any:
    """`[topic, n, ...]` of exactly `width` elements with integers after the topic."""

    def check(pair: Column) -> Column:
        numbers = F.forall(F.slice(pair, 2, width - 1), lambda n: n.rlike(r"^-?[0-9]+$"))
        return (F.size(pair) == width) & pair[0].isNotNull() & numbers

    return check


def _parse(lines: DataFrame) -> DataFrame:
    parsed = F.from_json(
        F.col("value"),
        EVENT_SCHEMA,
        {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt"},
    )
    return (
        lines.where(F.trim(F.col("value")) != "")
        .withColumn("j", parsed)
        .withColumn("keys", F.json_object_keys(F.col("value")))
        .withColumn("reason", _reason(F.col("j"), F.col("keys"), F.col("value")))
    )


def _events(parsed: DataFrame) -> DataFrame:
    j = F.col("j")

    def named(field: str) -> Column:
        return F.when(j[field] != "", j[field])

    return parsed.where(F.col("reason").isNull()).select(
        j["ts_ms"].alias("ts"),
        j["seq"].alias("seq"),
        F.coalesce(named("instance_id"), named("client_id"), j["member_id"]).alias("member"),
        j["protocol"].alias("protocol"),
        j["kind"].alias("kind"),
        F.transform(
            j["partitions"], lambda p: F.struct(p[0].alias("topic"), p[1].cast("int").alias("partition"))
        ).alias("parts"),
        F.size(j["owned"]).alias("n_owned"),
        F.floor(j["callback_ms"] * 1000 + 0.5).cast("long").alias("callback_us"),
    )


def _line_numbers(spark: SparkSession, lines: DataFrame, bad: list[Any]) -> dict[tuple[str, int, int], int]:
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
    before: dict[tuple[str, int], int] = {}
    first: dict[tuple[str, int], int] = {}
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


# --- the computation ------------------------------------------------------------------------------
def _intervals(ev: DataFrame) -> DataFrame:
    rows = ev.where(F.col("kind").isin("assigned", "revoked", "lost")).select(
        "ts", "member", "seq", "kind", F.explode("parts").alias("tp")
    )
    rows = rows.select("ts", "member", "seq", "kind", "tp.topic", "tp.partition")
    ever_assigned = rows.where(F.col("kind") == "assigned").select("member", "topic", "partition").distinct()
    closed = (
        ev.where(F.col("kind") == "closed")
        .select("ts", "member", "seq", "kind")
        .join(ever_assigned, "member")
        .select("ts", "member", "seq", "kind", "topic", "partition")
    )
    rows = rows.unionByName(closed)
    per_tp = Window.partitionBy("topic", "partition").orderBy("ts", "member", "seq")
    upto = per_tp.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    is_assigned = F.col("kind") == "assigned"
    rows = rows.withColumn("seg", F.sum(is_assigned.cast("int")).over(upto)).withColumn(
        "owner", F.last(F.when(is_assigned, F.col("member")), ignorenulls=True).over(upto)
    )
    releases = F.when(
        ~is_assigned & (F.col("member") == F.col("owner")),
        F.struct(
            "ts",
            "member",
            "seq",
            F.when(F.col("kind") == "closed", "revoked").otherwise(F.col("kind")).alias("cause"),
        ),
    )
    segs = (
        rows.where(F.col("seg") > 0)
        .groupBy("topic", "partition", "seg")
        .agg(
            F.max(F.when(is_assigned, F.struct("ts", "member", "seq"))).alias("assign"),
            F.min(releases).alias("release"),
        )
    )
    by_seg = Window.partitionBy("topic", "partition").orderBy("seg")
    segs = segs.withColumn("prev_owner", F.lag(F.col("assign.member")).over(by_seg)).withColumn(
        "prev_release", F.lag("release").over(by_seg)
    )
    segs = segs.where(
        F.col("prev_release").isNotNull()
        | (F.col("prev_owner").isNotNull() & (F.col("prev_owner") != F.col("assign.member")))
    ).withColumn("cid", F.monotonically_increasing_id())
    released = segs.where(F.col("prev_release").isNotNull()).select(
        "topic",
        "partition",
        F.col("prev_release.ts").alias("start_ms"),
        F.col("assign.ts").alias("end_ms"),
        F.col("prev_owner").alias("from_member"),
        F.col("assign.member").alias("to_member"),
        F.col("prev_release.cause").alias("cause"),
    )
    vanished = segs.where(F.col("prev_release").isNull())
    # as-of: the vanished owner's last event before the assignment, in the global order
    timeline = ev.select(
        "member",
        "ts",
        F.col("member").alias("order_member"),
        "seq",
        F.col("ts").alias("seen"),
        F.lit(None).cast("long").alias("cid"),
    ).unionByName(
        vanished.select(
            F.col("prev_owner").alias("member"),
            F.col("assign.ts").alias("ts"),
            F.col("assign.member").alias("order_member"),
            F.col("assign.seq").alias("seq"),
            F.lit(None).cast("long").alias("seen"),
            "cid",
        )
    )
    per_member = (
        Window.partitionBy("member")
        .orderBy("ts", "order_member", "seq")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    last_seen = (
        timeline.withColumn("last_seen", F.last("seen", ignorenulls=True).over(per_member))
        .where(F.col("cid").isNotNull())
        .select("cid", "last_seen")
    )
    gaps = vanished.join(last_seen, "cid").select(
        "topic",
        "partition",
        F.coalesce(F.col("last_seen"), F.col("assign.ts")).alias("start_ms"),
        F.col("assign.ts").alias("end_ms"),
        F.col("prev_owner").alias("from_member"),
        F.col("assign.member").alias("to_member"),
        F.lit("vanished").alias("cause"),
    )
    return released.unionByName(gaps)


def _pauses(ev: DataFrame) -> DataFrame:
    is_end = (F.col("kind") == "assigned") & (F.col("n_owned") > 0)
    is_start = (F.col("kind") == "started") | (
        F.col("kind").isin("revoked", "lost") & (F.col("n_owned") == 0)
    )
    before = Window.partitionBy("member").orderBy("ts", "seq").rowsBetween(Window.unboundedPreceding, -1)
    rows = ev.select("member", "ts", "seq", "kind", is_end.alias("is_end"), is_start.alias("is_start"))
    rows = rows.withColumn("group", F.coalesce(F.sum(F.col("is_end").cast("int")).over(before), F.lit(0)))
    return (
        rows.groupBy("member", "group")
        .agg(
            F.min(F.when(F.col("is_start"), F.struct("ts", "seq", "kind"))).alias("start"),
            F.max(F.when(F.col("is_end"), F.col("ts"))).alias("end_ms"),
        )
        .where(F.col("start").isNotNull() & F.col("end_ms").isNotNull())
        .select("member", F.col("start.ts").alias("start_ms"), "end_ms", F.col("start.kind").alias("cause"))
    )


def _clip(start: Column, end: Column) -> Column:
    return F.greatest(F.lit(0), F.least(end, F.col("p_end")) - F.greatest(start, F.col("p_start")))


def _steps(spans: DataFrame, first: int, last: int) -> list[Step]:
    """Level of concurrently open spans over time, thinned to about MAX_POINTS (peaks kept)."""
    changes = (
        spans.select(F.col("start_ms").alias("ts"), F.lit(1).alias("d"))
        .unionByName(spans.select(F.col("end_ms").alias("ts"), F.lit(-1).alias("d")))
        .groupBy("ts")
        .agg(F.sum("d").alias("d"))
        .where(F.col("d") != 0)
    )
    width = max(1, (last - first) // (MAX_POINTS // 2) + 1)
    # one global running sum: the series has one row per distinct timestamp, not per event
    levels = changes.withColumn(
        "level",
        F.sum("d").over(Window.orderBy("ts").rowsBetween(Window.unboundedPreceding, Window.currentRow)),
    ).withColumn("bucket", F.floor((F.col("ts") - F.lit(first)) / F.lit(width)))
    rows = (
        levels.groupBy("bucket")
        .agg(
            F.max(F.struct("level", F.col("ts"))).alias("peak"),
            F.max(F.struct("ts", "level")).alias("close"),
        )
        .orderBy("bucket")
        .collect()
    )
    out: list[Step] = []
    for r in rows:
        peak = (int(r["peak"]["ts"]), int(r["peak"]["level"]))
        close = (int(r["close"]["ts"]), int(r["close"]["level"]))
        out.extend([peak] if peak == close else sorted({peak, close}))
    return out


def spark_engine(
    sources: Sequence[str],
    out_dir: Path,
    *,
    phases: Sequence[PhaseWindow] | None = None,
    master: str | None = None,
    bootstrap: str | None = None,
) -> EngineOutcome:
    """Summary, malformed lines and plot series; Parquet tables `intervals/` and `pauses/` in out_dir."""
    kafka_sources = [s for s in sources if is_kafka_source(s)]
    spark = get_session(master, kafka=bool(kafka_sources))
    files = expand_paths([s for s in sources if not is_kafka_source(s)])
    parts: list[DataFrame] = []
    if files:
        parts.append(_file_lines(spark, files))
    for source in kafka_sources:
        if not bootstrap:
            raise InvalidInput("kafka:// sources need --bootstrap-server.")
        parts.append(_kafka_lines(spark, bootstrap, kafka_topic(source)))
    lines = parts[0]
    for more in parts[1:]:
        lines = lines.unionByName(more)
    return _compute(spark, lines, out_dir, phases)


def _compute(
    spark: SparkSession, lines: DataFrame, out_dir: Path, phases: Sequence[PhaseWindow] | None
) -> EngineOutcome:
    parsed = _parse(lines).persist()
    try:
        return _compute_parsed(spark, lines, parsed, out_dir, phases)
    finally:
        parsed.unpersist()


def _compute_parsed(
    spark: SparkSession,
    lines: DataFrame,
    parsed: DataFrame,
    out_dir: Path,
    phases: Sequence[PhaseWindow] | None,
) -> EngineOutcome:
    valid = F.col("reason").isNull()
    head = parsed.agg(
        F.sum((~valid).cast("long")).alias("bad"),
        F.sum(valid.cast("long")).alias("n"),
        F.min(F.when(valid, F.col("j.ts_ms"))).alias("first"),
        F.max(F.when(valid, F.col("j.ts_ms"))).alias("last"),
    ).first()
    assert head is not None
    n_bad, n_events, first, last = int(head["bad"] or 0), int(head["n"] or 0), head["first"], head["last"]
    kept = []
    if n_bad:
        kept = (
            parsed.where(~valid)
            .select("path", "pid", "row", "line", "reason")
            .limit(MAX_MALFORMED_KEPT)
            .collect()
        )
    numbers = _line_numbers(spark, lines, kept)
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
    ev = _events(parsed).persist()
    try:
        head = ev.agg(
            F.count(F.lit(1)).alias("n"), F.min("ts").alias("first"), F.max("ts").alias("last")
        ).first()
        assert head is not None
        n_events, first, last = int(head["n"]), head["first"], head["last"]
        windows = list(phases) if phases is not None else default_phases(first, last)
        if n_events == 0:
            summary = Summary(
                events=0,
                malformed=n_bad,
                first_ts_ms=None,
                last_ts_ms=None,
                intervals=0,
                partition_unavailable_ms_total=0,
                pauses=0,
                pause_ms_total=0,
                partitions=[],
                members=[],
                rebalances={},
                phases=[],
            )
            return EngineOutcome(summary=summary, malformed=malformed, unowned=[], paused=[])
        _intervals(ev).write.parquet(str(out_dir / INTERVALS_TABLE))
        _pauses(ev).write.parquet(str(out_dir / PAUSES_TABLE))
        intervals = spark.read.parquet(str(out_dir / INTERVALS_TABLE))
        pause_df = spark.read.parquet(str(out_dir / PAUSES_TABLE))
        summary = _summary(spark, ev, intervals, pause_df, windows, n_events, n_bad, int(first), int(last))
        unowned = _steps(intervals, int(first), int(last))
        paused = _steps(pause_df, int(first), int(last))
    finally:
        ev.unpersist()
    return EngineOutcome(summary=summary, malformed=malformed, unowned=unowned, paused=paused)


def _summary(
    spark: SparkSession,
    ev: DataFrame,
    intervals: DataFrame,
    pause_df: DataFrame,
    windows: list[PhaseWindow],
    n_events: int,
    n_bad: int,
    first: int,
    last: int,
) -> Summary:
    duration = F.col("end_ms") - F.col("start_ms")
    n_parts = F.size("parts")

    def count_kind(kind: str) -> Column:
        return F.sum((F.col("kind") == kind).cast("long"))

    def parts_of(kind: str) -> Column:
        return F.sum(F.when(F.col("kind") == kind, n_parts).otherwise(0))

    per_tp = intervals.groupBy("topic", "partition").agg(
        F.sum(duration).alias("ms"), F.count(F.lit(1)).alias("n")
    )
    seen = ev.select(F.explode("parts").alias("tp")).select("tp.topic", "tp.partition").distinct()
    partitions = [
        PartitionStat(
            topic=r["topic"],
            partition=r["partition"],
            unavailable_ms=int(r["ms"] or 0),
            intervals=int(r["n"] or 0),
        )
        for r in seen.join(per_tp, ["topic", "partition"], "full_outer")
        .orderBy("topic", "partition")
        .collect()
    ]
    per_member_pause = pause_df.groupBy("member").agg(
        F.sum(duration).alias("pause_ms"), F.count(F.lit(1)).alias("pauses")
    )
    member_rows = (
        ev.groupBy("member")
        .agg(
            F.count(F.lit(1)).alias("events"),
            count_kind("assigned").alias("rebalances"),
            parts_of("revoked").alias("revoked_partitions"),
            parts_of("lost").alias("lost_partitions"),
            F.sum("callback_us").alias("cb_total"),
            F.max("callback_us").alias("cb_max"),
        )
        .join(per_member_pause, "member", "left")
        .orderBy("member")
        .collect()
    )
    members = [
        MemberStat(
            name=r["member"],
            events=r["events"],
            pause_ms=int(r["pause_ms"] or 0),
            pauses=int(r["pauses"] or 0),
            rebalances=r["rebalances"],
            revoked_partitions=r["revoked_partitions"],
            lost_partitions=r["lost_partitions"],
            callback_ms_total=r["cb_total"] / 1000,
            callback_ms_max=r["cb_max"] / 1000,
        )
        for r in member_rows
    ]
    protocol_rows = (
        ev.groupBy("protocol")
        .agg(
            F.countDistinct("member").alias("members"),
            F.sum(F.col("kind").isin("assigned", "revoked", "lost").cast("long")).alias("events"),
            count_kind("assigned").alias("rebalances"),
            count_kind("revoked").alias("revoked"),
            count_kind("lost").alias("lost"),
            parts_of("revoked").alias("revoked_partitions"),
            parts_of("lost").alias("lost_partitions"),
        )
        .collect()
    )
    rebalances = {
        r["protocol"]: ProtocolStat(**{k: int(v) for k, v in r.asDict().items() if k != "protocol"})
        for r in sorted(protocol_rows, key=lambda r: r["protocol"])
    }
    phase_stats = _phase_stats(spark, ev, intervals, pause_df, windows)
    return Summary(
        events=n_events,
        malformed=n_bad,
        first_ts_ms=first,
        last_ts_ms=last,
        intervals=sum(p.intervals for p in partitions),
        partition_unavailable_ms_total=sum(p.unavailable_ms for p in partitions),
        pauses=sum(m.pauses for m in members),
        pause_ms_total=sum(m.pause_ms for m in members),
        partitions=partitions,
        members=members,
        rebalances=rebalances,
        phases=phase_stats,
    )


def _phase_stats(
    spark: SparkSession,
    ev: DataFrame,
    intervals: DataFrame,
    pause_df: DataFrame,
    windows: list[PhaseWindow],
) -> list[PhaseStat]:
    if not windows:
        return []
    table = F.broadcast(
        spark.createDataFrame(
            [(i, w.start_ms, w.end_ms) for i, w in enumerate(windows)], "idx int, p_start long, p_end long"
        )
    )
    spans = intervals.select("start_ms", "end_ms", F.lit("unavailable").alias("what")).unionByName(
        pause_df.select("start_ms", "end_ms", F.lit("paused").alias("what"))
    )
    clipped = {
        (int(r["idx"]), r["what"]): int(r["ms"] or 0)
        for r in spans.crossJoin(table)
        .groupBy("idx", "what")
        .agg(F.sum(_clip(F.col("start_ms"), F.col("end_ms"))).alias("ms"))
        .collect()
    }
    inside = (F.col("ts") >= F.col("p_start")) & (F.col("ts") < F.col("p_end"))
    counts = {
        r["idx"]: r
        for r in ev.crossJoin(table)
        .where(inside)
        .groupBy("idx")
        .agg(
            F.count(F.lit(1)).alias("events"),
            F.sum((F.col("kind") == "assigned").cast("long")).alias("rebalances"),
            F.sum(F.when(F.col("kind") == "revoked", F.size("parts")).otherwise(0)).alias(
                "revoked_partitions"
            ),
        )
        .collect()
    }
    out = []
    for i, w in enumerate(windows):
        row = counts.get(i)
        out.append(
            PhaseStat(
                name=w.name,
                start_ms=w.start_ms,
                end_ms=w.end_ms,
                events=int(row["events"]) if row else 0,
                partition_unavailable_ms=clipped.get((i, "unavailable"), 0),
                pause_ms=clipped.get((i, "paused"), 0),
                rebalances=int(row["rebalances"]) if row else 0,
                revoked_partitions=int(row["revoked_partitions"]) if row else 0,
            )
        )
    return out

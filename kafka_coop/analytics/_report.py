"""`run_report`: the imperative shell of `kafka-coop report`.

Reads the sources, runs one engine, and publishes `summary.json`, `malformed.jsonl` (when any line was
refused), `unowned.png` and, with Spark, the Parquet tables `intervals/` and `pauses/`. Everything is
written into a temporary directory next to `out_dir` and moved in only when all of it succeeded, so a
failed run never leaves half a report (an earlier report in `out_dir` is replaced file by file).

Engines: `python` (the reference; reads files and `kafka://` topics with confluent-kafka), `spark`
(PySpark, any `--master`), `auto`: python when every source is a local file and they total at most
`AUTO_PYTHON_MAX_BYTES`, otherwise spark (falling back to python with a note when pyspark is missing
and the inputs are local files).
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from kafka_coop._extras import install_hint, installed
from kafka_coop.analytics._engine import (
    INTERVALS_TABLE,
    MAX_MALFORMED_KEPT,
    PAUSES_TABLE,
    SPARK_HINT,
    EngineOutcome,
)
from kafka_coop.analytics._intervals import unavailability
from kafka_coop.analytics._model import Malformed, PhaseWindow, Summary
from kafka_coop.analytics._phases import load_phases
from kafka_coop.analytics._read import (
    expand_paths,
    is_kafka_source,
    kafka_topic,
    read_event_lines,
    validate_line,
)
from kafka_coop.analytics._summary import pauses, summarize
from kafka_coop.analytics._timeline import deltas, levels
from kafka_coop.errors import ClusterUnavailable, InvalidInput

Engine = Literal["auto", "python", "spark"]
ENGINES: Final = ("auto", "python", "spark")
AUTO_PYTHON_MAX_BYTES: Final = 64 * 1024 * 1024
SUMMARY_FILE: Final = "summary.json"
MALFORMED_FILE: Final = "malformed.jsonl"
PLOT_FILE: Final = "unowned.png"
PRODUCTS: Final = frozenset({SUMMARY_FILE, MALFORMED_FILE, PLOT_FILE, INTERVALS_TABLE, PAUSES_TABLE})
KAFKA_TIMEOUT_S: Final = 10.0


@dataclass
class ReportResult:
    summary: Summary
    engine: str
    out_dir: Path
    paths: list[Path]
    malformed: list[Malformed]  # the first MAX_MALFORMED_KEPT; summary.malformed counts all
    elapsed_s: float
    notes: list[str] = field(default_factory=list)


def spark_available() -> bool:
    return installed("pyspark")


def choose_engine(sources: Sequence[str], engine: Engine = "auto") -> str:
    """The engine a run uses (see the module docstring for `auto`)."""
    if engine == "python":
        return "python"
    if engine == "spark":
        if not spark_available():
            raise InvalidInput("The Spark engine needs pyspark, which is not installed.", hint=SPARK_HINT)
        return "spark"
    local = [s for s in sources if not is_kafka_source(s)]
    if len(local) == len(sources):
        size = sum(p.stat().st_size for p in expand_paths(local))
        if size <= AUTO_PYTHON_MAX_BYTES or not spark_available():
            return "python"
    return "spark" if spark_available() else "python"


def resolve_phases(phases: Sequence[PhaseWindow] | str | Path | None) -> list[PhaseWindow] | None:
    if phases is None:
        return None
    if isinstance(phases, str | Path):
        return load_phases(phases)
    return list(phases)


def pipeline_output(sources: Sequence[str]) -> Path | None:
    """The live pipeline's output directory when that is the one source (`report` reads its figures)."""
    if len(sources) != 1 or is_kafka_source(sources[0]) or not Path(sources[0]).is_dir():
        return None
    try:
        from kafka_coop.analytics._figures import is_pipeline_output  # pyarrow: the spark extra
    except ImportError:
        return None
    return Path(sources[0]) if is_pipeline_output(sources[0]) else None


def check_kafka(bootstrap: str | None, topics: Sequence[str], conf: Mapping[str, str] | None = None) -> None:
    """Fail fast, before any engine starts: exit 3 for an unreachable cluster or a topic the principal
    may not DESCRIBE (all-topics metadata leaves those out, like missing ones), 2 for a missing topic.
    `conf`: the connection's security settings (--command-config)."""
    if not topics:
        return
    if not bootstrap:
        raise InvalidInput(
            "kafka:// sources need --bootstrap-server.", hint="Or set KAFKA_BOOTSTRAP_SERVERS."
        )

    from kafka_coop.admin import ClusterAdmin

    admin = ClusterAdmin(bootstrap, conf)
    metadata = admin.metadata(timeout_s=KAFKA_TIMEOUT_S)  # a refused connection or login: at once
    for topic in topics:
        if topic not in metadata.topics:
            if admin.may_not_describe_topic(topic, timeout_s=KAFKA_TIMEOUT_S):
                raise ClusterUnavailable(
                    f"Not authorized to DESCRIBE topic {topic!r} on {bootstrap}.",
                    hint="Grant DESCRIBE and READ on the topic to the principal in --command-config.",
                )
            raise InvalidInput(f"Topic {topic!r} does not exist on {bootstrap}.")


def read_topic_values(
    bootstrap: str, topic: str, conf: Mapping[str, str] | None = None
) -> Iterator[tuple[int, int, bytes]]:
    """(partition, offset, value) of every retained record of `topic`, read once from the low to the
    high watermark (no group)."""
    from confluent_kafka import Consumer, TopicPartition

    from kafka_coop.admin import ClusterAdmin

    meta = ClusterAdmin(bootstrap, conf).metadata(topic, timeout_s=KAFKA_TIMEOUT_S)
    consumer = Consumer(
        {
            **(conf or {}),
            "bootstrap.servers": bootstrap,
            "group.id": f"kafka-coop-report-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    try:
        todo: dict[int, int] = {}
        assignment = []
        for p in sorted(meta.topics[topic].partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=KAFKA_TIMEOUT_S)
            if high > low:
                todo[p] = high
                assignment.append(TopicPartition(topic, p, low))
        consumer.assign(assignment)
        deadline = time.monotonic() + 60 + sum(todo.values()) / 10_000
        while todo:
            if time.monotonic() > deadline:
                raise ClusterUnavailable(f"Reading {topic} from {bootstrap} timed out.")
            for msg in consumer.consume(num_messages=10_000, timeout=1.0):
                if msg.error() is not None:
                    continue
                part, offset = msg.partition(), msg.offset()
                if part is None or offset is None or part not in todo or offset >= todo[part]:
                    continue
                if offset + 1 >= todo[part]:
                    del todo[part]
                yield part, offset, msg.value() or b""
    finally:
        consumer.close()


def read_kafka_python(
    bootstrap: str, topic: str, conf: Mapping[str, str] | None = None
) -> tuple[list[dict[str, Any]], list[Malformed]]:
    """Every retained record of `topic` as an event, or as a refused record with its place."""
    events: list[dict[str, Any]] = []
    malformed: list[Malformed] = []
    for part, offset, value in read_topic_values(bootstrap, topic, conf):
        result = validate_line(value.decode("utf-8", errors="replace"))
        if isinstance(result, str):
            malformed.append(Malformed(path=f"kafka://{topic}/{part}", line=offset, reason=result))
        else:
            events.append(result)
    return events, malformed


def python_engine(
    sources: Sequence[str],
    phases: list[PhaseWindow] | None,
    bootstrap: str | None,
    conf: Mapping[str, str] | None = None,
) -> EngineOutcome:
    files = [s for s in sources if not is_kafka_source(s)]
    events, malformed = read_event_lines(files) if files else ([], [])
    for source in sources:
        if is_kafka_source(source):
            assert bootstrap is not None  # check_kafka ran
            more, bad = read_kafka_python(bootstrap, kafka_topic(source), conf)
            events.extend(more)
            malformed.extend(bad)
    summary = summarize(events, phases).model_copy(update={"malformed": len(malformed)})
    intervals = unavailability(events)
    return EngineOutcome(
        summary=summary,
        malformed=malformed,
        unowned=levels(deltas((i.start_ms, i.end_ms) for i in intervals)),
        paused=levels(deltas((p.start_ms, p.end_ms) for p in pauses(events))),
    )


def _publish(tmp: Path, out_dir: Path) -> list[Path]:
    """Move every finished product from `tmp` into `out_dir`, replacing older ones of the same name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    fresh = {item.name for item in tmp.iterdir()}
    for stale in PRODUCTS - fresh:  # an older report's malformed.jsonl must not outlive it
        _remove(out_dir / stale)
    paths = []
    for item in sorted(tmp.iterdir()):
        dest = out_dir / item.name
        _remove(dest)
        os.replace(item, dest)
        paths.append(dest)
    return paths


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _why(exc: OSError) -> str:
    if isinstance(exc, FileExistsError | NotADirectoryError):
        return "a part of its path is a file, not a directory"
    return (exc.strerror or str(exc)).lower()


def run_report(
    sources: Sequence[str | Path],
    out_dir: str | Path,
    *,
    engine: Engine = "auto",
    phases: Sequence[PhaseWindow] | str | Path | None = None,
    bootstrap: str | None = None,
    master: str | None = None,
    plot: bool = True,
    conf: Mapping[str, str] | None = None,
    groups: Sequence[str] | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
) -> ReportResult:
    """Read, compute, write. Raises InvalidInput (exit 2) for missing inputs or no events at all and
    ClusterUnavailable (exit 3) for an unreachable bootstrap server; writes nothing in either case.
    `conf`: librdkafka connection/security settings for kafka:// sources (--command-config)."""
    began = time.monotonic()
    texts = [str(s) for s in sources]
    if not texts:
        raise InvalidInput(
            "Give at least one events source.", hint="Files, directories, globs or kafka://TOPIC."
        )
    windows = resolve_phases(phases)
    pipeline_out = pipeline_output(texts)
    if pipeline_out is None:
        if groups is not None or since_ms is not None or until_ms is not None:
            raise InvalidInput(
                "--group, --since and --until select from the live pipeline's output only.",
                hint="Give one directory `kafka-coop pipeline run` writes (its --out).",
            )
        local = [s for s in texts if not is_kafka_source(s)]
        expand_paths(local)  # a missing file is exit 2 before anything starts
        check_kafka(bootstrap, [kafka_topic(s) for s in texts if is_kafka_source(s)], conf)
    chosen = "pipeline" if pipeline_out is not None else choose_engine(texts, engine)
    target = Path(out_dir)
    tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()
    except OSError as exc:  # the report goes next to --out first: name --out, not the staging dir
        raise InvalidInput(
            f"Cannot write the report to {str(target)!r}: {_why(exc)}.",
            hint="Give --out a directory that this user may create (its parent must be a directory).",
        ) from None
    notes: list[str] = []
    try:
        if pipeline_out is not None:
            from kafka_coop.analytics._figures import Range, outcome_from_rows, read_pipeline_rows

            table = read_pipeline_rows(pipeline_out, groups=groups)
            outcome = outcome_from_rows(table, phases=windows, span=Range(since_ms, until_ms))
        elif chosen == "spark":
            from kafka_coop.analytics._spark import spark_engine

            outcome = spark_engine(
                texts, tmp, phases=windows, master=master, bootstrap=bootstrap, kafka_conf=conf
            )
        else:
            outcome = python_engine(texts, windows, bootstrap, conf)
        summary = outcome.summary
        if summary.events == 0:
            where = ""
            if outcome.malformed:
                first = outcome.malformed[0]
                where = (
                    f" ({summary.malformed} malformed lines, the first at {first.path}:{first.line}:"
                    f" {first.reason})"
                )
            raise InvalidInput(
                f"The sources hold no valid rebalance events{where}.",
                hint=(
                    "Point at the JSON lines a CoopConsumer writes with events=PATH (or kafka-coop consume "
                    "--events PATH): one RebalanceEvent per line."
                ),
            )
        (tmp / SUMMARY_FILE).write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
        if outcome.malformed:
            with (tmp / MALFORMED_FILE).open("w", encoding="utf-8") as fh:
                fh.writelines(m.model_dump_json() + "\n" for m in outcome.malformed[:MAX_MALFORMED_KEPT])
        if plot and not installed("matplotlib"):
            notes.append(f"No {PLOT_FILE}: matplotlib is not installed. {install_hint('matplotlib')}")
        elif plot and summary.first_ts_ms is not None and summary.last_ts_ms is not None:
            from kafka_coop.analytics._plot import render_png

            title = (
                f"{summary.events:,} events · {summary.partition_unavailable_ms_total:,} partition-ms "
                f"unowned · {summary.pause_ms_total:,} member-ms paused"
            )
            png = render_png(
                outcome.unowned,
                outcome.paused,
                summary.phases,
                summary.first_ts_ms,
                summary.last_ts_ms,
                title,
            )
            (tmp / PLOT_FILE).write_bytes(png)
        paths = _publish(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return ReportResult(
        summary=summary,
        engine=chosen,
        out_dir=target,
        paths=paths,
        malformed=outcome.malformed[:MAX_MALFORMED_KEPT],
        elapsed_s=round(time.monotonic() - began, 3),
        notes=notes,
    )

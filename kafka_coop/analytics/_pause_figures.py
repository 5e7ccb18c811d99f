"""The gate's pause figures, fetched: from the live pipeline's output or from the events topic.

The shell around `_pause_gate` (pure). The pipeline's output is read as `report DIR` reads it (only
the files its sink's log committed), its `pause` rows and its `phase` rows (the markers it applied).
The events topic is read whole with the reference engine (`_summary.pauses`) and the markers from the
markers topic. Either way only the group's rows count, and only pauses that overlap the phase's span.
A passing phase gate writes the marker that begins the next phase (`write_marker`); `judge_pause` adds
the pause check to a gate's report and writes that marker, for verify-group and the plan runner alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_coop.analytics._engine import SPARK_HINT
from kafka_coop.analytics._markers import MARKERS_TOPIC, MARKERS_TOPIC_CONFIG, PhaseMarker, parse_marker
from kafka_coop.analytics._pause_gate import PauseFigures, PhaseSpan, clipped_pauses, pause_check, phase_span
from kafka_coop.analytics._read import kafka_topic
from kafka_coop.analytics._report import KAFKA_TIMEOUT_S, check_kafka, read_kafka_python, read_topic_values
from kafka_coop.analytics._summary import pauses
from kafka_coop.errors import ClusterUnavailable, InvalidInput
from kafka_coop.rollout import GateReport, MigrationSpec, worst

PIPELINE_HINT = (
    "Give --pipeline-out the --out directory of `kafka-coop pipeline run`, or --events kafka://TOPIC."
)


@dataclass(frozen=True)
class Judged:
    """What the pause check judges: the group, and the phase (markers) or a start time (`since_ms`)."""

    group: str
    migration: str | None = None
    phase: int | None = None
    since_ms: int | None = None

    def span(self, markers: list[PhaseMarker], now_ms: int) -> PhaseSpan | None:
        if self.since_ms is not None:
            return PhaseSpan(start_ms=self.since_ms, end_ms=max(now_ms, self.since_ms), what="since --since")
        assert self.migration is not None and self.phase is not None  # the CLI checks
        return phase_span(
            markers, group=self.group, migration=self.migration, phase=self.phase, now_ms=now_ms
        )


def now_ms() -> int:
    return int(time.time() * 1000)


# --- the pipeline's output -----------------------------------------------------------------------------
def check_pipeline_out(out_dir: Path) -> None:
    """A directory `kafka-coop pipeline run` wrote, readable with pyarrow: else InvalidInput (exit 2)."""
    if not out_dir.is_dir():
        raise InvalidInput(
            f"Pipeline output {out_dir} does not exist or is not a directory.", hint=PIPELINE_HINT
        )
    try:
        from kafka_coop.analytics._figures import is_pipeline_output
    except ImportError:
        raise InvalidInput(
            "Reading the pipeline's output needs pyarrow, which is not installed.", hint=SPARK_HINT
        ) from None
    if not is_pipeline_output(out_dir):
        raise InvalidInput(f"{out_dir} is not the output of `kafka-coop pipeline run`.", hint=PIPELINE_HINT)


def from_pipeline(out_dir: Path, judged: Judged, now: int | None = None) -> PauseFigures:
    """The figures from `kafka-coop pipeline run`'s --out; a missing, foreign or unreadable directory is
    InvalidInput (exit 2)."""
    check_pipeline_out(out_dir)
    import pyarrow as pa

    from kafka_coop.analytics._figures import read_pipeline_rows

    now = now_ms() if now is None else now
    try:
        table = read_pipeline_rows(out_dir, groups=[judged.group], kinds=["pause", "callbacks", "phase"])
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise InvalidInput(
            f"The pipeline's output {out_dir} cannot be read: {str(exc).splitlines()[0][:200]}.",
            hint="Check the directory's files and permissions; the pipeline rewrites nothing it committed.",
        ) from None
    rows = table.to_pylist()
    progress = _group_frontier(rows)
    markers = [
        PhaseMarker(
            ts_ms=int(r["ts"]),
            group=judged.group,
            migration=str(r["migration"]),
            phase=int(r["phase_n"]),
            phases=int(r["phases"]),
        )
        for r in rows
        if r["kind"] == "phase"
    ]
    span = judged.span(markers, now)
    if span is None:
        return PauseFigures(
            source="pipeline", location=str(out_dir), group=judged.group, span=None, events=0, pauses_ms=()
        )
    end = span.end_ms if progress is None else min(span.end_ms, max(progress, span.start_ms))
    spans = [(int(r["start_ms"]), int(r["end_ms"])) for r in rows if r["kind"] == "pause"]
    events = sum(
        int(r["events"] or 0)
        for r in rows
        if r["kind"] == "callbacks" and int(r["last_ts"]) >= span.start_ms and int(r["first_ts"]) < end
    )
    return PauseFigures(
        source="pipeline",
        location=str(out_dir),
        group=judged.group,
        span=span,
        events=events,
        pauses_ms=clipped_pauses(spans, span.start_ms, end),
        measured_until_ms=end if end < span.end_ms else None,
    )


def _group_frontier(rows: list[dict[str, Any]]) -> int | None:
    """How far the pipeline's figures of the group reach: the latest event time its committed
    `callbacks` rows count (each group runs on its own event-time clock; None: nothing written yet)."""
    return max(
        (int(r["last_ts"]) for r in rows if r["kind"] == "callbacks" and r["last_ts"] is not None),
        default=None,
    )


# --- the events topic, with the reference engine -------------------------------------------------------
def from_events(
    source: str,
    judged: Judged,
    *,
    bootstrap: str,
    conf: Mapping[str, str] | None = None,
    markers_topic: str,
    now: int | None = None,
) -> PauseFigures:
    """The figures computed from every retained event of the group in `source` (kafka://TOPIC)."""
    topic = kafka_topic(source)
    check_kafka(bootstrap, [topic], conf)  # exit 3 unreachable, 2 missing topic
    now = now_ms() if now is None else now
    markers = [] if judged.since_ms is not None else read_markers(bootstrap, markers_topic, conf)
    span = judged.span(markers, now)
    if span is None:
        return PauseFigures(
            source="events", location=source, group=judged.group, span=None, events=0, pauses_ms=()
        )
    events, _ = read_kafka_python(bootstrap, topic, conf)
    own = [e for e in events if e["group"] == judged.group and int(e["ts_ms"]) < span.end_ms]
    inside = sum(
        1 for e in own if span.start_ms <= int(e["ts_ms"]) and e["kind"] in ("assigned", "revoked", "lost")
    )
    return PauseFigures(
        source="events",
        location=source,
        group=judged.group,
        span=span,
        events=inside,
        pauses_ms=clipped_pauses(((p.start_ms, p.end_ms) for p in pauses(own)), span.start_ms, span.end_ms),
    )


def read_markers(bootstrap: str, topic: str, conf: Mapping[str, str] | None = None) -> list[PhaseMarker]:
    """Every valid marker on the markers topic (none when the topic does not exist yet)."""
    from confluent_kafka import KafkaException

    from kafka_coop.admin import ClusterAdmin

    admin = ClusterAdmin(bootstrap, conf)
    try:
        metadata = admin.client.list_topics(timeout=KAFKA_TIMEOUT_S)
    except KafkaException as exc:
        raise admin.unreachable(exc.args[0] if exc.args else exc) from None
    if topic not in metadata.topics:
        return []
    found = (parse_marker(value) for _, _, value in read_topic_values(bootstrap, topic, conf))
    return [m for m in found if isinstance(m, PhaseMarker)]


def write_marker(
    bootstrap: str, marker: PhaseMarker, topic: str, conf: Mapping[str, str] | None = None
) -> None:
    """Record that `marker.phase` passed (the next phase begins): on the markers topic, keyed so that
    compaction keeps the latest pass of each phase; the topic is created (compacted, one partition)."""
    from confluent_kafka import KafkaException, Producer

    from kafka_coop.admin import ClusterAdmin

    admin = ClusterAdmin(bootstrap, conf)
    try:
        admin.ensure_topic(topic, 1, config=dict(MARKERS_TOPIC_CONFIG))
        producer = Producer({**(conf or {}), "bootstrap.servers": bootstrap, "enable.idempotence": True})
        producer.produce(topic, key=marker.key.encode(), value=marker.model_dump_json().encode())
        left = producer.flush(KAFKA_TIMEOUT_S)
    except KafkaException as exc:
        raise admin.unreachable(exc.args[0] if exc.args else exc) from None
    if left:
        raise ClusterUnavailable(
            f"The rollout marker of phase {marker.phase} could not be written to {topic} on {bootstrap}.",
            hint="The gate passed; run it again once the cluster answers, so the next phase has its start.",
        )


def judge_pause(
    report: GateReport,
    judged: Judged,
    pause_budget: int | None,
    *,
    source: Path | str,
    bootstrap: str,
    conf: Mapping[str, str] | None = None,
    markers_topic: str = MARKERS_TOPIC,
    spec: MigrationSpec | None = None,
    phase: int | None = None,
    strict: bool = False,
    on_progress: Callable[[str], None] | None = None,
) -> tuple[GateReport, PauseFigures | None, PhaseMarker | None]:
    """A gate's report with the `pause-budget` check when a budget judges the figures of `source` (the
    pipeline's output directory, or kafka://TOPIC), and the marker a passing phase gate wrote."""
    figures: PauseFigures | None = None
    if pause_budget is not None:
        group = judged.group
        if on_progress is not None:
            on_progress(f"Measuring the pause of group {group} …")
        if isinstance(source, Path):
            figures = from_pipeline(source, judged)
        else:
            figures = from_events(source, judged, bootstrap=bootstrap, conf=conf, markers_topic=markers_topic)
        check = pause_check(figures, pause_budget)
        checks = (*report.checks, check)
        report = report.model_copy(update={"checks": checks, "status": worst(c.status for c in checks)})
    marker: PhaseMarker | None = None
    if spec is not None and phase is not None and not report.failed(strict):
        marker = PhaseMarker(
            ts_ms=now_ms(), group=judged.group, migration=spec.name, phase=phase, phases=len(spec.phases)
        )
        write_marker(bootstrap, marker, markers_topic, conf)
    return report, figures, marker

"""Rebalance analytics over RebalanceEvent streams: `kafka-coop report`.

Two engines compute the same `Summary`: the pure-Python reference (`summarize`, the oracle in tests)
and a PySpark job (`kafka_coop.analytics._spark`, behind the `spark` extra, imported only when used).
`run_report` is the shell that reads sources, runs an engine and writes summary.json, Parquet and a PNG.
Definitions of every figure: `kafka_coop.analytics._summary` and docs/report.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_coop._lazy import lazy_attributes
from kafka_coop.analytics._generate import event_line, generate_events, write_jsonl
from kafka_coop.analytics._intervals import unavailability, unavailable_ms
from kafka_coop.analytics._markers import MARKERS_TOPIC, PhaseMarker
from kafka_coop.analytics._model import (
    Malformed,
    PhaseWindow,
    Summary,
)
from kafka_coop.analytics._pause_figures import (
    Judged,
    check_pipeline_out,
    from_events,
    from_pipeline,
    judge_pause,
)
from kafka_coop.analytics._pause_gate import PauseFigures
from kafka_coop.analytics._phases import load_phases
from kafka_coop.analytics._prepare import SparkPrepared, prepare_spark
from kafka_coop.analytics._read import read_event_lines
from kafka_coop.analytics._report import ENGINES, ReportResult, run_report
from kafka_coop.analytics._stream import KIND_FIELDS, OUTPUT_FIELDS, TS_FROM_END
from kafka_coop.analytics._summary import pauses, summarize

if TYPE_CHECKING:
    from kafka_coop.analytics._figures import outcome_from_rows, read_pipeline_rows
    from kafka_coop.analytics._figures_topic import FiguresPublisher
    from kafka_coop.analytics._pipeline import (
        PipelineConfig,
        pipeline_input,
        pipeline_records,
        run_pipeline,
        start_pipeline,
    )
    from kafka_coop.analytics._spark import get_session, stop_session

# The Spark session, for benchmarks that time it apart from the report, and the live pipeline (`kafka-coop
# pipeline run`) and its output read back (PySpark and pyarrow load on first use).
_LAZY: dict[str, str] = {
    "get_session": "kafka_coop.analytics._spark",
    "stop_session": "kafka_coop.analytics._spark",
    "PipelineConfig": "kafka_coop.analytics._pipeline",
    "pipeline_input": "kafka_coop.analytics._pipeline",
    "pipeline_records": "kafka_coop.analytics._pipeline",
    "run_pipeline": "kafka_coop.analytics._pipeline",
    "start_pipeline": "kafka_coop.analytics._pipeline",
    "outcome_from_rows": "kafka_coop.analytics._figures",
    "read_pipeline_rows": "kafka_coop.analytics._figures",
    "FiguresPublisher": "kafka_coop.analytics._figures_topic",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "ENGINES",
    "KIND_FIELDS",
    "MARKERS_TOPIC",
    "OUTPUT_FIELDS",
    "TS_FROM_END",
    "FiguresPublisher",
    "Judged",
    "Malformed",
    "PauseFigures",
    "PhaseMarker",
    "PhaseWindow",
    "PipelineConfig",
    "ReportResult",
    "SparkPrepared",
    "Summary",
    "check_pipeline_out",
    "event_line",
    "from_events",
    "from_pipeline",
    "generate_events",
    "get_session",
    "judge_pause",
    "load_phases",
    "outcome_from_rows",
    "pauses",
    "pipeline_input",
    "pipeline_records",
    "prepare_spark",
    "read_event_lines",
    "read_pipeline_rows",
    "run_pipeline",
    "run_report",
    "start_pipeline",
    "stop_session",
    "summarize",
    "unavailability",
    "unavailable_ms",
    "write_jsonl",
]

"""Rebalance analytics over RebalanceEvent streams: `kafka-coop report`.

Two engines compute the same `Summary`: the pure-Python reference (`summarize`, the oracle in tests)
and a PySpark job (`kafka_coop.analytics._spark`, behind the `spark` extra, imported only when used).
`run_report` is the shell that reads sources, runs an engine and writes summary.json, Parquet and a PNG.
Definitions of every figure: `kafka_coop.analytics._summary` and docs/report.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_coop._lazy import lazy_attributes
from kafka_coop.analytics._generate import generate_events, write_jsonl
from kafka_coop.analytics._intervals import unavailability, unavailable_ms
from kafka_coop.analytics._model import (
    Malformed,
    PhaseWindow,
    Summary,
)
from kafka_coop.analytics._phases import load_phases
from kafka_coop.analytics._prepare import SparkPrepared, prepare_spark
from kafka_coop.analytics._read import read_event_lines
from kafka_coop.analytics._report import ENGINES, ReportResult, run_report
from kafka_coop.analytics._summary import pauses, summarize

if TYPE_CHECKING:
    from kafka_coop.analytics._spark import get_session, stop_session

# The Spark session, for benchmarks that time it apart from the report (PySpark loads on first use).
_LAZY: dict[str, str] = {
    "get_session": "kafka_coop.analytics._spark",
    "stop_session": "kafka_coop.analytics._spark",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "ENGINES",
    "Malformed",
    "PhaseWindow",
    "ReportResult",
    "SparkPrepared",
    "Summary",
    "generate_events",
    "get_session",
    "load_phases",
    "pauses",
    "prepare_spark",
    "read_event_lines",
    "run_report",
    "stop_session",
    "summarize",
    "unavailability",
    "unavailable_ms",
    "write_jsonl",
]

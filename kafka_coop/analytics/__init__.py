"""Rebalance analytics over RebalanceEvent streams: `kafka-coop report`.

Two engines compute the same `Summary`: the pure-Python reference (`summarize`, the oracle in tests)
and a PySpark job (`kafka_coop.analytics._spark`, behind the `spark` extra, imported only when used).
`run_report` is the shell that reads sources, runs an engine and writes summary.json, Parquet and a PNG.
Definitions of every figure: `kafka_coop.analytics._summary` and docs/report.md.
"""

from kafka_coop.analytics._generate import generate_events, write_jsonl
from kafka_coop.analytics._intervals import Interval, member_name, unavailability, unavailable_ms
from kafka_coop.analytics._model import (
    Malformed,
    MemberStat,
    PartitionStat,
    Pause,
    PhaseStat,
    PhaseWindow,
    ProtocolStat,
    Summary,
)
from kafka_coop.analytics._phases import load_phases, parse_phases
from kafka_coop.analytics._prepare import SparkPrepared, prepare_spark
from kafka_coop.analytics._read import expand_paths, read_event_lines
from kafka_coop.analytics._report import ENGINES, ReportResult, choose_engine, run_report
from kafka_coop.analytics._summary import pauses, summarize

__all__ = [
    "ENGINES",
    "Interval",
    "Malformed",
    "MemberStat",
    "PartitionStat",
    "Pause",
    "PhaseStat",
    "PhaseWindow",
    "ProtocolStat",
    "ReportResult",
    "SparkPrepared",
    "Summary",
    "choose_engine",
    "expand_paths",
    "generate_events",
    "load_phases",
    "member_name",
    "parse_phases",
    "pauses",
    "prepare_spark",
    "read_event_lines",
    "run_report",
    "summarize",
    "unavailability",
    "unavailable_ms",
    "write_jsonl",
]

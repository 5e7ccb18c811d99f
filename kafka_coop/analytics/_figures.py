"""The live pipeline's output read back: the files its sink committed, and the report's figures for any
groups and time range, built from the rows `_stream` wrote.

Spark's file sink writes Parquet files and then records them in `_spark_metadata` (one log entry per
micro-batch, compacted every few batches); only recorded files are committed, so a job killed between
the two leaves files that no reader may count. This module lists files the way Spark's own readers do
(docs/design/analytics.md, "The live pipeline").

Figures: callbacks come from `callbacks` rows, which are per window and phase, so a range counts a
window's callbacks where its first one falls (phases from markers are exact: callbacks are counted per
phase); pauses and unavailability come from the span rows, clipped to the range to the millisecond.
Without a range and with every span closed, the summary is the batch report's.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from kafka_coop.analytics._engine import EngineOutcome
from kafka_coop.analytics._model import (
    Malformed,
    PartitionStat,
    PhaseStat,
    PhaseWindow,
    ProtocolStat,
    Summary,
)
from kafka_coop.analytics._stream import BEFORE_1970, DUPLICATE, FUTURE, KIND_FIELDS, LATE, OUTPUT_FIELDS
from kafka_coop.analytics._summary import default_phases, member_stat
from kafka_coop.analytics._timeline import deltas, levels
from kafka_coop.errors import InvalidInput

PIPELINE_FILE: Final = "_kafka_coop_pipeline.json"  # marks an output directory as the pipeline's
PROGRESS_FILE: Final = "_kafka_coop_progress.json"  # the driver's last committed batch and frontier
SINK_LOG: Final = "_spark_metadata"
PARTITION_COLUMNS: Final = ("group", "date")
NOT_MALFORMED: Final = frozenset({LATE, DUPLICATE, FUTURE, BEFORE_1970})  # valid records left out
# A callbacks row's figures: every column it fills but where its window sits
CALLBACK_FIGURES: Final = tuple(f for f in KIND_FIELDS["callbacks"] if f not in ("ts", "window_end", "phase"))

_TYPES: Final = {"string": pa.string(), "long": pa.int64(), "binary": pa.binary()}
OUTPUT_SCHEMA: Final = pa.schema([(name, _TYPES[kind]) for name, kind in OUTPUT_FIELDS])
FILE_SCHEMA: Final = pa.schema([f for f in OUTPUT_SCHEMA if f.name not in PARTITION_COLUMNS])


def rows_table(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Output rows (dicts, missing columns None) as a table of the output schema."""
    return pa.Table.from_pylist(list(rows), schema=OUTPUT_SCHEMA)


def is_pipeline_output(path: str | Path) -> bool:
    return (Path(path) / PIPELINE_FILE).is_file()


# --- the sink's log --------------------------------------------------------------------------------
def _log_entries(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0] != "v1":
        raise InvalidInput(
            f"{path} is not a Spark file-sink log this kafka-coop reads (first line {lines[:1]}).",
            hint="Read it with the PySpark version that wrote it.",
        )
    return [json.loads(line) for line in lines[1:] if line.strip()]


def committed_files(out_dir: str | Path) -> list[Path]:
    """Every file the sink committed, per its log (the latest compaction and the batches after it)."""
    log = Path(out_dir) / SINK_LOG
    if not log.is_dir():
        return []
    batches: dict[int, Path] = {}
    compacted: dict[int, Path] = {}
    for item in log.iterdir():
        name = item.name
        if name.endswith(".compact") and name[: -len(".compact")].isdigit():
            compacted[int(name[: -len(".compact")])] = item
        elif name.isdigit():
            batches[int(name)] = item
    start = max(compacted, default=-1)
    entries = _log_entries(compacted[start]) if start >= 0 else []
    for batch in sorted(b for b in batches if b > start):
        entries.extend(_log_entries(batches[batch]))
    deleted = {e["path"] for e in entries if e.get("action") == "delete"}
    files = []
    for entry in entries:
        if entry.get("action", "add") != "add" or entry["path"] in deleted or entry.get("isDir"):
            continue
        uri = urlparse(entry["path"])
        files.append(Path(unquote(uri.path)) if uri.scheme in ("", "file") else Path(entry["path"]))
    return sorted(set(files))


def read_pipeline_rows(
    out_dir: str | Path,
    *,
    groups: Sequence[str] | None = None,
    kinds: Sequence[str] | None = None,
    files: Sequence[Path] | None = None,
) -> pa.Table:
    """The committed rows, optionally of some groups and kinds only, or of some committed `files`."""
    root = Path(out_dir).absolute()
    paths = [str(f) for f in (committed_files(root) if files is None else files)]
    if not paths:
        return OUTPUT_SCHEMA.empty_table()
    partitioning = ds.partitioning(pa.schema([("group", pa.string()), ("date", pa.string())]), flavor="hive")
    dataset = ds.dataset(
        paths,
        schema=pa.schema([*FILE_SCHEMA, pa.field("group", pa.string()), pa.field("date", pa.string())]),
        format="parquet",
        partitioning=partitioning,
        partition_base_dir=str(root),
    )
    condition = None
    if groups is not None:
        condition = pc.field("group").isin(list(groups))
    if kinds is not None:
        wanted = pc.field("kind").isin(list(kinds))
        condition = wanted if condition is None else condition & wanted
    table = dataset.to_table(filter=condition)
    return table.select(list(OUTPUT_SCHEMA.names)).cast(OUTPUT_SCHEMA)


# --- figures -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Range:
    """`[since_ms, until_ms)`, either end open (None)."""

    since_ms: int | None = None
    until_ms: int | None = None

    def clip(self, start: Any, end: Any) -> Any:
        lo = start if self.since_ms is None else np.maximum(start, self.since_ms)
        hi = end if self.until_ms is None else np.minimum(end, self.until_ms)
        return np.maximum(0, hi - lo)

    def holds(self, ts: Any) -> Any:
        ok = np.ones(len(ts), dtype=bool)
        if self.since_ms is not None:
            ok &= ts >= self.since_ms
        if self.until_ms is not None:
            ok &= ts < self.until_ms
        return ok


def _kind(table: pa.Table, kind: str) -> pa.Table:
    return table.filter(pc.equal(table["kind"], kind))


def _column(table: pa.Table, name: str) -> list[Any]:
    values: list[Any] = table[name].to_pylist()
    return values


def _ints(table: pa.Table, name: str) -> Any:
    return np.asarray(table[name].fill_null(0).to_numpy(), dtype=np.int64)


def marker_phases(table: pa.Table, end_ms: int | None) -> list[tuple[PhaseWindow, str]]:
    """Phase windows from the markers the pipeline applied, per group, each with the label its callbacks
    carry: a phase runs from its marker to the group's next one (the last to `end_ms`)."""
    phases = _kind(table, "phase").sort_by([("group", "ascending"), ("ts", "ascending")])
    out: list[tuple[PhaseWindow, str]] = []
    names: dict[str, int] = defaultdict(int)
    rows = phases.select(["group", "ts", "phase"]).to_pylist()
    for i, row in enumerate(rows):
        last = i + 1 == len(rows) or rows[i + 1]["group"] != row["group"]
        if not last and rows[i + 1]["phase"] == row["phase"]:
            continue  # the gate passed again: the phase began at the first pass
        start = int(row["ts"])
        if out and out[-1][1] == row["phase"] and out[-1][0].end_ms == start:
            continue
        end = end_ms if last else int(rows[i + 1]["ts"])
        if end is None or end < start:
            end = start
        label = str(row["phase"])
        name = f"{row['group']}: {label}"
        names[name] += 1
        if names[name] > 1:
            name = f"{name} #{names[name]}"
        out.append((PhaseWindow(name=name, start_ms=start, end_ms=end), label))
    return out


def outcome_from_rows(
    table: pa.Table,
    *,
    phases: Sequence[PhaseWindow] | None = None,
    span: Range | None = None,
    labelled: Sequence[tuple[PhaseWindow, str]] = (),
) -> EngineOutcome:
    """The report's summary, refused records and plot series from pipeline rows. `labelled` phases
    (`marker_phases`) count callbacks by their phase label, `phases` by window start."""
    span = span or Range()
    callbacks = _kind(table, "callbacks")
    callbacks = callbacks.filter(span.holds(_ints(callbacks, "first_ts")))
    pauses = _kind(table, "pause")
    intervals = _kind(table, "interval")
    p_start, p_end = _ints(pauses, "start_ms"), _ints(pauses, "end_ms")
    i_start, i_end = _ints(intervals, "start_ms"), _ints(intervals, "end_ms")
    p_in = _overlaps(span, p_start, p_end)
    i_in = _overlaps(span, i_start, i_end)
    pauses, p_start, p_end = pauses.filter(p_in), p_start[p_in], p_end[p_in]
    intervals, i_start, i_end = intervals.filter(i_in), i_start[i_in], i_end[i_in]
    p_ms, i_ms = span.clip(p_start, p_end), span.clip(i_start, i_end)
    gone = np.asarray(intervals["cause"].to_pylist(), dtype=object) == "vanished"

    members: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    protocols: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    protocol_members: dict[str, set[tuple[str, str]]] = defaultdict(set)
    first: int | None = None
    last: int | None = None
    events = 0
    for row in callbacks.select(["group", *CALLBACK_FIGURES]).to_pylist():
        key = (row["group"], row["member"])
        acc = members[key]
        acc["events"] += row["events"]
        acc["rebalances"] += row["rebalances"]
        acc["revoked_partitions"] += row["revoked_partitions"]
        acc["lost_partitions"] += row["lost_partitions"]
        acc["callback_us_total"] += row["callback_us_total"]
        acc["callback_us_max"] = max(acc["callback_us_max"], row["callback_us_max"])
        proto = protocols[row["protocol"]]
        protocol_members[row["protocol"]].add(key)
        proto["events"] += row["rebalances"] + row["revoked"] + row["lost"]
        for name in ("rebalances", "revoked", "lost", "revoked_partitions", "lost_partitions"):
            proto[name] += row[name]
        events += row["events"]
        first = row["first_ts"] if first is None else min(first, row["first_ts"])
        last = row["last_ts"] if last is None else max(last, row["last_ts"])
    for group, member, ms in zip(
        _column(pauses, "group"), _column(pauses, "member"), p_ms.tolist(), strict=True
    ):
        acc = members[(group, member)]
        acc["pause_ms"] += ms
        acc["pauses"] += 1

    seen = {
        (g, t, p)
        for g, t, p in zip(
            _column(_kind(table, "partition"), "group"),
            _column(_kind(table, "partition"), "topic"),
            _column(_kind(table, "partition"), "partition"),
            strict=True,
        )
    }
    part_ms: dict[tuple[str, str, int], int] = defaultdict(int)
    part_n: dict[tuple[str, str, int], int] = defaultdict(int)
    keys = zip(
        _column(intervals, "group"), _column(intervals, "topic"), _column(intervals, "partition"), strict=True
    )
    for (group, topic, number), ms in zip(keys, i_ms.tolist(), strict=True):
        part_ms[(group, topic, number)] += ms
        part_n[(group, topic, number)] += 1

    windows: list[tuple[PhaseWindow, str | None]]
    if labelled:
        windows = [(w, label) for w, label in labelled]
    elif phases is not None:
        windows = [(w, None) for w in phases]
    else:
        windows = [(w, None) for w in default_phases(first, last)]
    phase_stats = [
        _phase(w, label, callbacks, (p_start, p_end), (i_start, i_end), span) for w, label in windows
    ]

    dead = _kind(table, "deadletter")
    dead = dead.filter(span.holds(_ints(dead, "ts")))
    refused = [
        Malformed(path=str(r["source"]), line=int(r["offset"] or 0), reason=str(r["reason"]))
        for r in dead.select(["source", "offset", "reason"]).to_pylist()
        if r["reason"] not in NOT_MALFORMED
    ]
    refused.sort(key=lambda m: (m.path, m.line))
    summary = Summary(
        events=events,
        malformed=len(refused),
        first_ts_ms=first,
        last_ts_ms=last,
        intervals=len(i_ms),
        partition_unavailable_ms_total=int(i_ms.sum()),
        vanished_intervals=int(gone.sum()),
        vanished_unavailable_ms=int(i_ms[gone].sum()),
        pauses=len(p_ms),
        pause_ms_total=int(p_ms.sum()),
        partitions=[
            PartitionStat(
                group=g, topic=t, partition=p, unavailable_ms=part_ms[(g, t, p)], intervals=part_n[(g, t, p)]
            )
            for g, t, p in sorted(seen | set(part_ms))
        ],
        members=[member_stat(group, name, row) for (group, name), row in sorted(members.items())],
        rebalances={
            name: ProtocolStat(members=len(protocol_members[name]), **protocols[name])
            for name in sorted(protocols)
        },
        phases=phase_stats,
    )
    lo, hi = span.since_ms, span.until_ms

    def bounded(starts: Any, ends: Any) -> list[tuple[int, int]]:
        s = starts if lo is None else np.maximum(starts, lo)
        e = ends if hi is None else np.minimum(ends, hi)
        return list(zip(s.tolist(), e.tolist(), strict=True))

    return EngineOutcome(
        summary=summary,
        malformed=refused,
        unowned=levels(deltas(bounded(i_start, i_end))),
        paused=levels(deltas(bounded(p_start, p_end))),
    )


def _overlaps(span: Range, start: Any, end: Any) -> Any:
    ok = np.ones(len(start), dtype=bool)
    if span.since_ms is not None:
        ok &= (end > span.since_ms) | ((end == start) & (start >= span.since_ms))
    if span.until_ms is not None:
        ok &= start < span.until_ms
    return ok


def _phase(
    window: PhaseWindow,
    label: str | None,
    callbacks: pa.Table,
    pauses: tuple[Any, Any],
    intervals: tuple[Any, Any],
    span: Range,
) -> PhaseStat:
    first = _ints(callbacks, "first_ts")
    inside = (first >= window.start_ms) & (first < window.end_ms)
    if label is not None:  # the callbacks of the phase, exactly (they were counted apart)
        inside &= np.asarray(callbacks["phase"].to_pylist(), dtype=object) == label
    rows = callbacks.filter(inside)
    clip = Range(
        window.start_ms if span.since_ms is None else max(window.start_ms, span.since_ms),
        window.end_ms if span.until_ms is None else min(window.end_ms, span.until_ms),
    )
    return PhaseStat(
        name=window.name,
        start_ms=window.start_ms,
        end_ms=window.end_ms,
        events=int(_ints(rows, "events").sum()),
        partition_unavailable_ms=int(clip.clip(*intervals).sum()),
        pause_ms=int(clip.clip(*pauses).sum()),
        rebalances=int(_ints(rows, "rebalances").sum()),
        revoked_partitions=int(_ints(rows, "revoked_partitions").sum()),
    )


def latest_state(table: pa.Table, kind: str) -> list[dict[str, Any]]:
    """The latest `partition` or `member` row of each partition or member (by `version`)."""
    rows = _kind(table, kind).sort_by([("version", "ascending")]).to_pylist()
    key = ("group", "topic", "partition") if kind == "partition" else ("group", "member")
    latest = {tuple(r[k] for k in key): r for r in rows}
    return [latest[k] for k in sorted(latest, key=lambda k: tuple(str(x) for x in k))]

"""Figures of a run on the bed (pure): record logs, latency, pauses, ratios, restart segments.

Unit-tested without a broker; the benchmarks feed them what the members wrote.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel


# --- pure helpers (unit-tested) -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ProcessedRecord:
    """One line of a member's record log: `client topic partition offset produced_ms processed_ms`."""

    client: str
    topic: str
    partition: int
    offset: int
    produced_ms: int
    processed_ms: int


def parse_record_line(line: str) -> ProcessedRecord | None:
    """A record-log line, or None for a torn or malformed one (a killed member's last line)."""
    parts = line.split()
    if len(parts) != 6:
        return None
    try:
        return ProcessedRecord(parts[0], parts[1], int(parts[2]), int(parts[3]), int(parts[4]), int(parts[5]))
    except ValueError:
        return None


def read_record_logs(paths: Iterable[Path]) -> list[ProcessedRecord]:
    out: list[ProcessedRecord] = []
    for path in paths:
        if not path.exists():
            continue
        text = path.read_text(errors="replace")
        lines = text.split("\n")
        lines.pop()  # after the last newline: empty, or a line torn by a kill (it may parse, wrongly)
        for line in lines:
            record = parse_record_line(line)
            if record is not None:
                out.append(record)
    return out


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of `values`; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return float(ordered[rank - 1])


class RecordStats(BaseModel):
    produced: int  # acknowledged by the broker
    processed: int  # distinct records processed at least once
    deliveries: int  # record-log lines for the topic
    duplicates: int  # extra deliveries (deliveries of an already processed record)
    duplicated_records: int  # records processed more than once
    lost: int  # acknowledged, processed by nobody
    lost_examples: list[tuple[int, int]] = []  # (partition, offset)
    window_records: int  # processed records produced inside the window
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    latency_max_ms: float | None = None


def record_stats(
    records: Iterable[ProcessedRecord], *, topic: str, acked: Mapping[int, int], window: tuple[int, int]
) -> RecordStats:
    """Duplicates, losses and end-to-end latency for a fresh topic (offsets 0..n-1 per partition).

    A record's latency is from its produce timestamp to the FIRST time any member processed it (what a
    downstream system saw); latency percentiles cover the records produced inside `window` (ms, inclusive).
    """
    first_seen: dict[tuple[int, int], int] = {}
    produced_at: dict[tuple[int, int], int] = {}
    times: dict[tuple[int, int], int] = {}
    deliveries = 0
    for rec in records:
        if rec.topic != topic:
            continue
        deliveries += 1
        key = (rec.partition, rec.offset)
        times[key] = times.get(key, 0) + 1
        if key not in first_seen or rec.processed_ms < first_seen[key]:
            first_seen[key] = rec.processed_ms
        produced_at[key] = rec.produced_ms
    lost = [(p, o) for p, n in sorted(acked.items()) for o in range(n) if (p, o) not in times]
    start, end = window
    latencies = [
        float(first_seen[key] - produced_at[key]) for key in first_seen if start <= produced_at[key] <= end
    ]
    return RecordStats(
        produced=sum(acked.values()),
        processed=len(times),
        deliveries=deliveries,
        duplicates=sum(n - 1 for n in times.values()),
        duplicated_records=sum(1 for n in times.values() if n > 1),
        lost=len(lost),
        lost_examples=lost[:10],
        window_records=len(latencies),
        latency_p50_ms=percentile(latencies, 50),
        latency_p99_ms=percentile(latencies, 99),
        latency_max_ms=max(latencies) if latencies else None,
    )


def ratio(value: float, baseline: float) -> float | None:
    """value / baseline; None when the baseline is 0 (no meaningful ratio)."""
    if baseline == 0:
        return None
    return value / baseline


def reduction(baseline: float, value: float) -> float | None:
    """How many times lower `value` is than `baseline` (baseline / value); None when value is 0."""
    if value == 0:
        return None
    return baseline / value


def unowned_steps(intervals: Iterable[tuple[int, int]], origin_ms: int) -> list[tuple[int, int]]:
    """(ms since origin, unowned partition count) at every change, from (start, end) intervals."""
    deltas: dict[int, int] = {}
    for start, end in intervals:
        if end <= start:
            continue
        deltas[start] = deltas.get(start, 0) + 1
        deltas[end] = deltas.get(end, 0) - 1
    steps: list[tuple[int, int]] = []
    level = 0
    for ts in sorted(deltas):
        if deltas[ts] == 0:
            continue
        level += deltas[ts]
        steps.append((ts - origin_ms, level))
    return steps


def split_pause(
    pauses: Iterable[tuple[str, int, int]], steps: Iterable[tuple[Sequence[str], int, int]]
) -> tuple[int, int]:
    """(own, collateral) pause ms. A step is (members it restarts or adds, start ms, end ms); a pause
    of one of those members inside its own step is `own` (its process was down or starting: the
    floor every protocol pays), every other pause inside any step is `collateral` (members that were
    not touched but stopped processing: what the rebalance protocol costs)."""
    own = collateral = 0
    for member, p_start, p_end in pauses:
        for who, s_start, s_end in steps:
            overlap = min(p_end, s_end) - max(p_start, s_start)
            if overlap <= 0:
                continue
            if member in who:
                own += overlap
            else:
                collateral += overlap
    return own, collateral


# --- pause and unavailability: what `kafka-coop report` computes ---------------------------------------
@dataclass
class PauseFigures:
    unavailable_ms: int
    pause_ms: int
    pause_ms_by_member: dict[str, int] = field(default_factory=dict)
    rebalances: int = 0  # assigned callbacks inside the window, all members
    revoked_partitions: int = 0
    intervals: list[tuple[int, int]] = field(default_factory=list)  # unavailability (start, end) ms
    own_pause_ms: int = 0  # restarted/added members, inside their own step
    collateral_pause_ms: int = 0  # everyone else


def as_slots(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The events with each member named by its slot, not its process: a bench member is its client.id
    (unique in the bed) across its restarts, so a restarted dynamic member's gap, from the old process's
    revoke to the new one's assignment, is its own pause. `kafka-coop report` names a member
    `client_id@process` (one consumer instance), which splits that restart into two members."""
    return [{k: v for k, v in e.items() if k != "process"} for e in events]


def pause_figures(
    events: Sequence[Mapping[str, Any]],
    window: tuple[int, int],
    steps: Sequence[tuple[Sequence[str], int, int]] = (),
) -> PauseFigures:
    """Figures over `window` from `kafka_coop.analytics.summarize` with the bounce as its one phase
    (what `kafka-coop report --phases` gives, members named by slot: `as_slots`): intervals and pauses
    clipped to the window."""
    from kafka_coop.analytics import PhaseWindow, pauses, summarize, unavailability

    events = as_slots(events)
    start, end = window
    phase_window = PhaseWindow(name="bounce", start_ms=start, end_ms=end)
    phase = summarize(events, phases=[phase_window]).phases[0]
    by_member: dict[str, int] = {}
    pause_list = pauses(events)
    own, collateral = split_pause(((p.member, p.start_ms, p.end_ms) for p in pause_list), steps)
    for pause in pause_list:
        clipped = min(pause.end_ms, end) - max(pause.start_ms, start)
        if clipped > 0:
            by_member[pause.member] = by_member.get(pause.member, 0) + clipped
    intervals = [
        (max(i.start_ms, start), min(i.end_ms, end))
        for i in unavailability(events)
        if i.end_ms > start and i.start_ms < end
    ]
    return PauseFigures(
        unavailable_ms=phase.partition_unavailable_ms,
        pause_ms=phase.pause_ms,
        pause_ms_by_member=dict(sorted(by_member.items())),
        rebalances=phase.rebalances,
        revoked_partitions=phase.revoked_partitions,
        intervals=intervals,
        own_pause_ms=own,
        collateral_pause_ms=collateral,
    )


def median_pause(runs: Sequence[Mapping[str, Any]], name: str) -> float | None:
    """The median total pause of a scenario's runs (one run: its pause)."""
    values = sorted(float(r["pause_ms"]) for r in runs if r["scenario"] == name)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def restart_segments(events: Sequence[Mapping[str, Any]]) -> dict[str, list[int]]:
    """Each restart of each member split in three, from its own events: `close` (the release that
    left it owning nothing -> its `closed` event: commit, leave or not, client teardown), `gap`
    (`closed` -> the next incarnation's `started`: process exit and start) and `join` (`started` ->
    its first `assigned` with partitions). What a restart-floor difference between protocols is made of."""
    by_member: dict[str, list[Mapping[str, Any]]] = {}
    for event in sorted(events, key=lambda e: (int(e["ts_ms"]), int(e.get("seq", 0)))):
        by_member.setdefault(str(event.get("client_id")), []).append(event)
    out: dict[str, list[int]] = {"close": [], "gap": [], "join": []}
    for stream in by_member.values():
        for i, event in enumerate(stream):
            if event["kind"] != "closed":
                continue
            released = [
                e for e in stream[:i] if e["kind"] in ("revoked", "lost") and not (e.get("owned") or ())
            ]
            later = stream[i + 1 :]
            started = next((e for e in later if e["kind"] == "started"), None)
            assigned = next((e for e in later if e["kind"] == "assigned" and (e.get("owned") or ())), None)
            if not released or started is None or assigned is None:
                continue
            closed_ms = int(event["ts_ms"])
            out["close"].append(closed_ms - int(released[-1]["ts_ms"]))
            out["gap"].append(int(started["ts_ms"]) - closed_ms)
            out["join"].append(int(assigned["ts_ms"]) - int(started["ts_ms"]))
    return out


def restart_split(
    steps: Sequence[Mapping[str, Any]], pauses: Iterable[tuple[str, int, int]]
) -> dict[str, list[int]]:
    """Each restarted member's own pause split at its process exit, for any client family (the Java
    member writes no `started`/`closed` events): `to_exit` (its release -> the old process gone: close,
    commit, leave or not, JVM/interpreter teardown) and `to_assigned` (exit -> the new process's first
    assignment: start, join, sync). The exit is the step's start plus its `stop_s`."""
    by_member: dict[str, list[tuple[int, int]]] = {}
    for member, start, end in pauses:
        by_member.setdefault(member, []).append((start, end))
    out: dict[str, list[int]] = {"to_exit": [], "to_assigned": []}
    for step in steps:
        exit_ms = int(step["start_ms"]) + round(float(step["stop_s"]) * 1000)
        for member in step["members"]:
            covering = [(s, e) for s, e in by_member.get(str(member), []) if s <= exit_ms <= e]
            if not covering:
                continue
            start, end = covering[0]
            out["to_exit"].append(exit_ms - start)
            out["to_assigned"].append(end - exit_ms)
    return out

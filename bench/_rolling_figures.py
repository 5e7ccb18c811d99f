"""The rolling-bounce benchmark's figures (pure): record logs, latency, pauses, ratios and notes.

Unit-tested without a broker; the shell in `bench/rolling_bounce.py` feeds them what the members wrote.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from bench._common import BenchResult, Figure, Series
from bench._rolling_scenarios import (
    DEFAULT_HEARTBEAT_MS,
    TARGET_COOP_STATIC_REDUCTION,
    TARGET_KIP848_VS_COOP,
)
from kafka_coop.events import TopicPartition


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


def latest_owned(events: Sequence[Mapping[str, Any]]) -> frozenset[TopicPartition] | None:
    """What one consumer owns after its last assigned/revoked/lost event; None before its first."""
    for event in reversed(events):
        if event.get("kind") in ("assigned", "revoked", "lost"):
            return frozenset((str(t), int(p)) for t, p in event.get("owned") or ())
    return None


def ownership_settled(owned: Mapping[str, frozenset[TopicPartition] | None], partitions: int) -> bool:
    """Every member owns something, no partition is owned twice, and all `partitions` are owned."""
    seen: set[TopicPartition] = set()
    for parts in owned.values():
        if not parts or seen & parts:
            return False
        seen |= parts
    return len(seen) == partitions


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


def pause_figures(
    events: Sequence[Mapping[str, Any]],
    window: tuple[int, int],
    steps: Sequence[tuple[Sequence[str], int, int]] = (),
) -> PauseFigures:
    """Figures over `window` from `kafka_coop.analytics.summarize` with the bounce as its one phase
    (what `kafka-coop report --phases` gives): intervals and pauses clipped to the window."""
    from kafka_coop.analytics import PhaseWindow, pauses, summarize, unavailability

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


def summarize_runs(result: BenchResult, runs: list[dict[str, Any]]) -> BenchResult:
    by_name = {r["scenario"]: r for r in runs if not r.get("repeat")}
    for r in runs:
        base = by_name.get(r["baseline"])
        r["unavailable_ratio_vs_baseline"] = (
            ratio(r["unavailable_ms"], base["unavailable_ms"]) if base else None
        )
        r["pause_ratio_vs_baseline"] = ratio(r["pause_ms"], base["pause_ms"]) if base else None
    names = [r["scenario"] + (f"#{r['repeat']}" if r.get("repeat") else "") for r in runs]
    result.samples = {
        "pause_ms": Series(unit="ms", values=[float(r["pause_ms"]) for r in runs]),
        "unavailable_ms": Series(unit="ms", values=[float(r["unavailable_ms"]) for r in runs]),
        "latency_p99_ms": Series(
            unit="ms", values=[float(r["records"]["latency_p99_ms"] or 0) for r in runs]
        ),
        "bounce_wall_s": Series(unit="s", values=[float(r["bounce_wall_s"]) for r in runs]),
        "own_pause_ms": Series(unit="ms", values=[float(r["own_pause_ms"]) for r in runs]),
        "collateral_pause_ms": Series(unit="ms", values=[float(r["collateral_pause_ms"]) for r in runs]),
    }
    result.notes.extend(decomposition_notes(runs))
    result.notes.extend(heartbeat_model_notes(runs))
    result.parameters["sample_order"] = list(names)
    figs: dict[str, Figure] = {}
    for family, prefix in (("python", "py"), ("java", "java")):
        eager, coop = by_name.get(f"{prefix}-eager-dynamic"), median_pause(runs, f"{prefix}-coop-static")
        if eager and coop is not None:
            red = reduction(eager["pause_ms"], coop)
            if red is not None:
                figs[f"{prefix}_coop_static_pause_reduction"] = Figure(
                    value=round(red, 2),
                    unit="x",
                    description=f"{family}: eager dynamic total pause / cooperative static total pause"
                    + (" (median of its runs)" if prefix == "py" else ""),
                    target=TARGET_COOP_STATIC_REDUCTION,
                    better="higher",
                )
    kip, coop_floor = median_pause(runs, "py-consumer-static"), median_pause(runs, "py-coop-static")
    if kip is not None and coop_floor is not None:
        rat = ratio(kip, coop_floor)
        if rat is not None:
            figs["kip848_static_vs_coop_static_pause"] = Figure(
                value=round(rat, 3),
                unit="ratio",
                description="python: KIP-848 static / cooperative static total pause, medians of "
                f"{sum(r['scenario'] == 'py-coop-static' for r in runs)} interleaved runs each",
                target=TARGET_KIP848_VS_COOP,
                better="lower",
            )
    figs["lost_total"] = Figure(
        value=float(sum(r["records"]["lost"] for r in runs)),
        unit="records",
        description="acknowledged records nobody processed, all scenarios",
        target=0,
        better="lower",
    )
    for r in runs:
        if r.get("repeat"):
            continue  # repeats feed the medians and the notes; the per-scenario figures are the first run
        n = r["scenario"]
        rec = r["records"]
        headline = r["case"] == "bounce"
        figs[f"{n}.pause_ms"] = Figure(
            value=r["pause_ms"], unit="ms", description=f"{r['label']}: total pause", show=headline
        )
        figs[f"{n}.unavailable_ms"] = Figure(
            value=r["unavailable_ms"],
            unit="ms",
            description=f"{r['label']}: total partition-unavailable",
            show=False,
        )
        if rec["latency_p99_ms"] is not None:
            figs[f"{n}.latency_p99_ms"] = Figure(
                value=rec["latency_p99_ms"],
                unit="ms",
                description=f"{r['label']}: p99 end-to-end, produced in window",
                show=False,
            )
        figs[f"{n}.duplicates"] = Figure(value=rec["duplicates"], unit="records", show=False)
        figs[f"{n}.lost"] = Figure(value=rec["lost"], unit="records", target=0, better="lower", show=False)
        figs[f"{n}.bounce_wall_s"] = Figure(value=r["bounce_wall_s"], unit="s", show=False)
        if r["pause_ratio_vs_baseline"] is not None:
            figs[f"{n}.pause_ratio"] = Figure(
                value=round(r["pause_ratio_vs_baseline"], 4),
                unit="ratio",
                description=f"vs {r['baseline']}",
                show=False,
            )
        if r["unavailable_ratio_vs_baseline"] is not None:
            figs[f"{n}.unavailable_ratio"] = Figure(
                value=round(r["unavailable_ratio_vs_baseline"], 4),
                unit="ratio",
                description=f"vs {r['baseline']}",
                show=False,
            )
    result.figures = figs
    return result.finish()


def decomposition_notes(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Where each scenario's pause went: the restarted members' own pause (their process was down or
    starting; every protocol pays it) and the collateral pause of members nobody touched."""
    notes = []
    for r in runs:
        steps = len(r["steps"]) or 1
        name = f"{r['scenario']} #{r['repeat']}" if r.get("repeat") else r["scenario"]
        notes.append(
            f"{name}: pause {r['pause_ms']:,} ms = own {r['own_pause_ms']:,} ms "
            f"({r['own_pause_ms'] / steps / 1000:.1f} s per restarted member) + collateral "
            f"{r['collateral_pause_ms']:,} ms ({r['collateral_pause_ms'] / steps / 1000:.1f} s per step); "
            f"{r['rebalances']} assigned callbacks; load {r['load_avg_1m_start']} -> {r['load_avg_1m_end']}"
        )
    return notes


def heartbeat_model_notes(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Check the model of a dynamic member's restart: its join starts a rebalance that completes only
    when every other member has noticed it on a heartbeat, so it waits about hb * (n-1)/n (the expected
    last of n-1 uniform heartbeat phases) on top of the restart itself (eager static's own pause, where
    no rebalance happens)."""
    by = {r["scenario"]: r for r in runs if not r.get("repeat")}
    floor_run = by.get("py-eager-static")
    if floor_run is None:
        return []
    floor = floor_run["own_pause_ms"] / max(1, len(floor_run["steps"]))
    notes = []
    for name, beat in (("py-eager-dynamic", DEFAULT_HEARTBEAT_MS), ("py-eager-dynamic-hb1s", 1000)):
        r = by.get(name)
        if r is None:
            continue
        n = int(r["members"])
        predicted = floor + beat * (n - 1) / n
        measured = r["own_pause_ms"] / max(1, len(r["steps"]))
        notes.append(
            f"heartbeat model, {name} (heartbeat.interval.ms {beat}): own pause per restart predicted "
            f"{predicted / 1000:.2f} s (restart {floor / 1000:.2f} s + {beat / 1000:g} s x {n - 1}/{n}), "
            f"measured {measured / 1000:.2f} s"
        )
    return notes


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

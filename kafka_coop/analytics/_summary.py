"""The pure-Python reference engine: events in, `Summary` out, the oracle the Spark engine is tested
against. What each figure means: docs/report.md; how the definitions are computed: docs/design/analytics.md.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafka_coop.analytics._intervals import in_event_order, member_key, replay
from kafka_coop.analytics._ledger import Interval, Pause
from kafka_coop.analytics._model import (
    ALL_PHASE,
    MemberStat,
    PartitionStat,
    PhaseStat,
    PhaseWindow,
    ProtocolStat,
    Summary,
)


def callback_micros(callback_ms: float) -> int:
    """`callback_ms` as whole microseconds, half-up: integer sums agree in any order (both engines)."""
    return math.floor(float(callback_ms) * 1000 + 0.5)


def pauses(events: Iterable[Mapping[str, Any]]) -> list[Pause]:
    """Every closed pause of every member, in start order (definition: `_ledger.Ledger`)."""
    return replay(in_event_order(events))[1]


def clip_ms(start_ms: int, end_ms: int, window: PhaseWindow) -> int:
    """Milliseconds of `[start_ms, end_ms)` inside the window."""
    return max(0, min(end_ms, window.end_ms) - max(start_ms, window.start_ms))


def default_phases(first_ts_ms: int | None, last_ts_ms: int | None) -> list[PhaseWindow]:
    """The whole stream as one phase `all` (end exclusive, so the last event is inside)."""
    if first_ts_ms is None or last_ts_ms is None:
        return []
    return [PhaseWindow(name=ALL_PHASE, start_ms=first_ts_ms, end_ms=last_ts_ms + 1)]


def _partitions(event: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    group = str(event["group"])
    return [(group, str(t), int(p)) for t, p in event.get("partitions") or ()]


def summarize(events: Iterable[Mapping[str, Any]], phases: Sequence[PhaseWindow] | None = None) -> Summary:
    """Every figure of the report for one stream of (already validated) events."""
    ordered = in_event_order(events)
    intervals, pause_list = replay(ordered)
    first = int(ordered[0]["ts_ms"]) if ordered else None
    last = int(ordered[-1]["ts_ms"]) if ordered else None
    windows = list(phases) if phases is not None else default_phases(first, last)
    return Summary(
        events=len(ordered),
        malformed=0,
        first_ts_ms=first,
        last_ts_ms=last,
        intervals=len(intervals),
        partition_unavailable_ms_total=sum(i.duration_ms for i in intervals),
        vanished_intervals=sum(1 for i in intervals if i.cause == "vanished"),
        vanished_unavailable_ms=sum(i.duration_ms for i in intervals if i.cause == "vanished"),
        pauses=len(pause_list),
        pause_ms_total=sum(p.duration_ms for p in pause_list),
        partitions=_partition_stats(ordered, intervals),
        members=_member_stats(ordered, pause_list),
        rebalances=_protocol_stats(ordered),
        phases=[_phase_stat(w, ordered, intervals, pause_list) for w in windows],
    )


def _partition_stats(events: list[Mapping[str, Any]], intervals: list[Interval]) -> list[PartitionStat]:
    seen = {part for event in events for part in _partitions(event)}
    ms: dict[tuple[str, str, int], int] = defaultdict(int)
    count: dict[tuple[str, str, int], int] = defaultdict(int)
    for i in intervals:
        ms[(i.group, i.topic, i.partition)] += i.duration_ms
        count[(i.group, i.topic, i.partition)] += 1
    return [
        PartitionStat(group=g, topic=t, partition=p, unavailable_ms=ms[(g, t, p)], intervals=count[(g, t, p)])
        for g, t, p in sorted(seen | set(ms))
    ]


def _member_stats(events: list[Mapping[str, Any]], pause_list: list[Pause]) -> list[MemberStat]:
    rows: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for event in events:
        row = rows[member_key(event)]
        kind, n, micros = (
            event["kind"],
            len(event.get("partitions") or ()),
            callback_micros(event["callback_ms"]),
        )
        row["events"] += 1
        row["rebalances"] += kind == "assigned"
        row["revoked_partitions"] += n if kind == "revoked" else 0
        row["lost_partitions"] += n if kind == "lost" else 0
        row["callback_us_total"] += micros
        row["callback_us_max"] = max(row["callback_us_max"], micros)
    for p in pause_list:
        rows[(p.group, p.member)]["pause_ms"] += p.duration_ms
        rows[(p.group, p.member)]["pauses"] += 1
    return [member_stat(group, name, row) for (group, name), row in sorted(rows.items())]


def member_stat(group: str, name: str, row: Mapping[str, int]) -> MemberStat:
    """A member's figures from its integer sums (callback times in whole microseconds)."""
    return MemberStat(
        group=group,
        name=name,
        events=row["events"],
        pause_ms=row["pause_ms"],
        pauses=row["pauses"],
        rebalances=row["rebalances"],
        revoked_partitions=row["revoked_partitions"],
        lost_partitions=row["lost_partitions"],
        callback_ms_total=row["callback_us_total"] / 1000,
        callback_ms_max=row["callback_us_max"] / 1000,
    )


def _protocol_stats(events: list[Mapping[str, Any]]) -> dict[str, ProtocolStat]:
    members: dict[str, set[tuple[str, str]]] = defaultdict(set)
    rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for event in events:
        protocol, kind = str(event["protocol"]), event["kind"]
        members[protocol].add(member_key(event))
        row = rows[protocol]
        n = len(event.get("partitions") or ())
        row["events"] += kind in ("assigned", "revoked", "lost")
        row["rebalances"] += kind == "assigned"
        row["revoked"] += kind == "revoked"
        row["lost"] += kind == "lost"
        row["revoked_partitions"] += n if kind == "revoked" else 0
        row["lost_partitions"] += n if kind == "lost" else 0
    return {
        protocol: ProtocolStat(members=len(members[protocol]), **rows[protocol]) for protocol in sorted(rows)
    }


def _phase_stat(
    window: PhaseWindow,
    events: list[Mapping[str, Any]],
    intervals: list[Interval],
    pause_list: list[Pause],
) -> PhaseStat:
    inside = [e for e in events if window.start_ms <= int(e["ts_ms"]) < window.end_ms]
    return PhaseStat(
        name=window.name,
        start_ms=window.start_ms,
        end_ms=window.end_ms,
        events=len(inside),
        partition_unavailable_ms=sum(clip_ms(i.start_ms, i.end_ms, window) for i in intervals),
        pause_ms=sum(clip_ms(p.start_ms, p.end_ms, window) for p in pause_list),
        rebalances=sum(e["kind"] == "assigned" for e in inside),
        revoked_partitions=sum(len(e.get("partitions") or ()) for e in inside if e["kind"] == "revoked"),
    )

"""The group coordinator's own clock (pure): its log lines for one group, its rebalance windows, and a
per-step check of the members' pause split against them.

The members' figures (`own` vs `collateral` pause) come from the members' own events. The broker logs
every classic rebalance it runs ("Preparing to rebalance group G ... with old generation N", "Stabilized
group G generation N+1", "Assignment received from leader ... for group G for generation N+1") and, for
KIP-848 groups, every group-epoch bump and (at DEBUG) every member's new assignment state. That is an
independent clock: if a member that nobody touched pauses outside every broker rebalance, or a step with
no broker rebalance shows collateral pause, the split is wrong.

The sandbox broker logs through slf4j-simple: `2026-11-24T02:57:51.028 [thread] LEVEL logger - message`
in the JVM's local time zone (the machine's, as Python's `datetime.timestamp()` assumes).
"""

from __future__ import annotations

import datetime as dt
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

LOGGER = "org.apache.kafka.coordinator.group.GroupMetadataManager"
# JAVA_TOOL_OPTIONS for the sandbox broker: slf4j-simple per-logger level, so the KIP-848 member
# assignment states (logged at DEBUG in Kafka 4.1) reach the log.
DEBUG_PROPERTY = f"-Dorg.slf4j.simpleLogger.log.{LOGGER}=debug"

_LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}) \[[^\]]*\] (\w+) (\S+) - (.*)$")
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "prepare",
        re.compile(
            r"Preparing to rebalance group (?P<group>\S+) in state \w+ with old generation "
            r"(?P<gen>-?\d+) \(reason: (?P<detail>.*)\)\.?$"
        ),
    ),
    (
        "stabilized",
        re.compile(r"Stabilized group (?P<group>\S+) generation (?P<gen>\d+) with (?P<detail>\d+) members"),
    ),
    (
        "synced",
        re.compile(
            r"Assignment received from leader (?P<member>\S+) for group (?P<group>\S+) "
            r"for generation (?P<gen>\d+)"
        ),
    ),
    (
        "static_rejoin",
        re.compile(
            r"Static member with groupInstanceId=(?P<member>\S+) and unknown member id joins group "
            r"(?P<group>\S+) in (?P<detail>\w+) state"
        ),
    ),
    ("left", re.compile(r"\[Group (?P<group>\S+)\] Member (?P<member>\S+) has left group")),
    ("epoch_bump", re.compile(r"\[GroupId (?P<group>\S+)\] Bumped group epoch to (?P<gen>\d+)")),
    (
        "member_state",
        re.compile(
            r"\[GroupId (?P<group>\S+)\] Member (?P<member>\S+) new assignment state: epoch=(?P<gen>-?\d+), "
            r"previousEpoch=-?\d+, state=(?P<detail>\w+), assignedPartitions=(?P<assigned>\[.*?\]) and "
            r"revokedPartitions=(?P<revoked>\[.*?\])"
        ),
    ),
    (  # KIP-848 static member back within its session: same assignment, no epoch bump
        "static_rejoin_848",
        re.compile(
            r"\[GroupId (?P<group>\S+)\] Static member with instance id (?P<detail>\S+) re-joins the "
            r"consumer group.*Created a new member (?P<member>\S+) to replace"
        ),
    ),
    (
        "joined",
        re.compile(
            r"\[GroupId (?P<group>\S+)\] (?:Static member|Member) (?P<member>\S+) .*joins the consumer group"
        ),
    ),
    (
        "left",
        re.compile(
            r"\[GroupId (?P<group>\S+)\] (?:Static member|Member) (?P<member>\S+) .*left the consumer group"
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class BrokerLine:
    ts_ms: int
    kind: str
    group: str
    generation: int | None = None
    member: str | None = None
    detail: str = ""
    assigned: int | None = None  # member_state: partitions assigned
    revoking: int | None = None  # member_state: partitions pending revocation


def _count_partitions(text: str) -> int:
    """`[topicId-0, topicId-1]` -> 2; `[]` -> 0."""
    inner = text.strip()[1:-1].strip()
    return 0 if not inner else inner.count(",") + 1


def parse_ts(text: str) -> int:
    return int(dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f").timestamp() * 1000)


def parse_broker_log(lines: Iterable[str], groups: Iterable[str] | None = None) -> list[BrokerLine]:
    """The coordinator's lines about groups (`groups`, or all), in log order."""
    wanted = set(groups) if groups is not None else None
    out: list[BrokerLine] = []
    for raw in lines:
        match = _LINE.match(raw.rstrip("\n"))
        if match is None or match.group(3) != LOGGER:
            continue
        message = match.group(4)
        for kind, pattern in _PATTERNS:
            found = pattern.search(message)
            if found is None:
                continue
            fields = found.groupdict()
            group = fields["group"]
            if wanted is not None and group not in wanted:
                break
            gen = fields.get("gen")
            out.append(
                BrokerLine(
                    ts_ms=parse_ts(match.group(1)),
                    kind=kind,
                    group=group,
                    generation=int(gen) if gen is not None else None,
                    member=fields.get("member"),
                    detail=fields.get("detail") or "",
                    assigned=_count_partitions(fields["assigned"]) if fields.get("assigned") else None,
                    revoking=_count_partitions(fields["revoked"]) if fields.get("revoked") else None,
                )
            )
            break
    return out


@dataclass(frozen=True, slots=True)
class BrokerWindow:
    """One rebalance as the coordinator ran it: classic prepare -> leader's assignment (or stabilize when
    no assignment came), or a KIP-848 epoch bump -> the last member state logged for that epoch."""

    start_ms: int
    end_ms: int
    generation: int
    reason: str


def broker_windows(lines: Sequence[BrokerLine], group: str) -> list[BrokerWindow]:
    mine = [ln for ln in lines if ln.group == group]
    windows: list[BrokerWindow] = []
    replaced: set[str] = set()
    for i, ln in enumerate(mine):
        if ln.kind == "prepare" and ln.generation is not None:
            gen = ln.generation + 1
            later = mine[i + 1 :]
            end = next((x.ts_ms for x in later if x.kind == "synced" and x.generation == gen), None)
            if end is None:
                end = next(
                    (x.ts_ms for x in later if x.kind == "stabilized" and x.generation == gen), ln.ts_ms
                )
            windows.append(BrokerWindow(ln.ts_ms, end, gen, ln.detail))
        elif ln.kind == "epoch_bump" and ln.generation is not None:
            epoch = ln.generation
            later = mine[i + 1 :]
            states = []
            for x in later:
                if x.kind == "epoch_bump":
                    break
                if x.kind == "static_rejoin_848" and x.member is not None:
                    replaced.add(x.member)  # its STABLE-at-once state line is no part of this epoch's work
                if x.kind == "member_state" and x.generation == epoch and x.member not in replaced:
                    states.append(x.ts_ms)
            windows.append(BrokerWindow(ln.ts_ms, max(states, default=ln.ts_ms), epoch, "group epoch bump"))
    return windows


def _overlap(a0: int, a1: int, b0: int, b1: int) -> int:
    return max(0, min(a1, b1) - max(a0, b0))


def _dist(values: Sequence[float]) -> dict[str, float | int]:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "min": min(values),
        "median": statistics.median(values),
        "max": max(values),
        "sum": sum(values),
    }


def check_step(
    members: Sequence[str],
    step: tuple[int, int],
    pauses: Iterable[tuple[str, int, int]],
    windows: Sequence[BrokerWindow],
    lines: Sequence[BrokerLine] = (),
) -> dict[str, Any]:
    """One bounce step on both clocks.

    Members' side: the restarted member's own pause and every other member's collateral pause inside the
    step. Broker side: the rebalances that overlap the step and their durations. The check: collateral
    pause inside broker windows vs outside them (outside means the members' clock and the broker's
    disagree), and how long after the coordinator's window closed each collateral pause ended (the
    SyncGroup response and the assign callback).
    """
    s0, s1 = step
    mine = [w for w in windows if w.end_ms >= s0 and w.start_ms <= s1]
    own: list[float] = []
    collateral: dict[str, int] = {}
    inside = outside = before = after = unexplained = 0
    end_lags: list[float] = []
    for member, p0, p1 in pauses:
        clipped = _overlap(p0, p1, s0, s1)
        if clipped <= 0:
            continue
        if member in members:
            own.append(clipped)
            continue
        collateral[member] = collateral.get(member, 0) + clipped
        a0, a1 = max(p0, s0), min(p1, s1)
        covered = 0
        for w in mine:
            covered += _overlap(a0, a1, w.start_ms, w.end_ms)
        covered = min(covered, a1 - a0)
        inside += covered
        outside += (a1 - a0) - covered
        under = [w for w in mine if _overlap(a0, a1, w.start_ms, w.end_ms) > 0]
        if under:  # where the members' clock runs past the coordinator's: before its window, or after
            before += max(0, min(a1, *(w.start_ms for w in under)) - a0)
            after += max(0, a1 - max(a0, *(w.end_ms for w in under)))
        else:
            unexplained += a1 - a0
        ended_before = [w.end_ms for w in mine if w.end_ms <= p1 and w.end_ms >= p0]
        if covered and ended_before:  # a pause the coordinator's window explains: how late it ended
            end_lags.append(float(p1 - max(ended_before)))
    rejoins = [
        ln
        for ln in lines
        if s0 <= ln.ts_ms <= s1
        and ((ln.kind == "static_rejoin" and ln.detail == "Stable") or ln.kind == "static_rejoin_848")
    ]
    return {
        "members": list(members),
        "start_ms": s0,
        "end_ms": s1,
        "broker_rebalances": len(mine),
        "broker_rebalance_ms": [w.end_ms - w.start_ms for w in mine],
        "broker_reasons": [w.reason[:120] for w in mine],
        "broker_static_rejoins_without_rebalance": len(rejoins),
        "own_pause_ms": sum(own),
        "collateral_pause_ms": _dist([float(v) for v in collateral.values()]),
        "collateral_inside_broker_ms": inside,
        "collateral_outside_broker_ms": outside,
        "collateral_before_broker_ms": before,
        "collateral_after_broker_ms": after,
        "collateral_without_broker_window_ms": unexplained,
        "collateral_end_after_broker_ms": _dist(end_lags),
    }


def summarize_clock(steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A scenario's steps on both clocks, totalled: what docs/benchmarks.md quotes."""
    collateral = sum(float(s["collateral_pause_ms"].get("sum", 0)) for s in steps)
    lags = [
        float(s["collateral_end_after_broker_ms"]["median"])
        for s in steps
        if s["collateral_end_after_broker_ms"].get("n")
    ]
    return {
        "steps": len(steps),
        "broker_rebalances": sum(int(s["broker_rebalances"]) for s in steps),
        "broker_rebalance_ms": sum(sum(s["broker_rebalance_ms"]) for s in steps),
        "steps_without_broker_rebalance": sum(1 for s in steps if not s["broker_rebalances"]),
        "collateral_in_steps_without_broker_rebalance_ms": sum(
            float(s["collateral_pause_ms"].get("sum", 0)) for s in steps if not s["broker_rebalances"]
        ),
        "collateral_pause_ms": collateral,
        "collateral_inside_broker_ms": sum(int(s["collateral_inside_broker_ms"]) for s in steps),
        "collateral_outside_broker_ms": sum(int(s["collateral_outside_broker_ms"]) for s in steps),
        "collateral_before_broker_ms": sum(int(s.get("collateral_before_broker_ms", 0)) for s in steps),
        "collateral_after_broker_ms": sum(int(s.get("collateral_after_broker_ms", 0)) for s in steps),
        "collateral_without_broker_window_ms": sum(
            int(s.get("collateral_without_broker_window_ms", 0)) for s in steps
        ),
        "median_collateral_end_after_broker_ms": statistics.median(lags) if lags else None,
        "static_rejoins_without_rebalance": sum(
            int(s["broker_static_rejoins_without_rebalance"]) for s in steps
        ),
    }

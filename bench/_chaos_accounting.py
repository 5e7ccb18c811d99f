"""The chaos run's accounting, pure: every acknowledged record against what the members logged.

Inputs are plain values parsed from the members' `.rec` files (see testbed/chaos_member.py) and event
files, the producer's acknowledged counts and the list of faults the run injected. Nothing here talks
to Kafka, so the rules (what is lost, which duplicate a fault explains, what counts as two owners) are
unit-tested on hand-made histories.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# A member incarnation's ending that makes re-delivery of its uncommitted records expected: killed,
# evicted (frozen past its session or poll limit, cut from the network) or fenced (fatal error).
MEMBER_FAULTS = frozenset({"kill", "freeze", "stall", "net_cut", "fatal"})
# Faults after which the member lives on unaware it was evicted: records it fetched before the fault
# can still be handed to the application after it (a zombie), until the broker tells it so.
ZOMBIE_FAULTS = frozenset({"freeze", "net_cut"})


@dataclass
class Incarnation:
    """One process lifetime of one member (`name`, `n`-th start) and what it logged."""

    name: str
    n: int
    records: list[tuple[int, int, int]] = field(default_factory=list)  # (partition, offset, ms)
    commits: list[tuple[int, int, int]] = field(default_factory=list)  # (partition, next offset, ms)
    refused_ms: list[int] = field(default_factory=list)
    fatal_ms: list[int] = field(default_factory=list)
    max_window: int = 0  # most records of one partition processed since that partition's last commit
    events: list[dict[str, Any]] = field(default_factory=list)
    fault: str | None = None  # one of MEMBER_FAULTS when a fault hit this incarnation
    fault_ms: int | None = None

    @property
    def key(self) -> str:
        return f"{self.name}.{self.n}"


def parse_rec(name: str, n: int, text: str) -> Incarnation:
    """Read one `.rec` file; the uncommitted window is counted in file order (the order things happened)."""
    inc = Incarnation(name, n)
    pending: Counter[int] = Counter()
    for line in text.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 2:
            continue  # a torn last line from a kill
        kind = parts[0]
        try:
            if kind == "R" and len(parts) == 4:
                p, o, ms = int(parts[1]), int(parts[2]), int(parts[3])
                inc.records.append((p, o, ms))
                pending[p] += 1
                inc.max_window = max(inc.max_window, pending[p])
            elif kind == "C" and len(parts) == 4:
                p, o, ms = int(parts[1]), int(parts[2]), int(parts[3])
                inc.commits.append((p, o, ms))
                pending[p] = 0
            elif kind == "X":
                inc.refused_ms.append(int(parts[1]))
            elif kind == "F":
                inc.fatal_ms.append(int(parts[1]))
        except ValueError:
            continue
    if inc.fatal_ms and inc.fault is None:
        inc.fault, inc.fault_ms = "fatal", inc.fatal_ms[0]
    return inc


@dataclass
class Accounting:
    produced: int
    processed_distinct: int
    lost: int
    lost_examples: list[tuple[int, int]]
    duplicates: int
    duplicates_by_cause: dict[str, int]
    duplicates_unexplained: int
    unexplained_examples: list[dict[str, Any]]
    largest_uncommitted_window: int
    largest_window_member: str | None


def account(acked: Mapping[int, int], incarnations: Sequence[Incarnation]) -> Accounting:
    """Lost, duplicates and what explains each duplicate.

    A duplicate is a later processing of (partition, offset) after an earlier one by incarnation A. It is
    explained by a member fault when A was killed, evicted or fenced and A had not committed past that
    offset when it came again (the record was inside A's uncommitted window); by a refused commit when A
    logged a commit the broker refused between the two (a rebalance, or a coordinator moving: a member
    whose commits fail past its session is evicted and rejoins from the last commit); by a loss when A
    logged a `lost` of that partition between the two (its session ran out); by a zombie when
    the later processor was frozen or cut off before it and has had no rebalance event since (it is
    handing over records fetched under its old assignment); otherwise it is unexplained.
    """
    first: dict[tuple[int, int], tuple[int, Incarnation]] = {}
    counts: Counter[tuple[int, int]] = Counter()
    # per (incarnation, partition): commit times and the highest offset committed up to each
    commit_ms: dict[tuple[str, int], list[int]] = defaultdict(list)
    commit_max: dict[tuple[str, int], list[int]] = defaultdict(list)
    for inc in incarnations:
        for p, o, ms in sorted(inc.commits, key=lambda c: c[2]):
            key = (inc.key, p)
            commit_ms[key].append(ms)
            commit_max[key].append(max(o, commit_max[key][-1] if commit_max[key] else -1))

    def committed_past(key: tuple[str, int], before_ms: int) -> int:
        """The highest offset `key` had committed before `before_ms` (-1: none)."""
        i = bisect.bisect_left(commit_ms.get(key, []), before_ms)
        return commit_max[key][i - 1] if i > 0 else -1

    by_cause: Counter[str] = Counter()
    unexplained: list[dict[str, Any]] = []
    # earliest processing first, so "the earlier processor" is well defined
    occurrences = sorted(
        ((ms, p, o, i) for i, inc in enumerate(incarnations) for p, o, ms in inc.records),
        key=lambda t: (t[0], t[3]),
    )
    for ms, p, o, i in occurrences:
        inc = incarnations[i]
        counts[(p, o)] += 1
        if (p, o) not in first:
            first[(p, o)] = (ms, inc)
            continue
        prev_ms, prev = first[(p, o)]
        first[(p, o)] = (ms, inc)
        past = committed_past((prev.key, p), ms)
        inside_window = past <= o  # the earlier processor had not committed it when it came again
        if prev.fault in MEMBER_FAULTS and inside_window:
            by_cause[f"member {prev.fault}"] += 1
        elif _zombie(inc, ms):
            by_cause[f"zombie after {inc.fault}"] += 1
        elif inside_window and any(prev_ms <= r <= ms for r in prev.refused_ms):
            by_cause["commit refused"] += 1
        elif inside_window and _lost_between(prev, p, prev_ms, ms):
            by_cause["partition lost"] += 1
        else:
            by_cause["unexplained"] += 1
            if len(unexplained) < 20:
                unexplained.append(
                    {
                        "partition": p,
                        "offset": o,
                        "first": prev.key,
                        "first_ms": prev_ms,
                        "again": inc.key,
                        "again_ms": ms,
                        "first_committed_past": past,
                    }
                )
    lost = [(p, o) for p, n in sorted(acked.items()) for o in range(n) if counts[(p, o)] == 0]
    widest = max(incarnations, key=lambda inc: inc.max_window, default=None)
    return Accounting(
        produced=sum(acked.values()),
        processed_distinct=len(counts),
        lost=len(lost),
        lost_examples=lost[:20],
        duplicates=sum(c - 1 for c in counts.values() if c > 1),
        duplicates_by_cause=dict(by_cause),
        duplicates_unexplained=by_cause.get("unexplained", 0),
        unexplained_examples=unexplained,
        largest_uncommitted_window=widest.max_window if widest else 0,
        largest_window_member=widest.key if widest else None,
    )


def _lost_between(inc: Incarnation, partition: int, start_ms: int, end_ms: int) -> bool:
    """`inc` logged a `lost` naming `partition` between the two processings: its session ran out (on
    the client's side too, while the coordinator moved), so nothing it had not committed was."""
    return any(
        e.get("kind") == "lost"
        and start_ms <= int(e.get("ts_ms", -1)) <= end_ms
        and any(int(tp[1]) == partition for tp in e.get("partitions", []))
        for e in inc.events
    )


def _zombie(inc: Incarnation, ms: int) -> bool:
    """`inc` processed at `ms` after a fault it survives unaware, with no rebalance event in between."""
    if inc.fault not in ZOMBIE_FAULTS or inc.fault_ms is None or ms < inc.fault_ms:
        return False
    return not any(
        inc.fault_ms <= int(e.get("ts_ms", -1)) <= ms
        for e in inc.events
        if e.get("kind") in ("assigned", "revoked", "lost")
    )


@dataclass
class Ownership:
    intervals: int
    overlaps: int  # two owners at once by the events, not explained by a fault or a `lost`
    overlaps_excused: int
    overlap_examples: list[dict[str, Any]]


def ownership_intervals(inc: Incarnation, end_ms: int) -> list[tuple[tuple[str, int], int, int, str]]:
    """(partition, from ms, to ms, how it ended) for every stretch `inc` owned a partition by its events."""
    owned_since: dict[tuple[str, int], int] = {}
    out: list[tuple[tuple[str, int], int, int, str]] = []
    for event in inc.events:
        kind = event.get("kind")
        if kind not in ("assigned", "revoked", "lost"):
            continue
        now = {(t, p) for t, p in event.get("owned", [])}
        ts = int(event["ts_ms"])
        for tp in now - owned_since.keys():
            owned_since[tp] = ts
        for tp in set(owned_since) - now:
            out.append((tp, owned_since.pop(tp), ts, str(kind)))
    for tp, since in owned_since.items():
        out.append((tp, since, end_ms, "end"))
    return out


def check_ownership(incarnations: Sequence[Incarnation], ends_ms: Mapping[str, int]) -> Ownership:
    """No partition owned by two incarnations at once according to their events, except where the
    documented hand-over allows it: the earlier owner was hit by a member fault (it cannot know it was
    replaced) or its stretch ended in `lost` (the group moved on without it)."""
    stretches: dict[tuple[str, int], list[tuple[int, int, str, Incarnation]]] = defaultdict(list)
    total = 0
    for inc in incarnations:
        for tp, start, stop, how in ownership_intervals(inc, ends_ms.get(inc.key, 0)):
            stretches[tp].append((start, stop, how, inc))
            total += 1
    overlaps = excused = 0
    examples: list[dict[str, Any]] = []
    for tp, items in stretches.items():
        items.sort(key=lambda s: s[0])
        for i, (a_start, a_stop, a_how, a) in enumerate(items):
            for b_start, _b_stop, _b_how, b in items[i + 1 :]:
                if b_start >= a_stop:
                    break
                if a is b:
                    continue
                faulted = a.fault in MEMBER_FAULTS and (a.fault_ms or 0) <= b_start
                if faulted or a_how == "lost":
                    excused += 1
                    continue
                overlaps += 1
                if len(examples) < 20:
                    examples.append(
                        {
                            "partition": list(tp),
                            "first": a.key,
                            "first_from_ms": a_start,
                            "first_until_ms": a_stop,
                            "ended_by": a_how,
                            "second": b.key,
                            "second_from_ms": b_start,
                        }
                    )
    return Ownership(intervals=total, overlaps=overlaps, overlaps_excused=excused, overlap_examples=examples)


def final_owned_mismatches(
    last_owned: Mapping[str, Iterable[tuple[str, int]]], broker: Mapping[str, Iterable[tuple[str, int]]]
) -> list[str]:
    """Members whose last event's `owned` differs from what the broker says they are assigned."""
    names = sorted(set(last_owned) | set(broker))
    return [n for n in names if sorted(last_owned.get(n, ())) != sorted(broker.get(n, ()))]


def per_second(ms_values: Iterable[int], origin_ms: int) -> list[int]:
    counts: Counter[int] = Counter((ms - origin_ms) // 1000 for ms in ms_values)
    if not counts:
        return []
    return [counts.get(s, 0) for s in range(max(0, min(counts)), max(counts) + 1)]

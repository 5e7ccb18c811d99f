"""The reference definitions as state, one event at a time: who owns each partition, which partitions
wait for an owner, which members are paused.

The batch reference replays a whole ordered stream through one `Ledger` (`_intervals.unavailability`,
`_summary.pauses`); the live pipeline (`_stream`) keeps one per consumer group and feeds it each event
once its order is final. So the report and the pipeline share one source of truth for unavailability
and pause. What the definitions mean: docs/report.md; why they are kept as state: docs/design/analytics.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from kafka_coop.events import PartitionKey

GroupPartition = tuple[str, str, int]  # (group, topic, partition)
MemberKey = tuple[str, str]  # (group, name)

RELEASE_KINDS: Final = frozenset({"revoked", "lost"})


class _Span:
    """`[start_ms, end_ms)`: what an interval and a pause have in common."""

    __slots__ = ()
    start_ms: int
    end_ms: int

    @property
    def duration_ms(self) -> int:
        return self.end_ms - self.start_ms


@dataclass(frozen=True, slots=True)
class Interval(_Span):
    """A partition without an owner, `[start_ms, end_ms)`."""

    group: str
    topic: str
    partition: int
    start_ms: int
    end_ms: int
    from_member: str
    to_member: str
    cause: str  # revoked | lost | vanished


@dataclass(frozen=True, slots=True)
class Pause(_Span):
    """A member processing nothing because of a rebalance, `[start_ms, end_ms)`."""

    group: str
    member: str
    start_ms: int
    end_ms: int
    cause: str  # revoked | lost | started


# Plain tuples in the hot path (the live pipeline applies every event through here): an interval is
# (group, topic, partition, start_ms, end_ms, from_member, to_member, cause), a pause (group, member,
# start_ms, end_ms, cause); `Interval(*t)` and `Pause(*t)` are the same values as objects.
IntervalTuple = tuple[str, str, int, int, int, str, str, str]
PauseTuple = tuple[str, str, int, int, str]
# What one event changed: the intervals and the pause it ended, the partitions it released, and
# whether it opened a pause.
Step = tuple[Sequence[IntervalTuple], PauseTuple | None, Sequence[GroupPartition], bool]
NOTHING: Final[tuple[()]] = ()


class Ledger:
    """Ownership and pause state of one or more groups, advanced by events given in event order.

    * A partition is released by `revoked`/`lost` at its owner, or by its owner's `closed`, and is
      unavailable until its next `assigned`. When an `assigned` finds another owner that never
      released it (a SIGKILLed member), the gap counts from that owner's last event (`vanished`).
    * A member's pause starts at `started`, or at a `revoked`/`lost` after which it owns nothing, and
      ends at its next `assigned` after which it owns something.
    """

    __slots__ = ("last_seen", "owner", "paused", "released")

    def __init__(self) -> None:
        self.owner: dict[GroupPartition, str] = {}
        self.released: dict[GroupPartition, tuple[int, str, str]] = {}  # -> (since, from, cause)
        self.last_seen: dict[MemberKey, int] = {}
        self.paused: dict[MemberKey, tuple[int, str]] = {}  # -> (since, cause)

    def apply(
        self,
        group: str,
        member: str,
        ts: int,
        kind: str,
        partitions: Iterable[PartitionKey],
        owns: bool,
    ) -> Step:
        """One event: `partitions` is its delta, `owns` whether its `owned` is non-empty."""
        intervals: list[IntervalTuple] | tuple[()] = NOTHING
        released: list[GroupPartition] | tuple[()] = NOTHING
        owner, gaps = self.owner, self.released
        if kind == "assigned":
            for topic, number in partitions:
                part = (group, topic, number)
                gap = gaps.pop(part, None)
                previous = owner.get(part)
                if gap is None and previous is not None and previous != member:
                    gap = (self.last_seen.get((group, previous), ts), previous, "vanished")
                if gap is not None:
                    if not intervals:
                        intervals = []
                    since, source, cause = gap
                    intervals.append((group, topic, number, since, ts, source, member, cause))
                owner[part] = member
        elif kind in RELEASE_KINDS:
            for topic, number in partitions:
                part = (group, topic, number)
                if owner.get(part) == member:
                    del owner[part]
                    gaps[part] = (ts, member, kind)
                    if not released:
                        released = []
                    released.append(part)
        elif kind == "closed":
            released = [p for p, m in owner.items() if m == member and p[0] == group]
            for part in released:
                del owner[part]
                gaps[part] = (ts, member, "revoked")
        key = (group, member)
        self.last_seen[key] = ts
        pause = None
        opened = False
        if kind == "assigned":
            if owns:
                began = self.paused.pop(key, None)
                if began is not None:
                    pause = (group, member, began[0], ts, began[1])
        elif (kind == "started" or (not owns and kind in RELEASE_KINDS)) and key not in self.paused:
            self.paused[key] = (ts, kind)
            opened = True
        return intervals, pause, released, opened

"""Per-partition unavailability: from the moment a partition leaves its owner to its next assignment.

Everything is scoped by consumer group: a partition is `(group, topic, partition)` and a member is
`(group, name)`, because two groups reading the same topic own its partitions independently (a
cluster's fleets usually do), and one process may run members of several groups under one client id.

A partition is unavailable from `revoked`/`lost` at its owner until some member reports it `assigned`.
A member that vanished without an event (SIGKILL) still "owns" its partitions in the stream; when
another member is assigned one of them, the gap counts from the vanished owner's last event, which is
the last moment anyone can vouch it was being consumed. Events are ordered by wall clock across members
(and by `seq` within one), so streams that arrive out of order give the same answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

GroupPartition = tuple[str, str, int]  # (group, topic, partition)
MemberKey = tuple[str, str]  # (group, name)


@dataclass(frozen=True, slots=True)
class Interval:
    group: str
    topic: str
    partition: int
    start_ms: int
    end_ms: int
    from_member: str
    to_member: str
    cause: str  # revoked | lost | vanished

    @property
    def duration_ms(self) -> int:
        return self.end_ms - self.start_ms


def member_name(event: Mapping[str, Any]) -> str:
    """The name a member is reported under: `instance_id or client_id or member_id`."""
    return str(event.get("instance_id") or event.get("client_id") or event["member_id"])


def member_key(event: Mapping[str, Any]) -> MemberKey:
    """Who an event belongs to: its group and `instance_id or client_id or member_id`."""
    return str(event["group"]), member_name(event)


def order_key(event: Mapping[str, Any]) -> tuple[int, str, int, str]:
    """The total order of events: wall clock, member name, the member's `seq`, then `member_id` (two
    incarnations of one static member, or members sharing a client id, never tie by input order)."""
    return int(event["ts_ms"]), member_name(event), int(event["seq"]), str(event["member_id"])


def in_event_order(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(events, key=order_key)


def unavailability(events: Iterable[Mapping[str, Any]]) -> list[Interval]:
    """Every interval during which a partition had no owner, in start order."""
    owner: dict[GroupPartition, str] = {}
    released: dict[GroupPartition, tuple[int, str, str]] = {}  # partition -> (since, from, cause)
    last_seen: dict[MemberKey, int] = {}
    out: list[Interval] = []
    for event in in_event_order(events):
        group, member = member_key(event)
        ts = int(event["ts_ms"])
        kind = event["kind"]
        parts = [(group, str(t), int(p)) for t, p in event.get("partitions") or ()]
        if kind in ("revoked", "lost"):
            for part in parts:
                if owner.get(part) == member:
                    del owner[part]
                    released[part] = (ts, member, kind)
        elif kind == "assigned":
            for part in parts:
                gap = released.pop(part, None)
                previous = owner.get(part)
                if gap is None and previous is not None and previous != member:
                    gap = (last_seen.get((group, previous), ts), previous, "vanished")
                if gap is not None:
                    since, source, cause = gap
                    out.append(Interval(group, part[1], part[2], since, ts, source, member, cause))
                owner[part] = member
        elif kind == "closed":
            for part in [p for p, m in owner.items() if m == member and p[0] == group]:
                del owner[part]
                released[part] = (ts, member, "revoked")
        last_seen[(group, member)] = ts
    out.sort(key=lambda i: (i.start_ms, i.group, i.topic, i.partition))
    return out


def unavailable_ms(
    intervals: Iterable[Interval], *, since_ms: int | None = None, until_ms: int | None = None
) -> int:
    """Total partition-unavailable milliseconds, clipped to an optional window."""
    total = 0
    for interval in intervals:
        start = interval.start_ms if since_ms is None else max(interval.start_ms, since_ms)
        end = interval.end_ms if until_ms is None else min(interval.end_ms, until_ms)
        total += max(0, end - start)
    return total

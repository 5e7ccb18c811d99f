"""Per-partition unavailability: from the moment a partition leaves its owner to its next assignment.

Everything is scoped by consumer group: a partition is `(group, topic, partition)` and a member is
`(group, name)`, because two groups reading the same topic own its partitions independently (a
cluster's fleets usually do), and one process may run members of several groups under one client id.

A partition is unavailable from `revoked`/`lost` at its owner until some member reports it `assigned`.
A member that vanished without an event (SIGKILL) still "owns" its partitions in the stream; when
another member is assigned one of them, the gap counts from the vanished owner's last event, which is
the last moment anyone can vouch it was being consumed. Events are ordered by wall clock across members
(and by `seq` within one), so streams that arrive out of order give the same answer. The state behind
these rules is `_ledger.Ledger`, which the live pipeline shares.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafka_coop.analytics._ledger import Interval, Ledger, MemberKey, Pause


def member_name(event: Mapping[str, Any]) -> str:
    """The name a member is reported under: its `instance_id`; else `client_id@process` (one consumer
    instance for its life, however many share the client id); else, for events without a `process`,
    `client_id or member_id`. The JVM decoder (EventDecoder.java) names members the same way."""
    instance = event.get("instance_id")
    if instance:
        return str(instance)
    client, process = event.get("client_id"), event.get("process")
    if process:
        return f"{client}@{process}" if client else str(process)
    return str(client or event["member_id"])


def member_key(event: Mapping[str, Any]) -> MemberKey:
    """Who an event belongs to: its group and `member_name`."""
    return str(event["group"]), member_name(event)


def order_key(event: Mapping[str, Any]) -> tuple[int, str, int, str]:
    """The total order of events: wall clock, member name, the member's `seq`, then `member_id` (two
    incarnations of one static member, or members sharing a client id, never tie by input order)."""
    return int(event["ts_ms"]), member_name(event), int(event["seq"]), str(event["member_id"])


def in_event_order(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(events, key=order_key)


def replay(ordered: Iterable[Mapping[str, Any]]) -> tuple[list[Interval], list[Pause]]:
    """Every interval and closed pause of a stream already in event order (`in_event_order`), each list
    in start order."""
    ledger = Ledger()
    intervals: list[Interval] = []
    closed: list[Pause] = []
    for event in ordered:
        group, member = member_key(event)
        parts = [(str(t), int(p)) for t, p in event.get("partitions") or ()]
        owns = bool(event.get("owned"))
        gaps, pause, _, _ = ledger.apply(group, member, int(event["ts_ms"]), event["kind"], parts, owns)
        intervals.extend(Interval(*gap) for gap in gaps)
        if pause is not None:
            closed.append(Pause(*pause))
    intervals.sort(key=lambda i: (i.start_ms, i.group, i.topic, i.partition))
    closed.sort(key=lambda p: (p.start_ms, p.group, p.member))
    return intervals, closed


def unavailability(events: Iterable[Mapping[str, Any]]) -> list[Interval]:
    """Every interval during which a partition had no owner, in start order."""
    return replay(in_event_order(events))[0]


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

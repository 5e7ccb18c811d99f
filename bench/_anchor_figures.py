"""The KIP-848 anchor's figures (pure): when every partition was owned, and what the old ones paid.

Unit-tested without a broker; bench/partition_add.py feeds them the members' events.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafka_coop.events import PartitionKey


def _order(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(events, key=lambda e: (int(e["ts_ms"]), str(e.get("client_id")), int(e.get("seq", 0))))


def all_owned_at(
    events: Iterable[Mapping[str, Any]], topic: str, partitions: int, since_ms: int
) -> int | None:
    """The first event time >= `since_ms` at which partitions 0..partitions-1 of `topic` are all owned,
    each by exactly one member (from every member's latest `owned`); None if that never happened."""
    owned: dict[str, frozenset[PartitionKey]] = {}
    want = {(topic, p) for p in range(partitions)}
    for event in _order(events):
        if event.get("kind") not in ("assigned", "revoked", "lost", "closed"):
            continue
        member = str(event.get("client_id"))
        owned[member] = frozenset((str(t), int(p)) for t, p in event.get("owned") or ())
        ts = int(event["ts_ms"])
        if ts < since_ms:
            continue
        seen: set[PartitionKey] = set()
        clash = False
        for parts in owned.values():
            mine = {k for k in parts if k in want}
            if seen & mine:
                clash = True
                break
            seen |= mine
        if not clash and seen == want:
            return ts
    return None


def first_assigned_at(
    events: Iterable[Mapping[str, Any]], topic: str, first_new: int, since_ms: int
) -> int | None:
    """When the first partition numbered >= `first_new` was assigned to anyone (at or after `since_ms`)."""
    for event in _order(events):
        if event.get("kind") != "assigned" or int(event["ts_ms"]) < since_ms:
            continue
        if any(str(t) == topic and int(p) >= first_new for t, p in event.get("partitions") or ()):
            return int(event["ts_ms"])
    return None


def old_partition_cost(
    intervals: Iterable[Any], topic: str, old: int, window: tuple[int, int]
) -> tuple[int, int]:
    """(partition-unavailable ms, partitions affected) of partitions 0..old-1 inside `window`, from
    `kafka_coop.analytics.unavailability` intervals (objects with topic, partition, start_ms, end_ms)."""
    start, end = window
    total = 0
    hit: set[int] = set()
    for iv in intervals:
        if iv.topic != topic or iv.partition >= old:
            continue
        clipped = min(iv.end_ms, end) - max(iv.start_ms, start)
        if clipped > 0:
            total += clipped
            hit.add(iv.partition)
    return total, len(hit)


def member_pause_ms(pauses: Iterable[Any], window: tuple[int, int]) -> int:
    """Member-ms of pause (owning nothing) inside `window`."""
    start, end = window
    return sum(max(0, min(p.end_ms, end) - max(p.start_ms, start)) for p in pauses)


def detection_lines(lines: Sequence[Any], since_ms: int) -> dict[str, Any]:
    """The coordinator's first reaction after `since_ms`: a classic rebalance (with the member whose
    rejoin started it, in the reason) or a KIP-848 group-epoch bump (the broker saw the new partitions
    itself)."""
    for ln in lines:
        if ln.ts_ms < since_ms:
            continue
        if ln.kind == "prepare":
            return {"kind": "classic rebalance", "ts_ms": ln.ts_ms, "detail": ln.detail[:200]}
        if ln.kind == "epoch_bump":
            return {"kind": "group epoch bump", "ts_ms": ln.ts_ms, "detail": f"epoch {ln.generation}"}
    return {}


def partition_creation(lines: Iterable[str], topic: str, old: int) -> dict[str, int | None]:
    """When the broker finished creating the added partitions, from its log: the controller's last
    `Replayed PartitionRecord for new partition T-N` and the broker's last `Expected partition T-N ...
    Creating` (the partition's log made on this broker), N >= `old`; epoch ms, None when not logged."""
    from bench.harness.broker_clock import parse_ts

    recorded: int | None = None
    created: int | None = None
    record_mark = f"Replayed PartitionRecord for new partition {topic}-"
    create_mark = f"Expected partition {topic}-"
    for raw in lines:
        for mark, is_record in ((record_mark, True), (create_mark, False)):
            at = raw.find(mark)
            if at < 0:
                continue
            digits = raw[at + len(mark) :].split(" ", 1)[0]
            if not digits.isdigit() or int(digits) < old:
                continue
            ts = parse_ts(raw[:23])
            if is_record:
                recorded = ts
            else:
                created = ts
    return {"partitions_recorded_ms": recorded, "partition_logs_created_ms": created}

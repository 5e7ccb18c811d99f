"""Unavailability intervals on hand-written streams with known answers."""

from __future__ import annotations

from typing import Any

from kafka_coop.analytics import unavailability, unavailable_ms


def ev(member: str, seq: int, ts: int, kind: str, *parts: int) -> dict[str, Any]:
    return {
        "client_id": member,
        "member_id": member,
        "instance_id": None,
        "seq": seq,
        "ts_ms": ts,
        "kind": kind,
        "partitions": [["t", p] for p in parts],
    }


def test_eager_rebalance_makes_every_partition_unavailable_until_reassigned() -> None:
    stream = [
        ev("a", 0, 0, "assigned", 0, 1),
        ev("a", 1, 100, "revoked", 0, 1),
        ev("a", 2, 350, "assigned", 0, 1),
    ]
    intervals = unavailability(stream)
    assert [(i.partition, i.duration_ms) for i in intervals] == [(0, 250), (1, 250)]
    assert unavailable_ms(intervals) == 500


def test_cooperative_move_counts_only_the_moved_partition() -> None:
    stream = [ev("a", 0, 0, "assigned", 0, 1), ev("a", 1, 100, "revoked", 1), ev("b", 0, 180, "assigned", 1)]
    assert [(i.partition, i.duration_ms, i.to_member) for i in unavailability(stream)] == [(1, 80, "b")]


def test_lost_partition_counts_from_the_lost_event() -> None:
    stream = [ev("a", 0, 0, "assigned", 0), ev("a", 1, 500, "lost", 0), ev("b", 0, 900, "assigned", 0)]
    [interval] = unavailability(stream)
    assert (interval.cause, interval.duration_ms) == ("lost", 400)


def test_killed_member_counts_from_its_last_event() -> None:
    stream = [ev("a", 0, 0, "assigned", 0), ev("a", 1, 50, "started"), ev("b", 0, 10_050, "assigned", 0)]
    [interval] = unavailability(stream)
    assert (interval.cause, interval.start_ms, interval.end_ms) == ("vanished", 50, 10_050)


def test_events_out_of_order_across_members_give_the_same_answer() -> None:
    stream = [ev("a", 0, 0, "assigned", 0), ev("a", 1, 100, "revoked", 0), ev("b", 0, 130, "assigned", 0)]
    assert unavailability(list(reversed(stream))) == unavailability(stream)

"""Unavailability intervals on hand-written streams with known answers."""

from __future__ import annotations

from typing import Any

from kafka_coop.analytics import unavailability, unavailable_ms


def ev(member: str, seq: int, ts: int, kind: str, *parts: int, group: str = "g") -> dict[str, Any]:
    return {
        "group": group,
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


def test_two_groups_reading_one_topic_own_its_partitions_independently() -> None:
    """Group h's member taking t-0 is not a gap in group g (each group consumes every partition)."""
    stream = [
        ev("a", 0, 0, "assigned", 0),
        ev("x", 0, 10, "assigned", 0, group="h"),
        ev("a", 1, 100, "revoked", 0),
        ev("b", 0, 130, "assigned", 0),
        ev("x", 1, 500, "revoked", 0, group="h"),
        ev("y", 0, 900, "assigned", 0, group="h"),
    ]
    assert [(i.group, i.from_member, i.to_member, i.duration_ms) for i in unavailability(stream)] == [
        ("g", "a", "b", 30),
        ("h", "x", "y", 400),
    ]


def test_a_member_name_in_two_groups_is_two_members() -> None:
    """One process running consumers of two groups under one client id: its revoke in h does not
    release what it owns in g."""
    stream = [
        ev("a", 0, 0, "assigned", 0),
        ev("a", 0, 5, "assigned", 0, group="h"),
        ev("a", 1, 50, "revoked", 0, group="h"),
        ev("b", 0, 60, "assigned", 0),
    ]
    [interval] = unavailability(stream)
    assert (interval.group, interval.cause, interval.start_ms) == ("g", "vanished", 0)


def test_closing_without_a_revoke_releases_what_the_member_still_owns() -> None:
    stream = [ev("a", 0, 0, "assigned", 0, 1), ev("a", 1, 40, "closed"), ev("b", 0, 90, "assigned", 0, 1)]
    assert [(i.partition, i.cause, i.start_ms) for i in unavailability(stream)] == [
        (0, "revoked", 40),
        (1, "revoked", 40),
    ]


def test_equal_timestamps_are_ordered_by_member_then_seq_then_member_id() -> None:
    """Two incarnations of static member a at the same millisecond and seq: member_id decides, not
    the order of the input lines."""
    first = {**ev("a", 0, 10, "revoked", 0), "member_id": "a-1"}
    second = {**ev("a", 0, 10, "assigned", 0), "member_id": "a-2"}
    stream = [ev("a", 0, 0, "assigned", 0), first, second]
    assert unavailability(stream) == unavailability([stream[0], second, first])
    [interval] = unavailability(stream)
    assert (interval.start_ms, interval.end_ms) == (10, 10)

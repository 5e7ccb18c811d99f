"""Ownership after each callback follows the protocol's own meaning of the callback."""

from __future__ import annotations

import json

from kafka_coop.events import EventStamp, Ownership, RebalanceEvent

A, B, C = ("t", 0), ("t", 1), ("t", 2)


def test_eager_assignment_replaces_what_was_owned() -> None:
    own = Ownership("eager")
    own.apply("assigned", [A, B])
    own.apply("revoked", [A, B])
    assert own.apply("assigned", [C]) == (C,)


def test_cooperative_assignment_adds_the_delta() -> None:
    own = Ownership("cooperative")
    own.apply("assigned", [A])
    assert own.apply("assigned", [B]) == (A, B)


def test_revoked_and_lost_remove_only_their_partitions() -> None:
    own = Ownership("consumer")
    own.apply("assigned", [A, B, C])
    own.apply("revoked", [A])
    assert own.apply("lost", [C]) == (B,)


def test_seq_is_monotonic_per_member_and_events_round_trip_as_json() -> None:
    stamp = EventStamp("g", "c", None, "cooperative")
    first = stamp.make("assigned", member_id="m", partitions=[B, A], owned=(A, B), callback_ms=1.23456)
    second = stamp.make(
        "revoked", member_id="m", partitions=[A], owned=(B,), callback_ms=0.1, committed=[("t", 0, 42)]
    )
    assert (first.seq, second.seq) == (0, 1)
    assert first.partitions == (A, B)
    line = json.loads(second.model_dump_json())
    assert line["partitions"] == [["t", 0]] and line["committed"] == [["t", 0, 42]]
    assert RebalanceEvent.model_validate_json(second.model_dump_json()) == second


def test_two_consumers_with_one_client_id_stamp_two_processes_each_kept_for_its_life() -> None:
    """A service that sets no client.id is "rdkafka" in every instance: `process` tells them apart."""
    one, other = EventStamp("g", "rdkafka", None, "eager"), EventStamp("g", "rdkafka", None, "eager")
    first, second = (
        one.make(k, member_id="m", partitions=(), owned=(), callback_ms=0) for k in ("started", "closed")
    )
    theirs = other.make("started", member_id="m", partitions=(), owned=(), callback_ms=0)
    assert first.process is not None and first.process == second.process
    assert theirs.process != first.process

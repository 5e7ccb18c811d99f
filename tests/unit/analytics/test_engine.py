"""The Python reference engine on hand-written streams with known answers.

The streams (STREAMS) are shared with the Spark engine tests
(tests/integration/analytics/test_report_spark.py), which must give the very same summaries.
Partitions are `t-0`.. of topic `t`; members are named by
client id (or instance id); times are small integers (ms).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from kafka_coop.analytics import PhaseWindow, Summary, pauses, summarize, unavailability


def ev(
    member: str,
    seq: int,
    ts: int,
    kind: str,
    parts: tuple[int, ...] = (),
    owned: tuple[int, ...] = (),
    *,
    protocol: str = "eager",
    callback_ms: float = 0.0,
    instance_id: str | None = None,
    process: str | None = None,
) -> dict[str, Any]:
    """A complete, valid RebalanceEvent as a dict (what a JSONL line decodes to). With `process`,
    `member` is only the client id the processes share."""
    optional = {} if process is None else {"process": process}
    return {
        "v": 1,
        "ts_ms": ts,
        "seq": seq,
        "group": "g",
        "member_id": f"{member}-id",
        "instance_id": instance_id,
        "client_id": member,
        "protocol": protocol,
        "kind": kind,
        "partitions": [["t", p] for p in parts],
        "owned": [["t", p] for p in owned],
        "callback_ms": callback_ms,
        "committed": [["t", p, 10] for p in parts] if kind == "revoked" else None,
        "error": None,
        **optional,
    }


# a owns everything; b starts; eager revokes all from a, then both get half.
EAGER = [
    ev("a", 0, 0, "started"),
    ev("a", 1, 100, "assigned", (0, 1, 2, 3), (0, 1, 2, 3), callback_ms=1.5),
    ev("b", 0, 1000, "started"),
    ev("a", 2, 1100, "revoked", (0, 1, 2, 3), (), callback_ms=12.25),
    ev("a", 3, 1400, "assigned", (0, 1), (0, 1), callback_ms=0.75),
    ev("b", 1, 1450, "assigned", (2, 3), (2, 3), callback_ms=2.0),
]

# a keeps t-0 and hands t-1 to b: only t-1 is unowned, and a never stops.
COOPERATIVE = [
    ev("a", 0, 0, "assigned", (0, 1), (0, 1), protocol="cooperative"),
    ev("b", 0, 1000, "started", protocol="cooperative"),
    ev("a", 1, 1100, "revoked", (1,), (0,), protocol="cooperative", callback_ms=3.0),
    ev("a", 2, 1300, "assigned", (), (0,), protocol="cooperative"),
    ev("b", 1, 1320, "assigned", (1,), (1,), protocol="cooperative"),
]

# a loses t-0 (nothing committed); b takes it over; a later gets t-1.
LOST = [
    ev("a", 0, 0, "assigned", (0,), (0,), protocol="consumer"),
    ev("a", 1, 500, "lost", (0,), (), protocol="consumer"),
    ev("b", 0, 900, "assigned", (0,), (0,), protocol="consumer"),
    ev("a", 2, 950, "assigned", (1,), (1,), protocol="consumer"),
]

# a is SIGKILLed after its assignment (no event); b gets its partitions a session timeout later.
KILLED = [
    ev("a", 0, 0, "started", protocol="cooperative", instance_id="pod-a"),
    ev("a", 1, 50, "assigned", (0, 1), (0, 1), protocol="cooperative", instance_id="pod-a"),
    ev("b", 0, 5000, "started", protocol="cooperative"),
    ev("b", 1, 10_050, "assigned", (0, 1), (0, 1), protocol="cooperative"),
]


# Three processes of one service that sets no client.id (all "rdkafka"): p1 owns t-0..t-3, p2 and p3
# join and each takes one of the two partitions p1 hands over. Three members, each with its own pause.
SHARED_CLIENT_ID = [
    ev("rdkafka", 0, 0, "started", protocol="cooperative", process="host-a:11:aa"),
    ev(
        "rdkafka",
        1,
        100,
        "assigned",
        (0, 1, 2, 3),
        (0, 1, 2, 3),
        protocol="cooperative",
        process="host-a:11:aa",
    ),
    ev("rdkafka", 0, 1000, "started", protocol="cooperative", process="host-b:22:bb"),
    ev("rdkafka", 0, 1000, "started", protocol="cooperative", process="host-c:33:cc"),
    ev("rdkafka", 2, 1100, "revoked", (2, 3), (0, 1), protocol="cooperative", process="host-a:11:aa"),
    ev("rdkafka", 3, 1300, "assigned", (), (0, 1), protocol="cooperative", process="host-a:11:aa"),
    ev("rdkafka", 1, 1320, "assigned", (2,), (2,), protocol="cooperative", process="host-b:22:bb"),
    ev("rdkafka", 1, 1340, "assigned", (3,), (3,), protocol="cooperative", process="host-c:33:cc"),
]

# The same service's p1 is SIGKILLed holding t-0..t-2 (no revoke, no close); p2 is given them when the
# broker's session timeout expires.
KILLED_SHARED_CLIENT_ID = [
    ev("rdkafka", 0, 0, "started", protocol="cooperative", process="host-a:11:aa"),
    ev("rdkafka", 1, 50, "assigned", (0, 1, 2), (0, 1, 2), protocol="cooperative", process="host-a:11:aa"),
    ev("rdkafka", 0, 60, "started", protocol="cooperative", process="host-b:22:bb"),
    ev("rdkafka", 1, 70, "assigned", (3, 4, 5), (3, 4, 5), protocol="cooperative", process="host-b:22:bb"),
    ev(
        "rdkafka",
        2,
        39_050,
        "assigned",
        (0, 1, 2),
        (0, 1, 2, 3, 4, 5),
        protocol="cooperative",
        process="host-b:22:bb",
    ),
]


def shuffled(events: list[dict[str, Any]], seed: int = 7) -> list[dict[str, Any]]:
    """The same events in another order (as merged per-member logs arrive)."""
    out = list(events)
    random.Random(seed).shuffle(out)
    return out


STREAMS: dict[str, list[dict[str, Any]]] = {
    "eager": EAGER,
    "cooperative": COOPERATIVE,
    "lost": LOST,
    "killed": KILLED,
    "shared-client-id": SHARED_CLIENT_ID,
    "killed-shared-client-id": KILLED_SHARED_CLIENT_ID,
    "eager-out-of-order": shuffled(EAGER),
}


def prefixed(events: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """The same stream with its own group, members and topic, so streams can share a run."""

    def name(value: Any) -> Any:
        return None if value is None else f"{prefix}{value}"

    return [
        {
            **e,
            "group": name(e["group"]),
            "member_id": name(e["member_id"]),
            "instance_id": name(e["instance_id"]),
            "client_id": name(e["client_id"]),
            **({"process": name(e["process"])} if "process" in e else {}),
            "partitions": [[name(t), p] for t, p in e["partitions"]],
            "owned": [[name(t), p] for t, p in e["owned"]],
            "committed": None if e["committed"] is None else [[name(t), p, o] for t, p, o in e["committed"]],
        }
        for e in events
    ]


def test_eager_rebalance_stops_every_partition_and_every_member() -> None:
    summary = summarize(EAGER)
    assert {(p.partition, p.unavailable_ms) for p in summary.partitions} == {
        (0, 300),
        (1, 300),
        (2, 350),
        (3, 350),
    }
    assert summary.partition_unavailable_ms_total == 1300
    # a: started 0 -> first assignment 100, then revoked-all 1100 -> 1400; b: started 1000 -> 1450
    assert [(p.member, p.start_ms, p.end_ms, p.cause) for p in pauses(EAGER)] == [
        ("a", 0, 100, "started"),
        ("b", 1000, 1450, "started"),
        ("a", 1100, 1400, "revoked"),
    ]
    assert summary.pause_ms_total == 850
    eager = summary.rebalances["eager"]
    assert (eager.members, eager.events, eager.rebalances, eager.revoked, eager.revoked_partitions) == (
        2,
        4,
        3,
        1,
        4,
    )


def test_cooperative_move_stops_only_the_moved_partition_and_not_the_member_that_keeps_some() -> None:
    summary = summarize(COOPERATIVE)
    assert [(p.partition, p.unavailable_ms, p.intervals) for p in summary.partitions] == [
        (0, 0, 0),
        (1, 220, 1),
    ]
    by_name = {m.name: m for m in summary.members}
    assert (by_name["a"].pause_ms, by_name["a"].revoked_partitions) == (0, 1)
    assert by_name["b"].pause_ms == 320, "a new member waits from its start to its first partitions"


def test_lost_partition_counts_from_the_lost_event_and_pauses_the_member_until_it_gets_work() -> None:
    summary = summarize(LOST)
    [interval] = unavailability(LOST)
    assert (interval.cause, interval.start_ms, interval.end_ms) == ("lost", 500, 900)
    assert summary.partition_unavailable_ms_total == 400
    assert {m.name: m.pause_ms for m in summary.members} == {"a": 450, "b": 0}
    consumer = summary.rebalances["consumer"]
    assert (consumer.lost, consumer.lost_partitions, consumer.revoked) == (1, 1, 0)


def test_killed_member_counts_from_its_last_event_and_is_named_by_instance_id() -> None:
    summary = summarize(KILLED)
    assert [(i.cause, i.from_member, i.start_ms, i.end_ms) for i in unavailability(KILLED)] == [
        ("vanished", "pod-a", 50, 10_050),
        ("vanished", "pod-a", 50, 10_050),
    ]
    assert summary.partition_unavailable_ms_total == 20_000
    assert {m.name: m.pause_ms for m in summary.members} == {"pod-a": 50, "b": 5050}


def test_processes_that_share_a_client_id_are_three_members_each_with_its_own_pause() -> None:
    summary = summarize(SHARED_CLIENT_ID)
    assert {m.name: m.pause_ms for m in summary.members} == {
        "rdkafka@host-a:11:aa": 100,
        "rdkafka@host-b:22:bb": 320,
        "rdkafka@host-c:33:cc": 340,
    }
    assert summary.rebalances["cooperative"].members == 3
    assert summary.partition_unavailable_ms_total == 220 + 240


def test_events_without_a_process_are_named_by_client_id_as_before() -> None:
    """Events written before `process` existed: one client id is one member (the old merge)."""
    old = [{k: v for k, v in e.items() if k != "process"} for e in SHARED_CLIENT_ID]
    assert [m.name for m in summarize(old).members] == ["rdkafka"]


def test_a_member_killed_without_a_revoke_leaves_its_partitions_unavailable_from_its_last_event() -> None:
    """Its partitions are never reported as 0 ms: they count from its last event (an upper bound)."""
    summary = summarize(KILLED_SHARED_CLIENT_ID)
    assert [
        (i.cause, i.partition, i.start_ms, i.end_ms) for i in unavailability(KILLED_SHARED_CLIENT_ID)
    ] == [
        ("vanished", 0, 50, 39_050),
        ("vanished", 1, 50, 39_050),
        ("vanished", 2, 50, 39_050),
    ]
    assert summary.partition_unavailable_ms_total == 3 * 39_000


def test_a_vanished_owners_gap_is_reported_apart_as_an_upper_bound() -> None:
    """No event says when a SIGKILLed member stopped: the report says how much of its total is counted
    from a vanished owner's last event, so a reader sees which figure is a bound and which a measurement."""
    summary = summarize(KILLED_SHARED_CLIENT_ID)
    assert (summary.vanished_intervals, summary.vanished_unavailable_ms) == (3, 3 * 39_000)
    assert (summarize(EAGER).vanished_intervals, summarize(EAGER).vanished_unavailable_ms) == (0, 0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_events_out_of_order_across_members_give_the_same_summary(seed: int) -> None:
    for stream in (EAGER, COOPERATIVE, LOST, KILLED, SHARED_CLIENT_ID, KILLED_SHARED_CLIENT_ID):
        assert summarize(shuffled(stream, seed)) == summarize(stream)


def test_callback_time_is_summed_exactly_per_member() -> None:
    by_name = {m.name: m for m in summarize(EAGER).members}
    assert (by_name["a"].callback_ms_total, by_name["a"].callback_ms_max) == (14.5, 12.25)
    assert by_name["a"].rebalances == 2


def test_without_phases_the_whole_stream_is_one_phase_all() -> None:
    summary = summarize(EAGER)
    [phase] = summary.phases
    assert (phase.name, phase.start_ms, phase.end_ms) == ("all", 0, 1451)
    assert (phase.partition_unavailable_ms, phase.pause_ms, phase.events) == (1300, 850, 6)
    assert (summary.first_ts_ms, summary.last_ts_ms, summary.events) == (0, 1450, 6)


def test_phases_clip_intervals_and_pauses_and_count_callbacks_where_they_fall() -> None:
    phases = [
        PhaseWindow(name="before", start_ms=0, end_ms=1200),
        PhaseWindow(name="after", start_ms=1200, end_ms=2000),
    ]
    before, after = summarize(EAGER, phases).phases
    # t-0/t-1 unowned 1100-1400, t-2/t-3 1100-1450: split at 1200
    assert (before.partition_unavailable_ms, after.partition_unavailable_ms) == (400, 900)
    # a 0-100 and 1100-1400, b 1000-1450
    assert (before.pause_ms, after.pause_ms) == (400, 450)
    assert (before.rebalances, after.rebalances) == (1, 2)
    assert (before.revoked_partitions, after.revoked_partitions) == (4, 0)
    assert (before.events, after.events) == (4, 2)


def test_an_empty_stream_has_no_phases_and_no_figures() -> None:
    summary = summarize([])
    assert summary == Summary(
        events=0,
        malformed=0,
        first_ts_ms=None,
        last_ts_ms=None,
        intervals=0,
        partition_unavailable_ms_total=0,
        pauses=0,
        pause_ms_total=0,
        partitions=[],
        members=[],
        rebalances={},
        phases=[],
    )

"""The KIP-848 anchor's figures (bench/_anchor_figures.py): when every partition is owned, the first new
one, and what the old partitions paid."""

from __future__ import annotations

from typing import Any

from bench._anchor_figures import (
    all_owned_at,
    detection_lines,
    first_assigned_at,
    old_partition_cost,
    partition_creation,
)
from bench.harness.broker_clock import BrokerLine, parse_ts
from bench.partition_add import BY_NAME, CASES, selected
from kafka_coop.analytics._intervals import Interval


def ev(client: str, kind: str, ts: int, owned: list[int], parts: list[int] | None = None) -> dict[str, Any]:
    return {
        "client_id": client,
        "kind": kind,
        "ts_ms": ts,
        "seq": ts,
        "owned": [["t", p] for p in owned],
        "partitions": [["t", p] for p in (parts if parts is not None else owned)],
    }


def test_all_owned_waits_for_every_partition_once_and_ignores_what_was_before() -> None:
    events = [
        ev("a", "assigned", 0, [0]),
        ev("b", "assigned", 0, [1]),
        ev("a", "assigned", 100, [0, 2], [2]),  # 3 of 4 owned
        ev("b", "assigned", 150, [1, 2], [2]),  # 2 twice: not yet
        ev("a", "revoked", 180, [0], [2]),
        ev("b", "assigned", 200, [1, 2, 3], [3]),  # all four, once each
    ]
    assert all_owned_at(events, "t", 4, since_ms=50) == 200
    assert all_owned_at(events, "t", 2, since_ms=50) == 100  # the old two were owned from the start
    assert all_owned_at(events, "t", 5, since_ms=50) is None


def test_first_new_partition_is_the_first_assignment_of_a_partition_past_the_old_ones() -> None:
    events = [ev("a", "assigned", 10, [0, 1]), ev("a", "assigned", 90, [0, 1, 5], [5])]
    assert first_assigned_at(events, "t", 2, since_ms=0) == 90
    assert first_assigned_at(events, "t", 6, since_ms=0) is None


def test_old_partition_cost_counts_only_old_partitions_inside_the_window() -> None:
    intervals = [
        Interval("g", "t", 0, 900, 1300, "a", "b", "revoked"),  # 100 ms in the window
        Interval("g", "t", 1, 1000, 1050, "a", "b", "revoked"),
        Interval("g", "t", 7, 1000, 2000, "", "b", "vanished"),  # a new partition: not counted
        Interval("g", "u", 0, 1000, 2000, "a", "b", "revoked"),  # another topic
    ]
    assert old_partition_cost(intervals, "t", 2, (1200, 5000)) == (100, 1)
    assert old_partition_cost(intervals, "t", 2, (0, 5000)) == (450, 2)


def test_the_coordinators_first_reaction_is_a_rebalance_or_an_epoch_bump_after_the_add() -> None:
    lines = [
        BrokerLine(5, "prepare", "g", 1, None, "before the add"),
        BrokerLine(50, "stabilized", "g", 2),
        BrokerLine(70, "prepare", "g", 2, None, "Leader m0 re-joining group during Stable"),
    ]
    assert detection_lines(lines, 10) == {
        "kind": "classic rebalance",
        "ts_ms": 70,
        "detail": "Leader m0 re-joining group during Stable",
    }
    assert detection_lines([BrokerLine(30, "epoch_bump", "k", 4)], 10)["kind"] == "group epoch bump"
    assert detection_lines(lines, 100) == {}


def test_the_headline_cases_run_on_client_defaults_and_the_tuned_ones_say_so() -> None:
    assert {c.protocol for c in CASES} == {"eager", "cooperative", "consumer"}
    assert BY_NAME["classic-eager"].refresh_ms is None
    assert BY_NAME["classic-eager-refresh10s"].label == "classic eager, metadata refresh 10 s"
    assert [c.name for c in selected("consumer,classic-eager")] == ["consumer", "classic-eager"]


def test_partition_creation_reads_the_last_added_partition_the_controller_recorded_and_the_broker_made() -> (
    None
):
    ctl = "[quorum-controller-1-event-handler] INFO org.apache.kafka.controller.ReplicationControlManager - "
    brk = (
        "[kafka-1-metadata-loader-event-handler] ERROR state.change.logger - [Broker id=1] Expected partition"
    )
    missing = "to exist, but it was missing. Creating..."
    log = [
        f"2026-11-24T03:28:00.000 {ctl}Replayed PartitionRecord for new partition t-1 with topic ID x",
        f"2026-11-24T03:28:07.771 {ctl}Replayed PartitionRecord for new partition t-2 with topic ID x",
        f"2026-11-24T03:28:08.304 {ctl}Replayed PartitionRecord for new partition t-5 with topic ID x",
        f"2026-11-24T03:28:09.000 {ctl}Replayed PartitionRecord for new partition t-other-9 with topic ID y",
        f"2026-11-24T03:28:15.986 {brk} t-2 with topic id x {missing}",
        f"2026-11-24T03:28:20.773 {brk} t-5 with topic id x {missing}",
    ]
    assert partition_creation(log, "t", 2) == {
        "partitions_recorded_ms": parse_ts("2026-11-24T03:28:08.304"),
        "partition_logs_created_ms": parse_ts("2026-11-24T03:28:20.773"),
    }


def test_the_in_memory_broker_case_is_an_extra_consumer_row_and_its_label_says_so() -> None:
    """The tmpfs row isolates the disk's share of log creation; no headline row may run on it."""
    in_memory = [c for c in CASES if c.broker == "tmpfs"]
    assert [(c.name, c.protocol) for c in in_memory] == [("consumer-tmpfs", "consumer")]
    assert in_memory[0].label == "consumer (KIP-848), client defaults, broker logs on tmpfs"
    assert BY_NAME["consumer"].broker == BY_NAME["classic-eager"].broker == "disk"


def test_all_cases_are_the_disk_broker_rows() -> None:
    assert [c.name for c in selected("all")] == [c.name for c in CASES if c.broker == "disk"]
    assert "consumer-tmpfs" not in [c.name for c in selected("all")]


def test_broker_cpu_reads_a_live_process_and_is_zero_for_none() -> None:
    """Read on this test's own process: some CPU used, and no thread named like Kafka's metadata one."""
    import os

    from bench.partition_add import broker_cpu

    own = broker_cpu(os.getpid())
    assert own["process"] > 0
    assert own["metadata_thread"] == 0
    assert broker_cpu(None) == {"process": 0.0, "metadata_thread": 0.0}

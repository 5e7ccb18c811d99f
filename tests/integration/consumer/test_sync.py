"""CoopConsumer on the real broker: one behaviour per test, for every protocol it supports."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopConsumer
from kafka_coop.errors import SettingsError
from kafka_coop.sandbox.testing import SteadyProducer
from tests.integration.consumer.members import (
    ThreadMember,
    committed_offsets,
    covers,
    produce_keyed,
    wait_for,
    wait_settled,
)

PARTITIONS = 6


def _revoked(member: ThreadMember) -> list[tuple[str, int]]:
    return [p for e in member.events if e.kind == "revoked" for p in e.partitions]


@pytest.mark.parametrize("rebalance", ["eager-range", "cooperative-sticky", "consumer"])
def test_leave_and_join_revoke_what_the_protocol_says_and_owned_matches_assignment(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
) -> None:
    topic = topic_factory(PARTITIONS)
    group = unique(f"lifecycle-{rebalance}")
    everything = {(topic, p) for p in range(PARTITIONS)}
    members = [ThreadMember(bootstrap, group, [topic], rebalance, f"m{i}") for i in range(3)]
    try:
        wait_for(lambda: covers(members, everything), what="3 members to own every partition")
        # Start each step from a settled, balanced group: every partition owned once is also true in
        # the transient states of the first joins (one member still empty), and a stayer that holds
        # no more than its balanced share there need not revoke anything to a later joiner.
        wait_settled(admin, group, members)
        leaver = members.pop()
        leaver.stop()
        wait_for(lambda: covers(members, everything), what="2 members to take over")
        wait_settled(admin, group, members)
        # One joiner at a time: two at once change a KIP-848 target while a stayer is still giving
        # partitions up, and it can then be left with none for a moment (CI, run W).
        for i in (3, 4):
            members.append(ThreadMember(bootstrap, group, [topic], rebalance, f"m{i}"))
            wait_for(
                lambda: covers(members, everything) and all(m.owned for m in members),
                what=f"{len(members)} members to share the partitions",
            )
            wait_settled(admin, group, members)  # any trailing callback has landed before judging
        scenario_end_ms = time.time_ns() // 1_000_000
    finally:
        for m in members:
            m.stop()
    stayers = members[:2]
    assert all(not m.mismatches for m in members), [m.mismatches for m in members]
    assert all("lost" not in m.kinds() for m in stayers)
    if rebalance == "eager-range":
        for m in stayers:
            revokes = [e for e in m.events if e.kind == "revoked"]
            assert len(revokes) >= 2, "a leave and a join each revoke"
            assert all(e.owned == () for e in revokes), "eager revokes everything every time"
    else:
        # Incremental: a stayer gives up only what moves and keeps working on the rest. (A revoked
        # partition may come back to the same member: under KIP-848 the target can change again
        # when the second joiner arrives, so "it must move elsewhere" is not a protocol promise.)
        for m in stayers:
            revokes = [e for e in m.events if e.kind == "revoked" and e.ts_ms <= scenario_end_ms]
            assert revokes, f"{m.name} gave partitions to the joiners"
            for e in revokes:
                assert e.owned, f"{m.name} was stripped of everything in one revoke: {e}"
                assert not set(e.partitions) & set(e.owned), e


@pytest.mark.parametrize("rebalance", ["cooperative-sticky", "consumer"])
def test_a_member_stalled_past_its_poll_limit_gets_lost_and_commits_nothing(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
) -> None:
    """Classic and KIP-848 alike: librdkafka enforces max.poll.interval.ms itself; the stalled member
    reports `lost` and commits nothing for what it lost, the broker keeps the last commit meanwhile, and
    the next owner resumes there."""
    topic = topic_factory(2)
    group = unique(f"lost-{rebalance}")
    produce_keyed(bootstrap, topic, partitions=2, per_partition=50)
    # KIP-848: the session is the broker's (session.timeout.ms is classic-only), the poll limit is ours.
    timing = {"session_timeout_ms": 6000} if rebalance != "consumer" else {}
    # Auto commit on (librdkafka's default): kafka-coop's interval commit runs inside poll, so a member
    # stuck between polls commits nothing meanwhile, and one that rejoins commits what it processes again.
    limit = {"max_poll_interval_ms": 6000}
    stalled = ThreadMember(bootstrap, group, [topic], rebalance, "stalls", **limit, **timing)
    taker: ThreadMember | None = None

    def reread(p: int) -> int | None:
        """The first offset of partition p read after the stall, by either member."""
        again = stalled.processed.get((topic, p), [])[50:] or (
            taker.processed.get((topic, p)) if taker else []
        )
        return again[0] if again else None

    try:
        wait_for(lambda: sum(len(v) for v in stalled.processed.values()) == 100, what="all 100 records")
        # Commit the first 20 of each partition; the other 30 stay marked done but uncommitted.
        stalled.call(
            lambda c: c.commit(offsets=[TopicPartition(topic, p, 20) for p in range(2)], asynchronous=False)
        )
        stalled.stalled.set()
        taker = ThreadMember(bootstrap, group, [topic], rebalance, "takes-over")
        time.sleep(9.0)  # past max.poll.interval.ms (6 s) with no poll: librdkafka's own timer fires
        assert committed_offsets(admin, group) == {(topic, 0): 20, (topic, 1): 20}
        stalled.stalled.clear()
        wait_for(lambda: "lost" in stalled.kinds(), timeout_s=30, what="the stalled member's lost event")

        # After the loss the stalled member rejoins; every record ends up processed and marked done by
        # whichever member owns its partition, and committed (auto commit, revoke or close).
        def all_committed() -> bool:
            time.sleep(0.5)  # one admin round trip per check is plenty
            return committed_offsets(admin, group) == {(topic, 0): 50, (topic, 1): 50}

        wait_for(all_committed, timeout_s=60, what="the broker to hold the end of both partitions")
        wait_settled(admin, group, [stalled, taker])
    finally:
        stalled.stop()
        if taker is not None:
            taker.stop()
    lost = [e for e in stalled.events if e.kind == "lost"]
    assert all(e.committed is None for e in lost)
    before_loss = [e for e in stalled.events[: stalled.kinds().index("lost")] if e.kind == "revoked"]
    if rebalance == "consumer":
        # KIP-848: librdkafka defers the leave until the lost partitions are unassigned, so the member is
        # still in the group when it polls again; the revoke queued by the taker's join is served first
        # and commits what was marked done (records processed before the stall), which the broker
        # accepts. Only the lost partitions commit nothing; the records are not read twice.
        assert all(e.committed is not None for e in before_loss)
        handed = {p for e in lost + before_loss for p in e.partitions}
        assert handed == {(topic, 0), (topic, 1)}, "each partition was either revoked first or lost"
    else:
        assert sorted(p for e in lost for p in e.partitions) == [(topic, 0), (topic, 1)]
        assert not before_loss, "an evicted classic member revokes nothing cleanly"
        assert [reread(p) for p in range(2)] == [20, 20], "the next owner resumes at the last commit"


def test_commit_on_revoke_hands_over_at_exactly_the_next_unprocessed_offset(
    bootstrap: str, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    topic = topic_factory(PARTITIONS)
    group = unique("handover")
    producer = SteadyProducer(bootstrap, topic, PARTITIONS, rate=300).start()
    first = ThreadMember(
        bootstrap, group, [topic], "cooperative-sticky", "first", auto_commit_interval_ms=3600000
    )
    second = None
    try:
        wait_for(lambda: sum(len(v) for v in first.processed.values()) >= 300, what="first to be mid-stream")
        second = ThreadMember(
            bootstrap, group, [topic], "cooperative-sticky", "second", auto_commit_interval_ms=3600000
        )
        wait_for(lambda: len(second.owned) == PARTITIONS // 2, what="half the partitions to move")
        wait_for(lambda: all(second.processed.get(p) for p in second.owned), what="second to consume each")
        moved = second.owned
    finally:
        producer.stop()
        first.stop()
        if second is not None:
            second.stop()
    [revoke] = [e for e in first.events if e.kind == "revoked" and e.ts_ms < second.events[-1].ts_ms][:1]
    assert sorted(revoke.partitions) == sorted(moved)
    committed = {(t, p): off for t, p, off in revoke.committed or ()}
    for part in revoke.partitions:
        resumed_at = second.processed[part][0]
        assert resumed_at == max(first.processed[part]) + 1, f"{part}: no gap, no repeat"
        assert committed[part] == resumed_at, "the revoke committed exactly the next unprocessed offset"


def test_static_member_restarted_within_session_timeout_keeps_its_partitions_silently(
    bootstrap: str, admin: ClusterAdmin, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    topic = topic_factory(PARTITIONS)
    group = unique("static")
    everything = {(topic, p) for p in range(PARTITIONS)}
    static = {"group_instance_id": None, "session_timeout_ms": 30000}
    members = [
        ThreadMember(
            bootstrap,
            group,
            [topic],
            "cooperative-sticky",
            f"s{i}",
            **{**static, "group_instance_id": f"{group}-s{i}"},
        )
        for i in range(3)
    ]
    try:
        wait_for(lambda: covers(members, everything), what="3 static members to own everything")
        wait_settled(admin, group, members)
        bystanders = members[:2]
        seen = [len(m.events) for m in bystanders]
        restarted = members.pop()
        before = restarted.owned
        restarted.stop()
        members.append(
            ThreadMember(
                bootstrap,
                group,
                [topic],
                "cooperative-sticky",
                "s2",
                **{**static, "group_instance_id": f"{group}-s2"},
            )
        )
        wait_for(lambda: members[-1].owned == before, what="the restarted member to get its partitions back")
        wait_settled(admin, group, members)
        assert [len(m.events) for m in bystanders] == seen, "the other members saw no rebalance at all"
    finally:
        for m in members:
            m.stop()


@pytest.mark.parametrize(("rebalance", "who"), [("cooperative-sticky", "OLD"), ("consumer", "NEW")])
def test_duplicate_instance_id_fails_with_the_protocols_fencing_rule(
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
    who: str,
) -> None:
    topic = topic_factory(2)
    group = unique("dup")
    holder = ThreadMember(bootstrap, group, [topic], rebalance, "holder", group_instance_id="pod-0")
    try:
        wait_for(lambda: len(holder.owned) == 2, what="the holder to join")
        conf = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.instance.id": "pod-0",
            **(
                {"group.protocol": "consumer"}
                if rebalance == "consumer"
                else {"partition.assignment.strategy": rebalance}
            ),
        }
        with pytest.raises(SettingsError) as failure:
            CoopConsumer(conf, duplicate_check="fail")
        assert who in str(failure.value)
        assert "pod-0" in str(failure.value)
    finally:
        holder.stop()


def test_duplicate_instance_id_with_warn_policy_and_no_sign_the_holder_runs_creates_the_consumer_silently(
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A holder that publishes no manifest looks like this member's closed predecessor (a static member
    stays listed until its session ends), so `warn` stays silent; the holder's own FENCED_INSTANCE_ID
    names the twin (the warning on a live holder: test_static_bounce_warning.py)."""
    topic = topic_factory(1)
    group = unique("dupwarn")
    holder = ThreadMember(
        bootstrap, group, [topic], "cooperative-sticky", "holder", group_instance_id="pod-1"
    )
    try:
        wait_for(lambda: len(holder.owned) == 1, what="the holder to join")
        with caplog.at_level(logging.WARNING, logger="kafka_coop"):
            second = CoopConsumer(
                {"bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": "pod-1"},
                duplicate_check="warn",
            )
        second.close()
        assert not any("already held" in r.getMessage() for r in caplog.records)
    finally:
        holder.stop()


def test_raw_consumer_and_coop_consumer_read_the_same_records(
    bootstrap: str, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    """Drop-in: the same conf dict gives the same records through either class."""
    topic = topic_factory(2)
    produce_keyed(bootstrap, topic, partitions=2, per_partition=25)
    seen: dict[str, list[bytes]] = {}
    for cls in (Consumer, CoopConsumer):
        consumer = cls(
            {"bootstrap.servers": bootstrap, "group.id": unique("dropin"), "auto.offset.reset": "earliest"}
        )
        consumer.subscribe([topic])
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(values) < 50 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                values.append(msg.value())
        consumer.close()
        seen[cls.__name__] = sorted(values)
    assert seen["Consumer"] == seen["CoopConsumer"]
    assert len(seen["Consumer"]) == 50

"""CoopAIOConsumer on the real broker: the offset contract under every rebalance protocol.

Each test reads the committed offsets back from the broker (not from our own events), checks the
events, and checks `owned` against the client's `assignment()` at every event (AioMember).
Members run with an interval no test reaches (`auto.commit.interval.ms=3600000`), so every committed
offset was committed by the contract (revoke, close), not by the interval.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopAIOConsumer
from kafka_coop.errors import ConsumerFailed, InstanceIdConflict
from kafka_coop.manifest import MANIFEST_TOPIC_CONFIG, parse_manifest
from tests.integration.consumer.aio_members import AioMember, ProcessingFailed
from tests.integration.consumer.members import (
    REBALANCE_CONF,
    committed_offsets,
    covers,
    produce_keyed,
    wait_for,
)
from tests.integration.topics import read_all

PROTOCOLS = ["eager-range", "cooperative-sticky", "consumer"]
MANUAL = {"auto_commit_interval_ms": "3600000"}


def _stripped(member: AioMember) -> int | None:
    """Index of the first `lost` event after which the member owns nothing, if there is one yet."""
    for i, e in enumerate(member.events):
        if e.kind == "lost" and e.owned == ():
            return i
    return None


@pytest.mark.parametrize("membership", ["dynamic", "static"])
@pytest.mark.parametrize("rebalance", PROTOCOLS)
def test_a_record_whose_processing_raised_is_not_committed_and_close_commits_what_was_marked_done(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
    membership: str,
) -> None:
    topic = topic_factory(2)
    group = unique(f"aio-raise-{rebalance}")
    produce_keyed(bootstrap, topic, partitions=2, per_partition=10)
    # A static member sends no LeaveGroup on close: the commit must not depend on leaving.
    static = {"group_instance_id": f"{group}-0"} if membership == "static" else {}
    member = AioMember(
        bootstrap, group, [topic], rebalance, "crashes", fail_on={(topic, 0, 4)}, **MANUAL, **static
    )
    wait_for(lambda: not member.running, what="the service to exit on its processing error")
    assert isinstance(member.ended, ProcessingFailed), member.ended
    # The service marked 0..3 done on partition 0 and failed on 4; partition 1 may be anywhere.
    assert member.processed[(topic, 0)] == [0, 1, 2, 3]
    committed = committed_offsets(admin, group)
    assert committed[(topic, 0)] == 4, "the failed record is redelivered to the next owner"
    # Partition 1: everything processed is committed, nothing after it. With none processed, the batch
    # that raised may still have handed out its record 0 (unfinished): then 0 is committed, or nothing.
    done_1 = member.processed.get((topic, 1), [])
    assert committed.get((topic, 1)) in ((max(done_1) + 1,) if done_1 else (None, 0)), committed
    assert member.kinds()[0] == "started" and member.kinds()[-1] == "closed"
    assert "lost" not in member.kinds()
    assert member.events[-1].owned == ()
    assert not member.mismatches, member.mismatches


@pytest.mark.parametrize("rebalance", PROTOCOLS)
def test_revoke_commits_what_was_marked_done_so_the_next_owner_resumes_exactly_after_it(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
) -> None:
    partitions = 4
    topic = topic_factory(partitions)
    group = unique(f"aio-revoke-{rebalance}")
    everything = {(topic, p) for p in range(partitions)}
    produce_keyed(bootstrap, topic, partitions=partitions, per_partition=10)
    first = AioMember(bootstrap, group, [topic], rebalance, "first", **MANUAL)
    second = None
    try:
        wait_for(lambda: first.count() == 40, what="first to process all 40 records")
        assert committed_offsets(admin, group) == {}, "nothing is committed before a revoke or close"
        second = AioMember(bootstrap, group, [topic], rebalance, "second", **MANUAL)
        wait_for(lambda: covers([first, second], everything) and bool(second.owned), what="a split")
        moved = set(second.owned)
        committed = committed_offsets(admin, group)
        assert all(committed[p] == 10 for p in moved), committed
        produce_keyed(
            bootstrap, topic, partitions=partitions, per_partition=1
        )  # offset 10 everywhere: each owner takes its own
        wait_for(lambda: first.count() + second.count() == 44, what="the new records to be processed")
    finally:
        first.stop()
        if second is not None:
            second.stop()
    assert second.ended is None and first.ended is None, (first.ended, second.ended)
    assert all(second.processed[p] == [10] for p in moved), "no record of a moved partition was repeated"
    revoked = [e for e in first.events if e.kind == "revoked" and set(e.partitions) & moved]
    assert revoked, first.kinds()
    reported = {(t, p): off for e in revoked for t, p, off in e.committed or ()}
    assert {p: reported[p] for p in moved} == {p: 10 for p in moved}, "the event names what it committed"
    assert committed_offsets(admin, group) == {p: 11 for p in everything}, "close committed the rest"
    assert not first.mismatches and not second.mismatches, first.mismatches + second.mismatches


@pytest.mark.parametrize("rebalance", PROTOCOLS)
def test_a_member_that_stalled_past_max_poll_interval_loses_its_partitions_and_commits_nothing(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
) -> None:
    topic = topic_factory(2)
    group = unique(f"aio-lost-{rebalance}")
    produce_keyed(bootstrap, topic, partitions=2, per_partition=20)
    timeouts = {"max_poll_interval_ms": 6000}
    if rebalance != "consumer":  # under KIP-848 the session timeout is the broker's
        timeouts["session_timeout_ms"] = 6000
    stalled = AioMember(bootstrap, group, [topic], rebalance, "stalls", **MANUAL, **timeouts)
    taker = None
    try:
        wait_for(lambda: stalled.count() == 40, what="all 40 records to be processed and marked done")
        # The service commits 5 per partition itself; the other 15 stay marked done, uncommitted.
        first_five = [TopicPartition(topic, p, 5) for p in range(2)]
        stalled.call(lambda c: c.commit(offsets=first_five, asynchronous=False))
        stalled.stalled.set()
        taker = AioMember(bootstrap, group, [topic], rebalance, "takes-over", **MANUAL)
        wait_for(lambda: len(taker.owned) == 2, timeout_s=60, what="the other member to take over")
        stalled.stalled.clear()
        wait_for(
            lambda: _stripped(stalled) is not None, timeout_s=30, what="the stalled member's lost events"
        )
        wait_for(lambda: taker.count() >= 30, what="the taker to re-process from the last commit")
    finally:
        stalled.stop()
        if taker is not None:
            taker.stop()
    # Under cooperative-sticky the loss can come in two steps: the revoke that was pending when the
    # member id was reset is reported lost first, then the rest.
    upto = _stripped(stalled)
    assert upto is not None
    lost = [e for e in stalled.events[: upto + 1] if e.kind == "lost"]
    assert all(e.committed is None for e in lost), lost
    assert sorted(p for e in lost for p in e.partitions) == [(topic, 0), (topic, 1)]
    revoked = [e for e in stalled.events[:upto] if e.kind == "revoked" and e.partitions]
    assert not revoked, "no revoke (and so no commit) of the stalled member's partitions came first"
    for p in range(2):
        assert taker.processed[(topic, p)][0] == 5, "the taker resumes at the last commit: nothing was lost"
    assert not isinstance(stalled.ended, ConsumerFailed), stalled.ended
    assert not stalled.mismatches and not taker.mismatches, stalled.mismatches + taker.mismatches


@pytest.mark.parametrize("rebalance", ["cooperative-sticky", "consumer"])
def test_a_static_member_losing_its_instance_id_to_a_twin_reports_lost_and_raises_the_conflict(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
) -> None:
    """Classic fences the OLD holder of a group.instance.id, KIP-848 refuses the NEW one: either way
    the loser is the CoopAIOConsumer here, and it must say so instead of silently stopping."""
    topic = topic_factory(2)
    group = unique(f"aio-twin-{rebalance}")
    everything = [(topic, 0), (topic, 1)]
    twin_conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.instance.id": "svc-0",
        **REBALANCE_CONF[rebalance],
    }
    twin = Consumer(twin_conf)

    def twin_owns_both() -> bool:
        twin.poll(0.2)  # a plain consumer joins and takes its assignment only while it is polled
        return len(twin.assignment()) == 2

    member: AioMember | None = None
    try:
        if rebalance == "consumer":  # the twin holds the id first; the asyncio member is refused
            twin.subscribe([topic])
            wait_for(twin_owns_both, what="the twin to own both partitions")
            member = AioMember(bootstrap, group, [topic], rebalance, "loser", group_instance_id="svc-0")
            wait_for(lambda: twin_owns_both() and not member.running, timeout_s=60, what="the refusal")
        else:  # the asyncio member holds it; the twin's join fences it
            member = AioMember(bootstrap, group, [topic], rebalance, "loser", group_instance_id="svc-0")
            wait_for(lambda: sorted(member.owned) == everything, what="the member to own both partitions")
            twin.subscribe([topic])
            wait_for(lambda: twin_owns_both() and not member.running, timeout_s=60, what="the fencing")
    finally:
        if member is not None:
            member.stop()
        twin.close()
    assert isinstance(member.ended, InstanceIdConflict), member.ended
    assert "svc-0" in str(member.ended)
    lost = [e for e in member.events if e.kind == "lost"]
    assert len(lost) == 1 and lost[0].owned == () and lost[0].committed is None
    if rebalance != "consumer":
        assert sorted(lost[0].partitions) == everything
    assert member.events[-1].kind == "closed" and member.events[-1].owned == ()
    assert committed_offsets(admin, group).get((topic, 0)) is None, "the fenced member committed nothing"


def test_an_asyncio_member_publishes_its_manifest_on_join_and_a_tombstone_on_close(
    bootstrap: str, admin: ClusterAdmin, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    topic = topic_factory(1)
    manifests = unique("aio-manifests")
    admin.ensure_topic(manifests, 1, config=MANIFEST_TOPIC_CONFIG)
    group = unique("aio-declared")
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.instance.id": "pod-3",
        "group.protocol": "consumer",
    }

    async def serve() -> str:
        async with CoopAIOConsumer(conf, manifests=manifests) as consumer:
            await consumer.subscribe([topic])
            while not consumer.owned:
                await consumer.consume(num_messages=10, timeout=0.2)
            return str(await consumer.memberid())

    member_id = asyncio.run(asyncio.wait_for(serve(), 60))
    records = read_all(bootstrap, manifests, 2)
    key, value = records[0]
    manifest = parse_manifest(value)
    assert key == f"{group}/pod-3".encode() and manifest is not None
    assert (manifest.member_id, manifest.group_protocol, manifest.rebalance_protocol) == (
        member_id,
        "consumer",
        "consumer",
    )
    assert member_id and "librdkafka" in manifest.libraries
    assert records[-1] == (key, None), "close publishes a tombstone"

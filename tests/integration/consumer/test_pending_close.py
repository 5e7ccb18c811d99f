"""Issue 13, suspects 4 and 7 on the real broker, for both drivers.

Suspect 4: `close()` while an assignment is pending. librdkafka turns an assign it serves while the
consumer closes into an unassign (rd_kafka_cgrp_handle_assign_op), so the member must not report the
partitions as owned, and its `closed` event must own nothing. The pending assignment is made real, not
simulated: the member under test stops polling, the group gives it partitions (another member left), the
broker reports the new assignment, and only then is `close()` called, which serves the queued assign.

Suspect 7: a `BaseException` (KeyboardInterrupt, SystemExit; asyncio.CancelledError under asyncio) raised
by `on_revoked` during a real rebalance: the commit of what was marked done, the unassign and the `owned`
update still happen, then the interrupt ends the service, whose `with` block closes the consumer.

Each test reads the committed offsets back from the broker, checks the events, and checks `owned` against
the client's `assignment()` at every event emitted outside `close()` (the helpers' `mismatches`; once the
group is terminated librdkafka no longer answers `assignment()`).

The matrix is protocol (eager-range, cooperative-sticky, consumer) x membership (dynamic, static) x
driver (sync, asyncio): 12 cases per test, ~4 minutes on 2 cores. CI runs 5 of them per test (~75 s for
both tests on an idle 2-core machine), chosen so that each test runs every protocol and every
membership x driver combination; `KAFKA_COOP_FULL_MATRIX=1` runs all 24. The KIP-848 cases cost most:
the broker's 5 s minimum heartbeat interval.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer

from kafka_coop.admin import ClusterAdmin
from tests.integration.consumer.aio_members import AioMember
from tests.integration.consumer.members import (
    REBALANCE_CONF,
    ThreadMember,
    committed_offsets,
    produce_keyed,
    wait_for,
)

REBALANCES = ["eager-range", "cooperative-sticky", "consumer"]
MEMBERSHIPS = ["dynamic", "static"]
DRIVERS = ["sync", "asyncio"]
PARTITIONS = 4
PER_PARTITION = 10
MARKED_BELOW = 6  # the member under test marks offsets 0-5 done, processes 6-9 without marking them
MANUAL = {"auto_commit_interval_ms": "3600000"}  # every committed offset comes from the contract, not a timer
# The broker has sent the member its assignment when it reports it; the member's client queues the assign
# as it reads that response. No client call shows the queued assign without serving it, so the close
# waits this long past the broker's report (the scenario check below fails loudly if it was not enough).
QUEUED_MARGIN_S = 1.0

Member = ThreadMember | AioMember
FULL = [(r, m, d) for r in REBALANCES for m in MEMBERSHIPS for d in DRIVERS]
CI_PENDING = [
    ("eager-range", "static", "sync"),
    ("eager-range", "dynamic", "asyncio"),
    ("cooperative-sticky", "dynamic", "sync"),
    ("cooperative-sticky", "static", "asyncio"),
    ("consumer", "dynamic", "asyncio"),
]
CI_INTERRUPT = [
    ("eager-range", "dynamic", "asyncio"),  # the case whose close() hung before 4b619b8
    ("cooperative-sticky", "dynamic", "sync"),  # KeyboardInterrupt
    ("cooperative-sticky", "static", "asyncio"),
    ("consumer", "static", "sync"),  # SystemExit
    ("consumer", "dynamic", "asyncio"),
]
FULL_MATRIX = os.environ.get("KAFKA_COOP_FULL_MATRIX") == "1"


def start(driver: str, *args: Any, **kwargs: Any) -> Member:
    return ThreadMember(*args, **kwargs) if driver == "sync" else AioMember(*args, **kwargs)


def broker_assignment(admin: ClusterAdmin, group: str, client_id: str) -> set[tuple[str, int]] | None:
    """What the broker says `client_id` is assigned, once the group is Stable (else None)."""
    live = admin.describe_group(group)
    if live.state != "stable":
        return None
    for m in live.members:
        if m.client_id == client_id:
            return set(m.assignment)
    return None


def marked_below(msg: Any) -> bool:
    return bool(msg.offset() < MARKED_BELOW)


# --- suspect 4: close while an assignment is pending -----------------------------------------------
@pytest.mark.parametrize(("rebalance", "membership", "driver"), FULL if FULL_MATRIX else CI_PENDING)
def test_a_close_while_an_assignment_is_pending_owns_nothing_it_was_not_given_and_commits_what_was_marked(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
    membership: str,
    driver: str,
) -> None:
    """Cooperative and KIP-848 hand a member the partitions of one that left without the app polling, so
    the member under test stops polling first. Eager first revokes everything and needs the app to serve
    that revoke before it rejoins; the new assignment can only be held back by a third member that has not
    rejoined yet (a plain consumer this test polls), so the member under test serves its revoke, stops
    polling, and only then is the third member let through."""
    eager = rebalance == "eager-range"
    topic = topic_factory(PARTITIONS)
    group = unique(f"pending-{rebalance}-{membership}-{driver}")
    everything = {(topic, p) for p in range(PARTITIONS)}
    static = {"group_instance_id": f"{group}-a"} if membership == "static" else {}
    member = start(driver, bootstrap, group, [topic], rebalance, "a", mark=marked_below, **MANUAL, **static)
    leaver: ThreadMember | None = None
    blocker: Consumer | None = None
    blocker_assigns: list[int] = []
    try:
        leaver = ThreadMember(bootstrap, group, [topic], rebalance, "leaver", **MANUAL)
        if eager:
            blocker = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": group,
                    "client.id": "blocker",
                    "enable.auto.commit": "false",
                    **REBALANCE_CONF[rebalance],
                }
            )
            blocker.subscribe([topic], on_assign=lambda _c, ps: blocker_assigns.append(len(ps)))
        members = 3 if eager else 2

        def split() -> bool:
            if blocker is not None:
                blocker.poll(0.1)  # a plain consumer takes its assignment only while it is polled
            owners = [set(member.owned), set(leaver.owned)]
            if blocker is not None:
                owners.append({(tp.topic, tp.partition) for tp in blocker.assignment()})
            live = admin.describe_group(group)
            return (
                live.state == "stable"
                and len(live.members) == members
                and all(owners)
                and sum(map(len, owners)) == PARTITIONS
                and set().union(*owners) == everything
            )

        wait_for(split, timeout_s=90, what="the group to split the partitions")
        # Records only now, so each partition is read by its owner in this split and no other.
        mine, theirs = set(member.owned), set(leaver.owned)
        produce_keyed(bootstrap, topic, partitions=PARTITIONS, per_partition=PER_PARTITION)
        wait_for(
            lambda: (
                all(len(member.processed.get(p, [])) == PER_PARTITION for p in mine)
                and all(len(leaver.processed.get(p, [])) == PER_PARTITION for p in theirs)
            ),
            what="both members to process their partitions",
        )
        if eager:
            revokes = member.kinds().count("revoked")
            assigns = len(blocker_assigns)  # setup may have taken more than one rebalance
            leaver.stop()  # it leaves: everyone must revoke and rejoin
            wait_for(lambda: member.kinds().count("revoked") > revokes, what="the eager revoke")
            member.stalled.set()
            wait_for(member.idle.is_set, what="the member to stop polling")
            assert member.kinds()[-1] == "revoked", "no assignment before the blocker has rejoined"
            wait_for(
                lambda: blocker is not None and blocker.poll(0.1) is None and len(blocker_assigns) > assigns,
                what="the blocker to rejoin and be assigned",
            )
            expected: set[tuple[str, int]] | None = None  # range decides; anything non-empty
        else:
            member.stalled.set()
            wait_for(member.idle.is_set, what="the member to stop polling")
            leaver.stop()  # it leaves; its partitions go to the member under test
            expected = everything

        def reassigned() -> bool:
            now = broker_assignment(admin, group, "a")
            return bool(now) and (expected is None or now == expected)

        wait_for(reassigned, timeout_s=90, what="the broker to give the stalled member its new assignment")
        pending = broker_assignment(admin, group, "a")
        time.sleep(QUEUED_MARGIN_S)
        member.call(lambda c: c.close(), timeout_s=60)
        assert member.owned == ()
    finally:
        member.stop()
        if leaver is not None:
            leaver.stop()
        if blocker is not None:
            blocker.close()
    broker = committed_offsets(admin, group)
    closing = [e for e in member.events if e.kind == "assigned" and "closing" in (e.error or "")]
    assert closing, f"scenario not reached: no assignment was pending at close; events {member.kinds()}"
    assert closing[-1].partitions == () and closing[-1].owned == (), closing[-1]
    assert pending, "the broker had assigned partitions to the member"
    given = {p for e in member.events if e.kind == "assigned" for p in e.partitions}
    released = {p for e in member.events if e.kind in ("revoked", "lost") for p in e.partitions}
    story = [(e.kind, e.partitions, e.owned, e.error) for e in member.events]
    assert released <= given, f"released {released - given}, which no assigned event gave it: {story}"
    assert member.events[-1].kind == "closed" and member.events[-1].owned == ()
    assert "lost" not in member.kinds()
    # What the member marked done (0-5) is committed, by its revoke (eager) or its close; the leaver's
    # partitions keep the leaver's own commit: nothing of the pending assignment was committed.
    assert {p: broker.get(p) for p in mine} == {p: MARKED_BELOW for p in mine}, broker
    assert {p: broker.get(p) for p in theirs} == {p: PER_PARTITION for p in theirs}, broker
    assert not member.mismatches and not leaver.mismatches, member.mismatches + leaver.mismatches


# --- suspect 7: a BaseException from on_revoked ------------------------------------------------------
def interrupt_for(driver: str, membership: str) -> type[BaseException]:
    if driver == "asyncio":
        return asyncio.CancelledError
    return KeyboardInterrupt if membership == "dynamic" else SystemExit


@pytest.mark.parametrize(("rebalance", "membership", "driver"), FULL if FULL_MATRIX else CI_INTERRUPT)
def test_an_interrupt_from_on_revoked_still_commits_what_was_marked_unassigns_and_updates_owned(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
    membership: str,
    driver: str,
) -> None:
    """The sync driver gets KeyboardInterrupt (dynamic) or SystemExit (static) from a plain hook, the
    asyncio driver asyncio.CancelledError from an `async def` hook: what a Ctrl-C, a `sys.exit` in a
    signal handler, or a cancelled task does in the middle of a rebalance."""
    interrupt = interrupt_for(driver, membership)
    topic = topic_factory(PARTITIONS)
    group = unique(f"interrupt-{rebalance}-{membership}-{driver}")
    everything = {(topic, p) for p in range(PARTITIONS)}
    produce_keyed(bootstrap, topic, partitions=PARTITIONS, per_partition=PER_PARTITION)
    interrupted: list[list[tuple[str, int]]] = []

    def on_revoked(partitions: list[tuple[str, int]]) -> None:
        if partitions and not interrupted:
            interrupted.append(sorted(partitions))
            raise interrupt()

    async def on_revoked_async(partitions: list[tuple[str, int]]) -> None:
        await asyncio.sleep(0)
        on_revoked(partitions)

    hooks = {"on_revoked": on_revoked if driver == "sync" else on_revoked_async}
    static = {"group_instance_id": f"{group}-a"} if membership == "static" else {}
    member = start(
        driver, bootstrap, group, [topic], rebalance, "a", mark=marked_below, hooks=hooks, **MANUAL, **static
    )
    joiner: ThreadMember | None = None
    try:
        wait_for(
            lambda: sum(len(v) for v in member.processed.values()) == PARTITIONS * PER_PARTITION,
            what="the member to process every record",
        )
        # The joiner marks nothing done, so every offset the broker holds was committed by the member.
        joiner = ThreadMember(bootstrap, group, [topic], rebalance, "joiner", mark=lambda _m: False, **MANUAL)
        wait_for(lambda: not member.running, timeout_s=90, what="the interrupt to end the member's loop")
        if membership == "dynamic":  # it left on close: the joiner takes everything, from the commits
            wait_for(
                lambda: all(joiner.processed.get(p) for p in everything),
                timeout_s=90,
                what="the joiner to consume every partition",
            )
        # A static member sends no leave: what it kept waits for its session, so the joiner is not awaited.
        broker = committed_offsets(admin, group)
    finally:
        member.stop()
        if joiner is not None:
            joiner.stop()
    ended = member.ended
    if interrupt is asyncio.CancelledError:  # AIOConsumer's worker may hand it on as the futures kind
        assert isinstance(ended, asyncio.CancelledError | concurrent.futures.CancelledError), ended
    else:
        assert isinstance(ended, interrupt), ended
    assert interrupted, "on_revoked ran"
    revoke = next(e for e in member.events if e.kind == "revoked" and e.partitions)
    assert sorted(revoke.partitions) == interrupted[0]
    assert "interrupted" in (revoke.error or ""), revoke.error
    assert revoke.committed == tuple((t, p, MARKED_BELOW) for t, p in interrupted[0]), revoke.committed
    assert not set(revoke.owned) & set(revoke.partitions), "owned was updated despite the interrupt"
    assert not member.mismatches, member.mismatches  # owned == assignment() at that event: unassigned
    assert member.events[-1].kind == "closed" and member.events[-1].owned == ()
    # The revoked partitions by the revoke's commit, the rest by the close's: exactly what was marked.
    assert broker == {p: MARKED_BELOW for p in everything}, broker
    if membership == "dynamic":
        assert joiner is not None
        assert {p: joiner.processed[p][0] for p in everything} == {p: MARKED_BELOW for p in everything}

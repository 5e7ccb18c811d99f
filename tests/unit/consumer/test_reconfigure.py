"""Live reconfiguration on the test double: what a member does with each control record.

The real broker runs the same rules in tests/integration/control/; here each rule is one test, with the
client rebuilds, commits and events read from kafka_coop.testing's FakeGroup.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable
from typing import Any

import pytest
from confluent_kafka import KafkaError
from confluent_kafka import TopicPartition as ClientPartition

from kafka_coop.consumer import CoopAIOConsumer, CoopConsumer
from kafka_coop.control import ControlOptions, ControlRecord
from kafka_coop.events import now_ms
from kafka_coop.sinks import MemorySink
from kafka_coop.testing import FakeConsumer, FakeControl, FakeGroup
from tests.unit.consumer.helpers import MARKS, T, conf_for, kinds, parts

COOPERATIVE_STICKY = {"partition.assignment.strategy": "cooperative-sticky"}


def record(step: int, kind: str = "reconfigure", **changes: Any) -> ControlRecord:
    fields: dict[str, Any] = {
        "plan_id": "plan-1",
        "group": "g",
        "step": step,
        "phase": "1",
        "kind": kind,
        "settings": {"group.protocol": "consumer"},
        "issued_at_ms": now_ms(),
    }
    fields.update(changes)
    return ControlRecord.model_validate(fields)


class Member:
    """A subscribed member with control on, owning partitions 0 and 1, with records 0..2 on each."""

    def __init__(self, *, marks: bool = False, options: ControlOptions | None = None, **conf: Any) -> None:
        self.group = FakeGroup()
        self.sink = MemorySink()
        self.control = FakeControl(options or ControlOptions(rejoin_s=1.0, cutover_wait_s=1.0, drain_s=0.2))
        settings = conf_for("cooperative", instance_id="svc-0", **(MARKS if marks else {}), **conf)
        self.consumer = CoopConsumer(
            settings, events=self.sink, client=self.group.client, control=self.control
        )
        self.consumer.subscribe([T])
        for p in (0, 1):
            self.group.produce(T, p, b"a", b"b", b"c")
        self.group.assign(parts(0, 1))
        self.first = self.consumer.poll(0)  # the assignment is served, record 0 of one partition handed out

    @property
    def client(self) -> FakeConsumer:
        assert self.group.consumer is not None
        return self.group.consumer

    def poll_records(self, count: int) -> list[Any]:
        got = []
        deadline = time.monotonic() + 5
        while len(got) < count and time.monotonic() < deadline:
            msg = self.consumer.poll(0)
            if msg is not None and msg.error() is None:
                got.append(msg)
        return got


def test_a_reconfigure_record_rebuilds_the_client_on_the_new_settings_with_the_same_instance_id() -> None:
    m = Member()
    m.poll_records(2)
    m.control.send(record(1))
    m.consumer.poll(0)
    assert len(m.group.clients) == 2
    new = m.group.clients[1].conf
    assert (new["group.protocol"], new["group.instance.id"]) == ("consumer", "svc-0")
    assert "partition.assignment.strategy" not in new, (
        "librdkafka refuses the classic strategy under consumer"
    )
    assert m.consumer.protocol == "consumer"
    outcome = m.consumer.last_control
    assert outcome is not None and (outcome.outcome, outcome.step) == ("applied", 1)
    assert outcome.seconds is not None and outcome.seconds >= 0


def test_the_batch_the_application_polled_past_is_committed_before_the_rebuild() -> None:
    m = Member()
    records = m.poll_records(2)
    m.control.send(record(1))
    m.consumer.poll(0)
    done = {(r.topic(), r.partition()): r.offset() + 1 for r in records}
    assert {k: v for k, v in m.group.committed().items() if k in done} == done


def test_explicit_marks_commit_only_what_was_marked_once_the_drain_bound_passes() -> None:
    m = Member(marks=True)
    done, in_flight = m.first, m.poll_records(1)[0]
    assert (done.partition(), done.offset(), in_flight.partition(), in_flight.offset()) == (0, 0, 1, 0)
    m.consumer.mark_done(done)
    began = time.monotonic()
    m.control.send(record(1))
    m.consumer.poll(0)
    assert time.monotonic() - began >= 0.2, "it waited drain_s for the record in flight"
    assert m.group.committed() == {(T, 0): 1}, "partition 1's record 0 was never marked: not committed"


def test_a_record_naming_a_key_that_may_not_change_is_refused_and_the_client_kept() -> None:
    m = Member()
    m.control.send(record(1, settings={"group.protocol": "consumer", "bootstrap.servers": "evil:9092"}))
    m.consumer.poll(0)
    assert len(m.group.clients) == 1
    outcome = m.consumer.last_control
    assert outcome is not None and outcome.outcome == "refused"
    assert outcome.reason is not None and "bootstrap.servers" in outcome.reason
    m.consumer.poll(0)
    assert "warning" in kinds(m.sink), "the refusal is reported as a warning event too"


@pytest.mark.parametrize("again", ["replayed", "stale"])
def test_a_replayed_or_stale_record_changes_nothing(again: str) -> None:
    m = Member()
    m.control.send(record(2))
    m.consumer.poll(0)
    assert len(m.group.clients) == 2
    m.control.send(record(2 if again == "replayed" else 1, settings=COOPERATIVE_STICKY))
    m.consumer.poll(0)
    assert len(m.group.clients) == 2
    outcome = m.consumer.last_control
    assert outcome is not None and outcome.step == 2


def test_a_record_for_another_member_changes_nothing() -> None:
    m = Member()
    m.control.send(record(1, members=["svc-1"]))
    m.consumer.poll(0)
    assert (len(m.group.clients), m.consumer.last_control) == (1, None)


def test_a_record_issued_before_the_member_started_changes_nothing() -> None:
    m = Member()
    m.control.send(record(1, issued_at_ms=now_ms() - 3_600_000))
    m.consumer.poll(0)
    assert (len(m.group.clients), m.consumer.last_control) == (1, None)


def test_new_settings_the_settings_model_refuses_are_refused_before_anything_changes() -> None:
    m = Member()
    m.control.send(record(1, settings={"group.protocol": "consumer", "session.timeout.ms": "10000"}))
    m.consumer.poll(0)
    assert len(m.group.clients) == 1
    outcome = m.consumer.last_control
    assert (
        outcome is not None
        and outcome.outcome == "refused"
        and "session.timeout.ms" in (outcome.reason or "")
    )


def test_a_rejoin_the_broker_refuses_goes_back_to_the_old_settings_and_is_refused() -> None:
    m = Member()
    m.poll_records(1)
    # KIP-848 fences a new static member while the old one's session lasts (fatal in librdkafka); a
    # refused conversion (GROUP_ID_NOT_FOUND) goes the same way, after asking the cluster why
    m.group.refuse_rejoin(KafkaError.UNRELEASED_INSTANCE_ID)
    m.control.send(record(1))
    m.consumer.poll(0)
    assert len(m.group.clients) == 3, "the new client, then one on the old settings"
    assert m.group.clients[2].conf["partition.assignment.strategy"] == "cooperative-sticky"
    assert m.consumer.protocol == "cooperative"
    outcome = m.consumer.last_control
    assert outcome is not None and outcome.outcome == "refused"
    assert "back on the old ones" in (outcome.reason or "")


def test_a_cutover_close_serves_no_records_until_its_rejoin_then_rejoins_on_the_new_settings() -> None:
    m = Member()
    m.poll_records(1)
    m.control.send(record(4, "cutover-close", settings={}))
    assert m.consumer.poll(0) is None
    outcome = m.consumer.last_control
    assert outcome is not None and outcome.outcome == "closed-for-cutover"
    assert m.group.clients[0].closed
    assert m.consumer.poll(0.05) is None and m.consumer.consume(10, 0.05) == []
    m.control.send(record(5, "cutover-rejoin", settings=COOPERATIVE_STICKY))
    m.consumer.poll(0)
    assert len(m.group.clients) == 2
    outcome = m.consumer.last_control
    assert outcome is not None and (outcome.outcome, outcome.step) == ("applied", 5)
    assert m.poll_records(1), "records flow again"


def test_a_rejoin_of_another_step_does_not_end_the_cutover() -> None:
    m = Member()
    m.control.send(record(4, "cutover-close", settings={}))
    m.consumer.poll(0)
    m.control.send(record(7, "cutover-rejoin", settings=COOPERATIVE_STICKY))
    m.consumer.poll(0)
    assert len(m.group.clients) == 1
    outcome = m.consumer.last_control
    assert outcome is not None and outcome.outcome == "closed-for-cutover"


def test_a_cutover_whose_rejoin_never_comes_rejoins_on_the_old_settings_after_the_bound() -> None:
    m = Member(options=ControlOptions(cutover_wait_s=0.2, rejoin_s=1.0))
    m.control.send(record(4, "cutover-close", settings={}))
    began = time.monotonic()
    while m.consumer.last_control is None or m.consumer.last_control.outcome == "closed-for-cutover":
        assert m.consumer.poll(0.05) is None
        assert time.monotonic() - began < 5
    assert time.monotonic() - began >= 0.2
    outcome = m.consumer.last_control
    assert outcome.outcome == "refused" and "no cutover-rejoin" in (outcome.reason or "")
    assert len(m.group.clients) == 2
    assert m.group.clients[1].conf["partition.assignment.strategy"] == "cooperative-sticky"


def test_a_rebuilt_member_goes_on_as_one_process_with_rising_seq_and_a_reconfigured_event() -> None:
    m = Member()
    m.poll_records(1)
    m.control.send(record(1))
    m.consumer.poll(0)
    events = m.sink.events
    assert len({e.process for e in events}) == 1
    assert [e.seq for e in events] == sorted(e.seq for e in events) == list(range(len(events)))
    reconfigured = [e for e in events if e.kind == "reconfigured"]
    assert len(reconfigured) == 1 and reconfigured[0].protocol == "consumer" and reconfigured[0].error is None
    assert kinds(m.sink).count("started") == 1


def test_closing_while_closed_for_a_cutover_ends_the_member_cleanly() -> None:
    m = Member()
    m.control.send(record(4, "cutover-close", settings={}))
    m.consumer.poll(0)
    m.consumer.close()
    assert kinds(m.sink)[-1] == "closed" and m.control.closed


def test_a_service_that_holds_on_to_poll_still_reaches_the_rebuilt_client() -> None:
    m = Member()
    poll = m.consumer.poll  # a local for speed, as cli/consume.py and many services do
    m.control.send(record(1))
    poll(0)
    assert len(m.group.clients) == 2
    m.group.produce(T, 0, b"d")
    got = [poll(0) for _ in range(8)]
    assert any(msg is not None and msg.error() is None for msg in got), "records come from the new client"
    assert m.group.clients[0].closed


def test_an_asyncio_member_rebuilds_its_client_inside_its_next_consume() -> None:
    async def walk() -> tuple[FakeGroup, Any, list[str]]:
        group, sink, control = FakeGroup(), MemorySink(), FakeControl(ControlOptions(rejoin_s=1.0))
        settings = conf_for("cooperative", instance_id="svc-0")
        async with CoopAIOConsumer(settings, events=sink, client=group.client, control=control) as consumer:
            await consumer.subscribe([T])
            group.produce(T, 0, b"a", b"b")
            group.assign(parts(0))
            await consumer.consume(1, 0)
            control.send(record(1))
            await consumer.consume(1, 0)
            outcome = consumer.last_control
        return group, outcome, kinds(sink)

    group, outcome, seen = asyncio.run(walk())
    assert len(group.clients) == 2 and group.clients[1].conf["group.protocol"] == "consumer"
    assert outcome is not None and outcome.outcome == "applied"
    assert "reconfigured" in seen and seen[-1] == "closed"


def test_a_rebuilt_member_keeps_its_start_time_for_its_manifest() -> None:
    m = Member()
    started = m.consumer._prepared.started_ms
    time.sleep(0.01)
    m.control.send(record(1))
    m.consumer.poll(0)
    assert len(m.group.clients) == 2 and m.consumer._prepared.started_ms == started


class HeldClose:
    """The first client's close, held open after it closed: a live rebuild stopped between closing the
    old client and installing the new one, for a concurrent call to land in."""

    def __init__(self, group: FakeGroup) -> None:
        self.closed = threading.Event()
        self.release = threading.Event()
        old = group.clients[0]
        close = old.close

        def held() -> None:
            close()
            self.closed.set()
            self.release.wait(5)

        old.close = held  # type: ignore[method-assign]

    async def during(self, call: Awaitable[Any]) -> Any:
        """Run `call` while the rebuild is held, then let the rebuild go on; the call's result."""
        await asyncio.get_running_loop().run_in_executor(None, self.closed.wait, 5)
        task = asyncio.ensure_future(call)
        await asyncio.sleep(0.1)
        self.release.set()
        return await task


async def aio_member_mid_rebuild(
    group: FakeGroup,
) -> tuple[CoopAIOConsumer, HeldClose, asyncio.Future[list[Any]]]:
    """An asyncio member whose consume is rebuilding its client (held inside the old client's close)."""
    control = FakeControl(ControlOptions(rejoin_s=1.0))
    consumer = CoopAIOConsumer(
        conf_for("cooperative", instance_id="svc-0"), client=group.client, control=control
    )
    await consumer.subscribe([T])
    group.produce(T, 0, b"a", b"b")
    group.assign(parts(0))
    await consumer.consume(1, 0)
    held = HeldClose(group)
    control.send(record(1))
    return consumer, held, asyncio.ensure_future(consumer.consume(1, 0))


def test_an_asyncio_consume_made_during_a_live_rebuild_waits_for_it_and_reads_the_new_client() -> None:
    async def walk() -> tuple[FakeGroup, list[Any]]:
        group = FakeGroup()
        consumer, held, rebuilding = await aio_member_mid_rebuild(group)
        concurrent = await held.during(consumer.consume(1, 0))
        await rebuilding
        await consumer.close()
        return group, concurrent

    group, concurrent = asyncio.run(walk())
    assert len(group.clients) == 2
    assert "consume" in group.clients[1].calls, "the concurrent consume went to the rebuilt client"
    assert all(msg.error() is None for msg in concurrent)


def test_an_asyncio_client_call_made_during_a_live_rebuild_goes_to_the_new_client() -> None:
    async def walk() -> tuple[FakeGroup, list[Any]]:
        group = FakeGroup()
        consumer, held, rebuilding = await aio_member_mid_rebuild(group)
        positions = await held.during(consumer.position([ClientPartition(T, 0)]))
        await rebuilding
        await consumer.close()
        return group, positions

    group, positions = asyncio.run(walk())
    assert len(group.clients) == 2 and [tp.partition for tp in positions] == [0]


def test_an_asyncio_commit_made_during_a_live_rebuild_commits_through_the_new_client() -> None:
    async def walk() -> FakeGroup:
        group = FakeGroup()
        consumer, held, rebuilding = await aio_member_mid_rebuild(group)
        await held.during(consumer.commit(offsets=[ClientPartition(T, 0, 2)], asynchronous=False))
        await rebuilding
        await consumer.close()
        return group

    group = asyncio.run(walk())
    assert len(group.clients) == 2
    assert group.committed()[(T, 0)] == 2


def test_an_asyncio_close_made_during_a_live_rebuild_closes_the_new_client() -> None:
    async def walk() -> FakeGroup:
        group = FakeGroup()
        consumer, held, rebuilding = await aio_member_mid_rebuild(group)
        await held.during(consumer.close())
        await rebuilding
        return group

    group = asyncio.run(walk())
    assert len(group.clients) == 2 and group.clients[1].closed

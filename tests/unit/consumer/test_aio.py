"""The asyncio driver over kafka_coop.testing's fake client: where each thing runs, and what survives a
cancelled await. The same behaviours on the real broker: tests/integration/consumer/test_aio.py,
test_concurrent.py and test_cancellation.py.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicPartition

from kafka_coop.consumer import CoopAIOConsumer, _setup
from kafka_coop.errors import ConsumerFailed, InstanceIdConflict, InvalidInput
from kafka_coop.sinks import MemorySink
from kafka_coop.testing import FakeConsumer, FakeGroup, kafka_error
from tests.unit.consumer.helpers import MARKS, T, conf_for


async def started(
    protocol: str = "cooperative", *, marks: bool = True, conf: dict[str, Any] | None = None, **kwargs: Any
) -> tuple[CoopAIOConsumer, FakeConsumer, MemorySink]:
    group = FakeGroup()
    sink = MemorySink()
    full = {**conf_for(protocol, **(MARKS if marks else {})), **(conf or {})}
    consumer = CoopAIOConsumer(full, events=sink, client=group.client, **kwargs)
    await consumer.subscribe([T])
    assert group.consumer is not None
    return consumer, group.consumer, sink


async def served(consumer: CoopAIOConsumer, inner: FakeConsumer, kind: str, *partitions: int) -> list[Any]:
    """A rebalance librdkafka serves inside the next consume (on the pool's worker)."""
    inner.pending.append(lambda: inner.rebalance(kind, [(T, p) for p in partitions]))
    return await consumer.consume(num_messages=10, timeout=0)


def run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(scenario())  # type: ignore[arg-type]


def test_rebalance_steps_run_on_the_worker_that_serves_the_callback_and_hooks_on_the_loop() -> None:
    threads: dict[str, int] = {}

    async def scenario() -> None:
        async def on_assigned(partitions: list[tuple[str, int]]) -> None:
            threads["hook"] = threading.get_ident()

        consumer, inner, _ = await started(on_assigned=on_assigned)
        original = inner.incremental_assign

        def incremental_assign(partitions: list[TopicPartition]) -> None:
            threads["assign"] = threading.get_ident()
            original(partitions)

        inner.incremental_assign = incremental_assign  # type: ignore[method-assign]
        threads["loop"] = threading.get_ident()
        await served(consumer, inner, "assign", 0)
        await consumer.close()

    run(scenario)
    assert threads["hook"] == threads["loop"], "hooks run on the event loop"
    assert threads["assign"] != threads["loop"], "the client is never called from the loop"


def test_a_hooks_awaited_client_call_runs_on_the_rebalances_worker_not_on_another_one() -> None:
    """With every other worker busy a rebalance still finishes: it never needs a second worker."""
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        consumer: CoopAIOConsumer

        async def on_revoked(partitions: list[tuple[str, int]]) -> None:
            assignment = sorted((tp.topic, tp.partition) for tp in await consumer.assignment())
            seen.setdefault("assignment", assignment)  # the first revoke; close revokes the rest

        consumer, inner, _ = await started(on_revoked=on_revoked, max_workers=2)
        await served(consumer, inner, "assign", 0, 1)
        blocker = threading.Event()
        busy = consumer._executor.submit(blocker.wait, 10)  # the pool's other worker is taken
        inner.pending.append(lambda: inner.rebalance("revoke", [(T, 0)]))
        hand_out(inner, 1, 4)
        msgs = await asyncio.wait_for(consumer.consume(10, 0), 5)
        await consumer.mark_done(msgs[0])
        blocker.set()
        busy.result(5)
        await consumer.close()

    run(scenario)
    assert seen["assignment"] == [(T, 0), (T, 1)], "the hook ran while the partitions were still assigned"


def hand_out(inner: FakeConsumer, partition: int, offset: int) -> None:
    inner.group.produce(T, partition, b"x", at=offset)
    inner.assigned[(T, partition)] = offset


def test_marks_from_tasks_during_a_rebalance_never_wait_and_on_revoked_can_drain_them() -> None:
    async def scenario() -> tuple[FakeConsumer, MemorySink]:
        consumer: CoopAIOConsumer
        work: list[asyncio.Task[None]] = []

        async def process(msg: Any) -> None:
            await asyncio.sleep(0.01)
            await consumer.mark_done(msg)

        async def on_revoked(partitions: list[tuple[str, int]]) -> None:
            await asyncio.wait_for(asyncio.gather(*work), 2)  # drain: the tasks' marks must get through

        consumer, inner, sink = await started(on_revoked=on_revoked, max_workers=2)
        await served(consumer, inner, "assign", 0)
        for offset in range(3):
            inner.group.produce(T, 0, b"x", at=offset)
        for msg in await consumer.consume(10, 0):
            work.append(asyncio.create_task(process(msg)))
        await served(consumer, inner, "revoke", 0)
        await consumer.close()
        return inner, sink

    inner, sink = run(scenario)
    revoked = next(e for e in sink.events if e.kind == "revoked")
    assert revoked.committed == ((T, 0, 3),) and revoked.callback_ms < 2000
    assert inner.committed_offsets == {(T, 0): 3}


def test_an_async_hook_is_awaited_and_a_plain_one_called() -> None:
    seen: list[str] = []

    async def scenario() -> None:
        async def on_assigned(partitions: list[tuple[str, int]]) -> None:
            await asyncio.sleep(0)
            seen.append(f"async {partitions}")

        def on_revoked(partitions: list[tuple[str, int]]) -> None:
            seen.append(f"plain {partitions}")

        consumer, inner, _ = await started(on_assigned=on_assigned, on_revoked=on_revoked)
        await served(consumer, inner, "assign", 0)
        await served(consumer, inner, "revoke", 0)
        await consumer.close()

    run(scenario)
    assert seen == ["async [('t', 0)]", "plain [('t', 0)]"]


def test_records_a_cancelled_consume_took_are_handed_out_by_the_next_one() -> None:
    async def scenario() -> tuple[list[int], FakeConsumer]:
        consumer, inner, _ = await started()
        await served(consumer, inner, "assign", 0)
        for offset in range(3):
            inner.group.produce(T, 0, b"x", at=offset)
        taken = threading.Event()
        release = threading.Event()

        def slow_return() -> None:  # the worker has taken 0-2 and is about to return them
            taken.set()
            release.wait(5)

        inner.on_poll.append(slow_return)
        call = asyncio.ensure_future(consumer.consume(10, 5))
        await asyncio.to_thread(taken.wait, 5)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        release.set()
        await asyncio.sleep(0.05)
        got = [m.offset() for m in await consumer.consume(10, 0)]
        await consumer.close()
        return got, inner

    got, inner = run(scenario)
    assert got == [0, 1, 2], "handed out by the next call"
    assert inner.seeks == [], "not fetched again: carried"


def test_a_cancelled_consume_never_lets_its_records_be_committed_unprocessed() -> None:
    async def scenario() -> FakeConsumer:
        consumer, inner, _ = await started(marks=False)
        await served(consumer, inner, "assign", 0)
        for offset in range(3):
            inner.group.produce(T, 0, b"x", at=offset)
        release = threading.Event()
        inner.on_poll.append(lambda: release.wait(5))
        call = asyncio.ensure_future(consumer.consume(10, 5))
        await asyncio.sleep(0.05)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        release.set()
        await asyncio.sleep(0.05)
        await consumer.close()  # a clean close: what the application was handed is done; 0-2 never were
        return inner

    inner = run(scenario)
    assert inner.committed_offsets.get((T, 0), 0) == 0


def test_a_cancelled_async_hook_lets_the_revoke_finish_then_comes_out_of_consume() -> None:
    async def scenario() -> tuple[FakeConsumer, MemorySink, BaseException]:
        async def on_revoked(partitions: list[tuple[str, int]]) -> None:
            raise asyncio.CancelledError

        consumer, inner, sink = await started(on_revoked=on_revoked)
        await served(consumer, inner, "assign", 0)
        inner.group.produce(T, 0, *[b"x"] * 7)
        for msg in await consumer.consume(10, 0):
            await consumer.mark_done(msg)
        with pytest.raises(BaseException) as info:
            await served(consumer, inner, "revoke", 0)
        await consumer.close()
        return inner, sink, info.value

    inner, sink, raised = run(scenario)
    assert type(raised) is asyncio.CancelledError, raised
    assert inner.callback_raised == [], "nothing is raised through librdkafka's callback"
    assert inner.committed_offsets == {(T, 0): 7}, "the commit still happened"
    revoked = next(e for e in sink.events if e.kind == "revoked")
    assert revoked.owned == () and "interrupted" in (revoked.error or "")


def test_a_fenced_member_emits_lost_owning_nothing_and_every_consume_raises_the_conflict() -> None:
    async def scenario() -> tuple[FakeConsumer, MemorySink, list[str]]:
        consumer, inner, sink = await started(conf={"group.instance.id": "svc-3"})
        await served(consumer, inner, "assign", 0, 1)
        inner.raise_fatal(KafkaError.FENCED_INSTANCE_ID)
        raised = []
        for _ in range(2):
            with pytest.raises(InstanceIdConflict) as info:
                await consumer.consume(10, 0)
            raised.append(str(info.value))
        await consumer.close()
        return inner, sink, raised

    inner, sink, raised = run(scenario)
    assert "svc-3" in raised[0] and raised[0] == raised[1]
    lost = [e for e in sink.events if e.kind == "lost"]
    assert len(lost) == 1 and lost[0].owned == () and lost[0].committed is None
    assert inner.committed_offsets == {}, "nothing is committed after a fatal error, not even on close"
    assert sink.events[-1].kind == "closed" and sink.events[-1].owned == ()


def test_a_commit_fenced_inside_a_revoke_fails_this_and_every_later_consume() -> None:
    async def scenario() -> tuple[MemorySink, list[BaseException]]:
        consumer, inner, sink = await started(conf={"group.instance.id": "svc-3"})
        await served(consumer, inner, "assign", 0, 1)
        inner.group.produce(T, 0, b"x")
        for msg in await consumer.consume(10, 0):
            await consumer.mark_done(msg)
        inner.commit_errors.append(kafka_error(KafkaError.FENCED_INSTANCE_ID, fatal=True))
        inner.pending.append(lambda: inner.rebalance("revoke", [(T, 0)]))
        inner.raise_fatal(KafkaError.FENCED_INSTANCE_ID, "OffsetCommit failed")  # as librdkafka does
        raised: list[BaseException] = []
        for _ in range(2):
            try:
                await consumer.consume(num_messages=10, timeout=0.1)
            except BaseException as exc:
                raised.append(exc)
        await consumer.close()
        return sink, raised

    sink, raised = run(scenario)
    assert len(raised) == 2 and all(isinstance(e, InstanceIdConflict) for e in raised), raised
    losts = [e for e in sink.events if e.kind == "lost"]
    assert len(losts) == 1 and losts[0].owned == () and sorted(losts[0].partitions) == [(T, 0), (T, 1)]
    assert "revoked" not in [e.kind for e in sink.events]


def test_a_member_fenced_after_its_own_poll_limit_ran_out_is_told_so_under_asyncio_too() -> None:
    async def scenario() -> ConsumerFailed:
        consumer, inner, _ = await started(conf={"group.instance.id": "svc-3"})
        await served(consumer, inner, "assign", 0)
        inner.log("MAXPOLL", "Application maximum poll interval (7000ms) exceeded by 5ms: leaving group")
        inner.raise_fatal(KafkaError.FENCED_INSTANCE_ID, "OffsetCommit failed")
        with pytest.raises(ConsumerFailed) as info:
            await consumer.consume(num_messages=10, timeout=0.1)
        await consumer.close()
        return info.value

    failure = run(scenario)
    assert not isinstance(failure, InstanceIdConflict) and "Another member" not in str(failure)
    assert "own max.poll.interval.ms" in str(failure) and failure.code == "FENCED_INSTANCE_ID"


def test_creating_it_outside_an_event_loop_says_where_it_belongs_in_one_sentence() -> None:
    with pytest.raises(RuntimeError) as info:
        CoopAIOConsumer({"bootstrap.servers": "b:9092", "group.id": "g"}, client=FakeGroup().client)
    message = str(info.value)
    assert "running event loop" in message and "CoopConsumer" in message, message


def test_a_pool_of_one_worker_is_refused_in_one_sentence() -> None:
    async def scenario() -> str:
        with pytest.raises(InvalidInput) as info:
            CoopAIOConsumer(conf_for(), max_workers=1, client=FakeGroup().client)
        return str(info.value)

    message = run(scenario)
    assert "max_workers=1" in message and "max_workers=2" in message, message


def test_confluent_callbacks_given_as_coroutines_run_on_the_loop() -> None:
    seen: dict[str, int] = {}

    async def scenario() -> None:
        async def on_commit(err: Any, partitions: Any) -> None:
            seen["on_commit"] = threading.get_ident()

        consumer, inner, _ = await started(callbacks={"on_commit": on_commit})
        seen["loop"] = threading.get_ident()
        await served(consumer, inner, "assign", 0)
        inner.group.produce(T, 0, b"x")
        for msg in await consumer.consume(10, 0):
            await consumer.mark_done(msg)
        await consumer.commit(asynchronous=False)
        await consumer.consume(10, 0)  # commit callbacks are served inside the next call
        await consumer.close()

    run(scenario)
    assert seen["on_commit"] == seen["loop"]


def test_closing_and_the_member_id_read_as_under_the_sync_driver() -> None:
    async def scenario() -> tuple[list[bool], str]:
        flags: list[bool] = []
        consumer: CoopAIOConsumer

        def sink(event: Any) -> None:
            flags.append(consumer.closing)

        group = FakeGroup()
        consumer = CoopAIOConsumer(conf_for(), events=sink, client=group.client)
        await consumer.subscribe([T])
        member_id = await consumer.memberid()
        await consumer.close()
        return flags, member_id

    flags, member_id = run(scenario)
    assert flags == [False, True] and member_id == "member-1"


def test_an_assignment_served_during_close_publishes_no_manifest_after_the_tombstone_under_asyncio(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    order: list[str] = []

    class Publisher:
        def __init__(self, _conf: Any, build: Any, **_kwargs: Any) -> None:
            self.build, self.closed = build, False

        def start(self) -> None:
            order.append("start")

        def publish_now(self) -> None:
            order.append("publish after close" if self.closed else "publish")
            self.build()

        def close(self) -> None:
            self.closed = True
            order.append("close")

    monkeypatch.setattr(_setup, "ManifestPublisher", Publisher)

    async def scenario() -> None:
        consumer, inner, _sink = await started(manifests=True)
        await served(consumer, inner, "assign", 0)
        inner.pending.append(lambda: inner.rebalance("assign", [(T, 1)]))  # still queued when close begins
        await consumer.close()

    run(scenario)
    assert order == ["start", "publish", "close"], order

"""The asyncio driver's own parts: how handler steps become AIOConsumer calls, and the AIOConsumer
internals it leans on. The rebalance behaviour itself is the handler's (tests/unit/consumer/test_handler.py)
and runs on the real broker under asyncio in tests/integration/consumer/test_aio_consumer.py.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.aio import AIOConsumer

from kafka_coop.consumer import _aio, _freeze
from kafka_coop.consumer._handler import (
    Assign,
    CallHook,
    CommitMarked,
    ReadAssignment,
    ReadCommitted,
    ReadMemberId,
    Step,
    Unassign,
    Wait,
)

TPS = [TopicPartition("t", 0), TopicPartition("t", 1)]


class RecordingAIO:
    """Stands in for AIOConsumer: every method is a coroutine that records its call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self._consumer = self

    def __getattr__(self, name: str) -> Any:
        async def call(*args: Any, **kwargs: Any) -> str:
            self.calls.append((name, args, kwargs))
            return f"{name}-result"

        return call

    async def _call(self, fn: Any, *args: Any) -> Any:
        self.calls.append(("_call", (fn.__name__, *args), {}))
        return "member-7"

    def memberid(self) -> str:  # the inner Consumer's; only ever called through _call
        raise AssertionError("memberid must go through AIOConsumer's dispatch, not be called directly")


def run(step: Step, aio: RecordingAIO) -> Any:
    return asyncio.run(_aio.execute_async(aio)(step))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("step", "call", "args", "kwargs"),
    [
        (Assign(TPS, incremental=True), "incremental_assign", (TPS,), {}),
        (Assign(TPS, incremental=False), "assign", (TPS,), {}),
        (Unassign(TPS, incremental=True), "incremental_unassign", (TPS,), {}),
        (Unassign(TPS, incremental=False), "unassign", (), {}),
        (CommitMarked(), "commit", (), {"asynchronous": False}),
        (ReadCommitted(TPS, 3.0), "committed", (TPS,), {"timeout": 3.0}),
        (ReadAssignment(), "assignment", (), {}),
    ],
)
def test_each_step_is_the_awaited_aioconsumer_call_it_names(
    step: Step, call: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    aio = RecordingAIO()
    assert run(step, aio) == f"{call}-result"
    assert aio.calls == [(call, args, kwargs)]


def test_the_member_id_is_read_through_aioconsumers_dispatch_off_the_loop() -> None:
    aio = RecordingAIO()
    assert run(ReadMemberId(), aio) == "member-7"
    assert aio.calls == [("_call", ("memberid",), {})]


def test_an_async_hook_is_awaited_and_a_plain_one_called() -> None:
    seen: list[str] = []

    async def async_hook(partitions: list[tuple[str, int]]) -> str:
        await asyncio.sleep(0)
        seen.append(f"async {partitions}")
        return "from async"

    def plain_hook(partitions: list[tuple[str, int]]) -> str:
        seen.append(f"plain {partitions}")
        return "from plain"

    aio = RecordingAIO()
    assert run(CallHook("on_revoked", async_hook, ([("t", 0)],)), aio) == "from async"
    assert run(CallHook("on_revoked", plain_hook, ([("t", 1)],)), aio) == "from plain"
    assert seen == ["async [('t', 0)]", "plain [('t', 1)]"]
    assert aio.calls == []


def test_a_wait_sleeps_on_the_loop_instead_of_blocking_it() -> None:
    async def both() -> list[str]:
        order: list[str] = []

        async def other() -> None:
            order.append("other task ran")

        task = asyncio.create_task(other())
        await _aio.execute_async(RecordingAIO())(Wait(0.01))  # type: ignore[arg-type]
        order.append("wait done")
        await task
        return order

    assert asyncio.run(both()) == ["other task ran", "wait done"]


def test_aioconsumer_still_has_the_internals_the_member_id_read_uses() -> None:
    """`_call` (gate-aware dispatch) and `_consumer` (the sync Consumer): a confluent-kafka upgrade that
    drops them fails here, not as an empty member id in production."""

    async def probe() -> str:
        aio = AIOConsumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "probe"}, max_workers=2)
        try:
            assert callable(aio._call) and callable(aio._consumer.memberid)
            return await _aio.member_id(aio)
        finally:
            await aio.close()

    assert asyncio.run(probe()) == ""  # not joined: librdkafka has no member id yet


# --- the driver through AIOConsumer's real machinery, with the fake librdkafka inside ----------------
# AIOConsumer (its executor, callback trampoline, AsyncLogger) is the real one; only the sync Consumer it
# builds is tests/unit/consumer/consumer_fake.FakeConsumer. Rebalances are queued to fire inside `consume`, on
# the executor's worker thread, as librdkafka fires them.
T = "t"


@pytest.fixture
def fake_client(monkeypatch: pytest.MonkeyPatch) -> None:
    import confluent_kafka

    from tests.unit.consumer.consumer_fake import FakeConsumer

    monkeypatch.setattr(confluent_kafka, "Consumer", FakeConsumer)


def _conf(**extra: str) -> dict[str, str]:
    return {
        "bootstrap.servers": "b:9092",
        "group.id": "g",
        "partition.assignment.strategy": "cooperative-sticky",
        **extra,
    }


async def _started(**kwargs: Any) -> tuple[Any, Any, Any]:
    from kafka_coop.consumer import CoopAIOConsumer
    from kafka_coop.sinks import MemorySink
    from tests.unit.consumer.consumer_fake import FakeConsumer

    sink = MemorySink()
    consumer = CoopAIOConsumer(_conf(**kwargs.pop("conf", {})), events=sink, **kwargs)
    await consumer.subscribe([T])
    inner = FakeConsumer.last
    assert inner is not None
    return consumer, inner, sink


async def _rebalance(consumer: Any, inner: Any, kind: str, *partitions: int) -> None:
    inner.pending.append(lambda: inner.rebalance(kind, [(T, p) for p in partitions]))
    await consumer.consume(num_messages=10, timeout=0.1)


@pytest.mark.usefixtures("fake_client")
def test_an_async_on_revoked_runs_on_the_loop_before_the_commit_of_what_was_marked() -> None:
    async def scenario() -> tuple[list[str], Any, Any]:
        order: list[str] = []
        loop_thread = threading.get_ident()

        async def on_revoked(partitions: list[tuple[str, int]]) -> None:
            await asyncio.sleep(0)
            on_loop = threading.get_ident() == loop_thread
            order.append(f"on_revoked {partitions} on the loop: {on_loop}")
            order.append(f"commits so far: {inner.calls.count('commit')}")

        consumer, inner, sink = await _started(on_revoked=on_revoked)
        await _rebalance(consumer, inner, "assign", 0, 1)
        await consumer.mark_done(inner.deliver(T, 0, 4))
        inner.deliver(T, 1, 8)  # delivered, never marked done
        await _rebalance(consumer, inner, "revoke", 0, 1)
        await consumer.close()
        return order, inner, sink

    order, inner, sink = asyncio.run(scenario())
    assert order == ["on_revoked [('t', 0), ('t', 1)] on the loop: True", "commits so far: 0"]
    assert inner.committed_offsets == {(T, 0): 5}
    revoked = next(e for e in sink.events if e.kind == "revoked")
    assert revoked.committed == ((T, 0, 5),) and revoked.owned == ()


@pytest.mark.usefixtures("fake_client")
def test_leaving_async_with_on_an_exception_commits_only_what_was_marked() -> None:
    async def scenario() -> Any:
        consumer, inner, _ = await _started(conf={"enable.auto.commit": "false"})
        with pytest.raises(ValueError):
            async with consumer:
                await _rebalance(consumer, inner, "assign", 0)
                await consumer.mark_done(inner.deliver(T, 0, 0))
                inner.deliver(T, 0, 1)
                raise ValueError("processing offset 1 failed")
        return inner

    inner = asyncio.run(scenario())
    assert inner.committed_offsets == {(T, 0): 1}, "offset 1 raised: it must be redelivered"
    assert inner.closed


@pytest.mark.usefixtures("fake_client")
def test_a_fenced_member_emits_lost_owning_nothing_and_every_consume_raises_the_conflict() -> None:
    from confluent_kafka import KafkaError

    from kafka_coop.errors import InstanceIdConflict

    async def scenario() -> tuple[Any, Any, list[str]]:
        consumer, inner, sink = await _started(conf={"group.instance.id": "svc-3"})
        await _rebalance(consumer, inner, "assign", 0, 1)
        await consumer.mark_done(inner.deliver(T, 0, 2))
        inner.raise_fatal(KafkaError.FENCED_INSTANCE_ID)
        raised = []
        for _ in range(2):
            with pytest.raises(InstanceIdConflict) as info:
                await consumer.consume(num_messages=10, timeout=0.1)
            raised.append(str(info.value))
        await consumer.close()
        return inner, sink, raised

    inner, sink, raised = asyncio.run(scenario())
    assert "svc-3" in raised[0] and raised[0] == raised[1]
    lost = [e for e in sink.events if e.kind == "lost"]
    assert len(lost) == 1 and lost[0].owned == () and lost[0].committed is None
    assert sorted(lost[0].partitions) == [(T, 0), (T, 1)]
    assert inner.committed_offsets == {}, "nothing is committed after a fatal error, not even on close"
    assert sink.events[-1].kind == "closed" and sink.events[-1].owned == ()


@pytest.mark.usefixtures("fake_client")
def test_a_cancelled_async_hook_lets_the_revoke_finish_then_comes_out_of_consume() -> None:
    async def scenario() -> tuple[Any, Any, Any]:
        async def on_revoked(partitions: list[tuple[str, int]]) -> None:
            raise asyncio.CancelledError

        consumer, inner, sink = await _started(on_revoked=on_revoked)
        await _rebalance(consumer, inner, "assign", 0)
        await consumer.mark_done(inner.deliver(T, 0, 6))
        with pytest.raises(BaseException) as info:
            await _rebalance(consumer, inner, "revoke", 0)
        await consumer.close()
        return inner, sink, info.value

    inner, sink, raised = asyncio.run(scenario())
    assert type(raised) is asyncio.CancelledError, raised
    # Kept and raised by consume itself: through AIOConsumer's callback trampoline it would reach
    # librdkafka's rebalance callback as concurrent.futures.CancelledError, and on the broker close() then
    # hung under eager (tests/integration/consumer/test_consumer_pending_close.py).
    assert inner.callback_raised == [], inner.callback_raised
    assert inner.committed_offsets == {(T, 0): 7}, "the commit still happened"
    revoked = next(e for e in sink.events if e.kind == "revoked")
    assert revoked.owned == () and "interrupted" in (revoked.error or "")


@pytest.mark.usefixtures("fake_client")
def test_a_commit_fenced_inside_a_revoke_fails_this_and_every_later_consume() -> None:
    from confluent_kafka import KafkaError

    from kafka_coop.errors import InstanceIdConflict
    from tests.unit.consumer.consumer_fake import kafka_error

    async def scenario() -> tuple[Any, list[BaseException]]:
        consumer, inner, sink = await _started(conf={"group.instance.id": "svc-3"})
        await _rebalance(consumer, inner, "assign", 0, 1)
        await consumer.mark_done(inner.deliver(T, 0, 1))
        inner.commit_errors.append(kafka_error(KafkaError.FENCED_INSTANCE_ID, fatal=True))
        inner.pending.append(lambda: inner.rebalance("revoke", [(T, 0)]))
        inner.raise_fatal(KafkaError.FENCED_INSTANCE_ID, "OffsetCommit failed")  # as librdkafka does
        raised: list[BaseException] = []
        for _ in range(2):  # the first from inside the revoke, the next from the failed consumer
            try:
                await consumer.consume(num_messages=10, timeout=0.1)
            except BaseException as exc:
                raised.append(exc)
        await consumer.close()
        return sink, raised

    sink, raised = asyncio.run(scenario())
    assert len(raised) == 2 and all(isinstance(e, InstanceIdConflict) for e in raised), raised
    losts = [e for e in sink.events if e.kind == "lost"]
    assert len(losts) == 1 and losts[0].owned == () and sorted(losts[0].partitions) == [(T, 0), (T, 1)]
    assert "revoked" not in [e.kind for e in sink.events]


def test_creating_it_outside_an_event_loop_says_where_it_belongs_in_one_sentence() -> None:
    from kafka_coop.consumer import CoopAIOConsumer

    with pytest.raises(RuntimeError) as info:
        CoopAIOConsumer({"bootstrap.servers": "b:9092", "group.id": "g"})
    message = str(info.value)
    assert "running event loop" in message and "CoopConsumer" in message, message


@pytest.mark.usefixtures("fake_client")
def test_a_member_fenced_after_its_own_poll_limit_ran_out_is_told_so_under_asyncio_too() -> None:
    from confluent_kafka import KafkaError

    from kafka_coop.errors import ConsumerFailed, InstanceIdConflict

    async def scenario() -> ConsumerFailed:
        consumer, inner, _ = await _started(conf={"group.instance.id": "svc-3"})
        await _rebalance(consumer, inner, "assign", 0)
        inner.log_warning(
            "MAXPOLL", "Application maximum poll interval (7000ms) exceeded by 5ms: leaving group"
        )
        inner.raise_fatal(KafkaError.FENCED_INSTANCE_ID, "OffsetCommit failed")
        with pytest.raises(ConsumerFailed) as info:
            for _ in range(5):  # AIOConsumer hands the log lines to the loop after the consume returned
                await consumer.consume(num_messages=10, timeout=0.1)
        await consumer.close()
        return info.value

    failure = asyncio.run(scenario())
    assert not isinstance(failure, InstanceIdConflict) and "Another member" not in str(failure)
    assert "own max.poll.interval.ms" in str(failure) and failure.code == "FENCED_INSTANCE_ID"


class _FrozenThroughout:
    """The process ticker's testimony for a real freeze: no tick in the whole gap."""

    def stopped_for(self, since: float, now: float) -> float:
        return now - since


@pytest.mark.usefixtures("fake_client")
def test_records_fetched_before_a_freeze_are_held_and_sought_back_under_asyncio_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_freeze, "process_witness", _FrozenThroughout)

    async def scenario() -> tuple[list[Any], Any]:
        consumer, inner, _ = await _started()
        await _rebalance(consumer, inner, "assign", 0)
        consumer._guard.limit_s = 0.05  # a freeze is anything longer than 50 ms here
        inner.prefetch(T, 0, 5, 6)
        await asyncio.sleep(0.2)  # the "freeze": no consume for longer than the limit
        held = await consumer.consume(num_messages=10, timeout=0.1)
        await consumer.close()
        return held, inner

    held, inner = asyncio.run(scenario())
    assert held == [] and inner.seeks == [(T, 0, 5)]


@pytest.mark.usefixtures("fake_client")
def test_an_assignment_served_during_close_publishes_no_manifest_after_the_tombstone_under_asyncio(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kafka_coop.consumer import _setup

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
        consumer, inner, _sink = await _started(manifests=True)
        await _rebalance(consumer, inner, "assign", 0)
        inner.pending.append(lambda: inner.rebalance("assign", [(T, 1)]))  # still queued when close begins
        await consumer.close()

    asyncio.run(scenario())
    assert order == ["start", "publish", "close"], order

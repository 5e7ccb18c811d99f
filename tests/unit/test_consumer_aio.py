"""The asyncio driver's own parts: how handler steps become AIOConsumer calls, and the AIOConsumer
internals it leans on. The rebalance behaviour itself is the handler's (tests/unit/test_consumer_handler.py)
and runs on the real broker under asyncio in tests/integration/test_coop_aio_consumer.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.aio import AIOConsumer

from kafka_coop.consumer import _aio
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

"""SIGTERM and SIGINT end a consumer's `with` block cleanly (docs/consumer.md "Stopping").

Real signals, sent to this process, on the fake client: what the block does with them, whatever broker.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_coop import CoopAIOConsumer, CoopConsumer, RebalanceEvent
from kafka_coop.consumer import _shutdown
from kafka_coop.testing import FakeGroup

CONF = {
    "bootstrap.servers": "unused:9092",
    "group.id": "orders",
    "partition.assignment.strategy": "cooperative-sticky",
    "auto.offset.reset": "earliest",
}
TP = ("orders", 0)


@pytest.fixture(autouse=True)
def default_handlers() -> Iterator[None]:
    """Each test starts and ends with Python's own handlers."""
    saved = {sig: signal.getsignal(sig) for sig in _shutdown.SIGNALS}
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def _group() -> FakeGroup:
    group = FakeGroup()
    group.produce("orders", 0, b"a", b"b", b"c")
    return group


def _service(consumer: CoopConsumer, group: FakeGroup, sig: int = signal.SIGTERM) -> list[Any]:
    """The README loop; the signal arrives while record 1 is in hand."""
    handed: list[Any] = []
    consumer.subscribe(["orders"])
    group.assign([TP])
    while True:
        msg = consumer.poll(0)
        if msg is not None and not msg.error():
            handed.append(msg.offset())
            if msg.offset() == 1:
                os.kill(os.getpid(), sig)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_with_block_after_the_record_in_hand_and_commits_it(sig: int) -> None:
    group, events = _group(), list[RebalanceEvent]()
    with CoopConsumer(CONF, client=group.client, events=events.append) as consumer:
        _service(consumer, group, sig)
    assert group.committed() == {TP: 2}
    assert [e.kind for e in events][-2:] == ["revoked", "closed"]


def test_after_the_block_the_previous_handlers_are_back() -> None:
    group = _group()
    with CoopConsumer(CONF, client=group.client) as consumer:
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        _service(consumer, group)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_signal_while_closing_is_ignored_and_the_close_completes() -> None:
    group, events = _group(), list[RebalanceEvent]()

    def on_revoked(*_: Any) -> None:
        os.kill(os.getpid(), signal.SIGTERM)

    with CoopConsumer(CONF, client=group.client, events=events.append, on_revoked=on_revoked) as consumer:
        _service(consumer, group)
    assert group.committed() == {TP: 2}
    assert [e.kind for e in events][-1] == "closed"


def test_an_application_that_handles_the_signal_itself_keeps_its_handler() -> None:
    seen: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _: seen.append(signum))
    group = _group()
    with CoopConsumer(CONF, client=group.client) as consumer:
        consumer.subscribe(["orders"])
        group.assign([TP])
        os.kill(os.getpid(), signal.SIGTERM)
        assert consumer.poll(0) is not None  # not stopped: the application's handler ran instead
    assert seen == [signal.SIGTERM]


def test_handle_signals_false_installs_nothing() -> None:
    group = _group()
    with CoopConsumer(CONF, client=group.client, handle_signals=False):
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_loop_that_does_not_poll_again_is_stopped_in_place_without_committing_the_record_in_hand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_shutdown, "FORCE_AFTER_S", 0.2)
    group = _group()
    with CoopConsumer(CONF, client=group.client) as consumer:
        consumer.subscribe(["orders"])
        group.assign([TP])
        assert consumer.poll(0).offset() == 0  # type: ignore[union-attr]
        assert consumer.poll(0).offset() == 1  # type: ignore[union-attr]
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # record 1 takes long: the block is stopped here
        pytest.fail("the block went on after the forced stop")
    assert group.committed() == {TP: 1}


def test_an_async_with_block_ends_on_a_signal_and_commits_the_record_in_hand() -> None:
    group, events = _group(), list[RebalanceEvent]()

    async def service() -> None:
        async with CoopAIOConsumer(CONF, client=group.client, events=events.append) as consumer:
            await consumer.subscribe(["orders"])
            group.assign([TP])
            while True:
                msg = await consumer.poll(0)
                if msg is not None and not msg.error() and msg.offset() == 1:
                    os.kill(os.getpid(), signal.SIGTERM)

    asyncio.run(service())
    assert group.committed() == {TP: 2}
    assert [e.kind for e in events][-2:] == ["revoked", "closed"]

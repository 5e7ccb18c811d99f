"""Records fetched before the process stopped running are held until the group has answered (gap B).

The clock is the consumer's only witness of a freeze (SIGSTOP, a paused VM): these tests move it. The
same behaviour on the real broker, with a SIGSTOPped member process:
tests/integration/consumer/test_consumer_freeze.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_coop.consumer import CoopConsumer, _freeze, _sync
from kafka_coop.sinks import MemorySink
from tests.unit.consumer.consumer_fake import FakeConsumer

T = "t"
SESSION_MS = 10_000


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 0.001  # every reading a little later, as a real monotonic clock
        return self.now


class Witness:
    """The process ticker's testimony: by default the process did not run through any gap (a freeze)."""

    def __init__(self) -> None:
        self.ran = False

    def stopped_for(self, since: float, now: float) -> float:
        return 0.0 if self.ran else now - since


@pytest.fixture
def witness(monkeypatch: pytest.MonkeyPatch) -> Witness:
    fake = Witness()
    monkeypatch.setattr(_freeze, "process_witness", lambda: fake)
    return fake


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch, witness: Witness) -> Iterator[Clock]:
    fake = Clock()
    monkeypatch.setattr(_sync, "Consumer", FakeConsumer)
    monkeypatch.setattr(_sync, "_monotonic", fake, raising=False)
    monkeypatch.setattr(_freeze.time, "monotonic", fake)
    monkeypatch.setattr("kafka_coop.consumer._handler.time.monotonic", fake)
    yield fake


def make(protocol_conf: dict[str, str] | None = None) -> tuple[CoopConsumer, FakeConsumer, MemorySink]:
    conf: dict[str, Any] = {
        "bootstrap.servers": "b:9092",
        "group.id": "g",
        "group.instance.id": "svc-0",
        "partition.assignment.strategy": "cooperative-sticky",
        "session.timeout.ms": str(SESSION_MS),
        "max.poll.interval.ms": str(SESSION_MS),
        **(protocol_conf or {}),
    }
    sink = MemorySink()
    consumer = CoopConsumer(conf, events=sink)
    consumer.subscribe([T])
    inner = FakeConsumer.last
    assert inner is not None
    inner.rebalance("assign", [(T, 0), (T, 1)])
    return consumer, inner, sink


def offsets(messages: list[Any]) -> list[tuple[int, int]]:
    return [(m.partition(), m.offset()) for m in messages]


def test_records_fetched_before_a_freeze_past_the_session_are_not_handed_out(clock: Clock) -> None:
    consumer, inner, _ = make()
    inner.prefetch(T, 0, 5, 6, 7)
    inner.prefetch(T, 1, 3)
    assert offsets(consumer.consume(1, 0.5)) == [(0, 5)]
    clock.now += 16.0  # SIGSTOP for 16 s: the broker gave both partitions to another member
    assert consumer.consume(10, 0.5) == []
    assert sorted(inner.seeks) == [(T, 0, 6), (T, 1, 3)], "held records are fetched again if still owned"


def test_the_hold_ends_when_the_group_answers_and_only_what_it_owns_now_comes(clock: Clock) -> None:
    consumer, inner, sink = make()
    inner.prefetch(T, 0, 5, 6)
    inner.prefetch(T, 1, 3)
    consumer.poll(0.5)
    clock.now += 16.0
    assert consumer.poll(0.5) is None
    # The first heartbeat after the thaw: evicted; the rejoin brings partition 1 back, from the commit.
    inner.pending.append(lambda: inner.rebalance("lost", [(T, 0), (T, 1)]))
    inner.pending.append(lambda: inner.rebalance("assign", [(T, 1)]))
    clock.now += 0.2
    inner.pending.append(lambda: inner.prefetch(T, 1, 2))
    assert offsets([consumer.poll(0.5)]) == [(1, 2)]
    assert [e.kind for e in sink.events][-2:] == ["lost", "assigned"]


def test_a_member_the_group_kept_gets_its_records_again_after_the_hold(clock: Clock) -> None:
    consumer, inner, _ = make()
    inner.prefetch(T, 0, 5, 6, 7)
    consumer.consume(1, 0.5)
    clock.now += 16.0
    assert consumer.consume(10, 0.5) == []
    held_at = clock.now
    delivered: list[Any] = []
    while not delivered and clock.now < held_at + 2 * _freeze.HOLD_S:
        if not inner.fetched:  # fetched again from the sought position: the session outlived the freeze
            inner.prefetch(T, 0, 6, 7)
        clock.now += 1.0
        delivered = consumer.consume(10, 0.5)
    assert offsets(delivered) == [(0, 6), (0, 7)], "nothing a legitimate owner needs is lost"
    assert clock.now >= held_at + _freeze.HOLD_S, "held until the hold ran out, the group never objected"


def test_a_long_idle_poll_is_not_a_freeze(clock: Clock) -> None:
    consumer, inner, _ = make()
    consumer.poll(0.5)

    def idle_poll(timeout: float | None = None) -> Any:
        clock.now += 59.0  # nothing arrived for 59 s of a 60 s poll
        return FakeConsumer.poll(inner, timeout)

    inner.prefetch(T, 0, 9)
    consumer._inner_poll = idle_poll
    assert offsets([consumer.poll(60)]) == [(0, 9)]


def test_a_freeze_inside_a_poll_call_is_seen_too(clock: Clock) -> None:
    consumer, inner, _ = make()
    consumer.poll(0.5)

    def frozen_poll(timeout: float | None = None) -> Any:
        clock.now += 20.0  # SIGSTOP while the call waited
        return FakeConsumer.poll(inner, timeout)

    inner.prefetch(T, 0, 9)
    consumer._inner_poll = frozen_poll
    assert consumer.poll(1.0) is None
    assert inner.seeks == [(T, 0, 9)]


def test_a_gap_shorter_than_the_session_changes_nothing(clock: Clock) -> None:
    consumer, inner, _ = make()
    inner.prefetch(T, 0, 5, 6)
    consumer.poll(0.5)
    clock.now += 8.0  # slow processing, inside the session and the poll limit
    assert offsets([consumer.poll(0.5)]) == [(0, 6)]
    assert inner.seeks == []


def test_the_limit_is_the_session_for_classic_and_at_most_the_broker_default_for_kip848() -> None:
    assert _freeze.freeze_limit_s("cooperative", 10_000, 300_000) == 10.0
    assert _freeze.freeze_limit_s("eager", None, None) == 45.0
    assert _freeze.freeze_limit_s("consumer", None, 10_000) == 10.0
    assert _freeze.freeze_limit_s("consumer", None, None) == 45.0


def test_an_application_slow_between_polls_while_the_process_ran_is_not_a_freeze(
    clock: Clock, witness: Witness
) -> None:
    """A batch that took longer than the session (heartbeats went on from librdkafka's thread) is no
    eviction; holding its next records would stall every slow-batch service for nothing."""
    consumer, inner, _ = make()
    inner.prefetch(T, 0, 5, 6)
    consumer.poll(0.5)
    witness.ran = True
    clock.now += 16.0  # the application processed for 16 s; the process's ticker kept ticking
    assert offsets([consumer.poll(0.5)]) == [(0, 6)]
    assert inner.seeks == []


def test_the_process_ticker_sees_a_sigstop_as_a_stretch_without_ticks() -> None:
    """The real witness: a daemon thread noting the time every tick; a stop shows as a long tick gap."""
    ticker = _freeze.Ticker(tick_s=0.01)
    since = ticker.last
    ticker.record(since + 5.0)  # what the thread notes on its first tick after a 5 s stop
    assert ticker.stopped_for(since, since + 5.0) >= 4.9
    assert ticker.stopped_for(since + 6.0, since + 6.0) < 1.0


def test_the_process_ticker_ticks_in_its_own_thread() -> None:
    ticker = _freeze.Ticker(tick_s=0.01)
    before = ticker.last
    ticker.ensure_running()
    try:
        deadline = time.monotonic() + 10
        while ticker.last == before and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ticker.last > before
    finally:
        ticker.stop()


@pytest.mark.xfail(strict=True, reason="issue 25 finding 7: a blocking call's own duration is not checked")
def test_a_freeze_inside_a_poll_with_no_timeout_is_seen(clock: Clock) -> None:
    """consume()'s default timeout is -1 (block); a freeze inside such a call is a freeze all the same."""
    consumer, inner, _ = make()
    consumer.poll(0.5)

    def frozen_poll(timeout: float | None = None) -> Any:
        clock.now += 20.0  # SIGSTOP while the call waited for records
        return FakeConsumer.poll(inner, timeout)

    inner.prefetch(T, 0, 9)
    consumer._inner_poll = frozen_poll
    assert consumer.poll() is None
    assert inner.seeks == [(T, 0, 9)]


@pytest.mark.xfail(strict=True, reason="issue 25 finding 12: with auto offset store, held records are stored")
def test_with_the_auto_offset_store_on_records_held_after_a_freeze_are_not_committed(clock: Clock) -> None:
    consumer, inner, _ = make({"enable.auto.offset.store": "true", "enable.auto.commit": "false"})
    inner.fetched = [inner.deliver(T, 0, 5)]  # librdkafka stores 6 as it hands out 5
    consumer.poll(0.5)
    clock.now += 16.0
    inner.fetched = [inner.deliver(T, 0, 6), inner.deliver(T, 0, 7)]  # handed out after the thaw: 8 stored
    assert consumer.consume(10, 0.5) == []
    consumer.close()
    assert inner.committed_offsets == {(T, 0): 6}, "6 and 7 were held, never processed"


@pytest.mark.xfail(strict=True, reason="issue 25 finding 12: a rebalance in the same call ends the hold")
def test_records_fetched_before_a_freeze_are_held_even_when_the_group_answers_in_the_same_call(
    clock: Clock,
) -> None:
    consumer, inner, _ = make()
    inner.prefetch(T, 0, 5, 6, 7)
    consumer.consume(1, 0.5)
    clock.now += 16.0
    inner.pending.append(lambda: inner.rebalance("assign", [(T, 2)]))  # the group's first answer
    assert consumer.consume(10, 0.5) == [], "6 and 7 were fetched before the freeze"

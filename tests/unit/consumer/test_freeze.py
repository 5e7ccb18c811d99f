"""Records fetched before the process stopped running are held until the group has answered.

The watchdog thread is the consumer's witness of a freeze (SIGSTOP, a paused VM): a frozen process stops
it too, and it sees its own gap when it wakes. These tests stand in for it (and for the clock). The same
behaviour on the real broker, with a SIGSTOPped member process:
tests/integration/consumer/test_freeze.py.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from kafka_coop.consumer import CoopConsumer, _freeze
from kafka_coop.sinks import MemorySink
from kafka_coop.testing import FakeConsumer, MockedClock
from tests.unit.consumer.helpers import T, make

SESSION_MS = 10_000


class Frozen:
    """A consumer on a clock the test moves (the clock is its watchdog too)."""

    def __init__(
        self, consumer: CoopConsumer, inner: FakeConsumer, sink: MemorySink, clock: MockedClock
    ) -> None:
        self.consumer, self.inner, self.sink, self.clock = consumer, inner, sink, clock

    def freeze(self, seconds: float) -> None:
        """The process stops for `seconds`; the watchdog, waking, flags the consumer."""
        self.clock.freeze(seconds)

    def busy(self, seconds: float) -> None:
        """The application works for `seconds`; the process runs (the watchdog ticks through it)."""
        self.clock.sleep(seconds)

    def prefetch(self, partition: int, *offsets: int) -> None:
        for offset in offsets:
            self.inner.group.produce(T, partition, b"x", at=offset)


@pytest.fixture
def clock() -> MockedClock:
    return MockedClock()


def frozen(clock: MockedClock, protocol_conf: dict[str, str] | None = None, **kwargs: Any) -> Frozen:
    conf = {
        "session.timeout.ms": str(SESSION_MS),
        "max.poll.interval.ms": str(SESSION_MS),
        **(protocol_conf or {}),
    }
    consumer, inner, sink = make("cooperative", instance_id="svc-0", conf=conf, clock=clock, **kwargs)
    inner.rebalance("assign", [(T, 0), (T, 1)])
    return Frozen(consumer, inner, sink, clock)


def offsets(messages: list[Any]) -> list[tuple[int, int]]:
    return [(m.partition(), m.offset()) for m in messages if m is not None]


def test_records_fetched_before_a_freeze_past_the_session_are_not_handed_out(clock: MockedClock) -> None:
    f = frozen(clock)
    f.prefetch(0, 5, 6, 7)
    f.prefetch(1, 3)
    assert offsets(f.consumer.consume(1, 0.5)) == [(0, 5)]
    f.freeze(16.0)  # SIGSTOP for 16 s: the broker gave both partitions to another member
    assert f.consumer.consume(10, 0.5) == []
    assert sorted(f.inner.seeks) == [(T, 0, 6), (T, 1, 3)], "held records are fetched again if still owned"


def test_the_hold_ends_when_the_group_answers_and_only_what_it_owns_now_comes(clock: MockedClock) -> None:
    f = frozen(clock)
    f.prefetch(0, 5, 6)
    f.prefetch(1, 3)
    f.consumer.poll(0.5)
    f.freeze(16.0)
    assert f.consumer.poll(0.5) is None
    # The first heartbeat after the thaw: evicted; the rejoin brings partition 1 back, from the commit.
    f.inner.pending.append(lambda: f.inner.rebalance("lost", [(T, 0), (T, 1)]))
    f.inner.pending.append(lambda: f.inner.rebalance("assign", [(T, 1)]))
    assert f.consumer.poll(0.5) is None, "what a call returns in the call the group answered may predate it"
    clock.now += 0.2
    assert offsets([f.consumer.poll(0.5)]) == [(1, 3)]
    assert [e.kind for e in f.sink.events][-2:] == ["lost", "assigned"]


def test_a_member_the_group_kept_gets_its_records_again_after_the_hold(clock: MockedClock) -> None:
    f = frozen(clock)
    f.prefetch(0, 5, 6, 7)
    f.consumer.consume(1, 0.5)
    f.freeze(16.0)
    assert f.consumer.consume(10, 0.5) == []
    held_at = clock.now
    delivered: list[Any] = []
    while not delivered and clock.now < held_at + 2 * _freeze.HOLD_S:
        clock.now += 1.0
        delivered = f.consumer.consume(10, 0.5)
    assert offsets(delivered) == [(0, 6), (0, 7)], "nothing a legitimate owner needs is lost"
    assert clock.now >= held_at + _freeze.HOLD_S, "held until the hold ran out, the group never objected"


def test_a_long_idle_poll_is_not_a_freeze(clock: MockedClock) -> None:
    f = frozen(clock)
    f.consumer.poll(0.5)
    f.prefetch(0, 9)
    f.inner.on_poll.append(lambda: f.busy(59.0))  # nothing arrived for 59 s of a 60 s poll; the process ran
    assert offsets([f.consumer.poll(60)]) == [(0, 9)]


@pytest.mark.parametrize("timeout", [1.0, -1])
def test_a_freeze_inside_a_poll_is_seen_with_or_without_a_timeout(clock: MockedClock, timeout: float) -> None:
    """consume()'s default timeout is -1 (block): a freeze inside such a call is a freeze all the same."""
    f = frozen(clock)
    f.consumer.poll(0.5)
    f.prefetch(0, 9)
    f.inner.on_poll.append(lambda: f.freeze(20.0))  # SIGSTOP while the call waited
    assert f.consumer.poll(timeout) is None
    assert f.inner.seeks == [(T, 0, 9)]


def test_a_gap_shorter_than_the_session_changes_nothing(clock: MockedClock) -> None:
    f = frozen(clock)
    f.prefetch(0, 5, 6)
    f.consumer.poll(0.5)
    f.freeze(8.0)  # inside the session and the poll limit
    assert offsets([f.consumer.poll(0.5)]) == [(0, 6)]
    assert f.inner.seeks == []


def test_the_limit_is_the_session_for_classic_and_at_most_the_broker_default_for_kip848() -> None:
    assert _freeze.freeze_limit_s("cooperative", 10_000, 300_000) == 10.0
    assert _freeze.freeze_limit_s("eager", None, None) == 45.0
    assert _freeze.freeze_limit_s("consumer", None, 10_000) == 10.0
    assert _freeze.freeze_limit_s("consumer", None, None) == 45.0


def test_an_application_slow_between_polls_while_the_process_ran_is_not_a_freeze(clock: MockedClock) -> None:
    """A batch that took longer than the session (heartbeats went on from librdkafka's thread) is no
    eviction; holding its next records would stall every slow-batch service for nothing."""
    f = frozen(clock)
    f.prefetch(0, 5, 6)
    f.consumer.poll(0.5)
    f.busy(16.0)  # the application processed for 16 s; the watchdog kept ticking
    assert offsets([f.consumer.poll(0.5)]) == [(0, 6)]
    assert f.inner.seeks == []


@pytest.mark.parametrize("auto_commit", ["true", "false"])
def test_with_the_auto_offset_store_on_records_held_after_a_freeze_are_not_committed(
    clock: MockedClock, auto_commit: str
) -> None:
    """The conf says 'delivered means stored'; kafka-coop's client stores nothing, and held records were
    never handed to the application. Auto commit on (librdkafka's default): the interval commit that
    falls due in the call after the freeze commits none of them either."""
    f = frozen(clock, {"enable.auto.offset.store": "true", "enable.auto.commit": auto_commit}, marks=False)
    f.prefetch(0, 5, 6, 7)
    f.consumer.poll(0.5)  # 5, processed
    f.freeze(16.0)
    assert f.consumer.consume(10, 0.5) == []  # 6 and 7 held
    if auto_commit == "true":
        assert f.inner.committed_offsets == {(T, 0): 6}, "the interval commit after the freeze"
    f.consumer.close()
    # Auto commit off: close commits nothing on the application's behalf, as confluent's does.
    expected = {(T, 0): 6} if auto_commit == "true" else {}
    assert f.inner.committed_offsets == expected, "6 and 7 were held, never processed"


def test_records_fetched_before_a_freeze_are_held_even_when_the_group_answers_in_the_same_call(
    clock: MockedClock,
) -> None:
    f = frozen(clock)
    f.prefetch(0, 5, 6, 7)
    f.consumer.consume(1, 0.5)
    f.freeze(16.0)
    f.inner.pending.append(lambda: f.inner.rebalance("assign", [(T, 2)]))  # the group's first answer
    assert f.consumer.consume(10, 0.5) == [], "6 and 7 were fetched before the freeze"
    assert offsets(f.consumer.consume(10, 0.5)) == [(0, 6), (0, 7)], "the next call hands them out"


def test_the_watchdog_sees_a_sigstop_as_a_stretch_without_ticks() -> None:
    """The real witness: a daemon thread noting the time every tick; a stop shows as a long tick gap."""
    watchdog = _freeze.Watchdog(tick_s=0.01)
    since = watchdog.last
    watchdog.record(since + 5.0)  # what the thread notes on its first tick after a 5 s stop
    assert watchdog.stopped_for(since, since + 5.0) >= 4.9
    assert watchdog.stopped_for(since + 6.0, since + 6.0) < 1.0


def test_a_tick_read_from_a_faked_clock_holds_no_consumer_once_the_clock_is_real_again() -> None:
    """A test that fakes `time.monotonic` an hour ahead (freezegun, a monkeypatch) while the watchdog
    ticks leaves a gap noted an hour in the future; once the real clock is back, no consumer of that
    process may read it as a freeze (it held every consumer of a CI worker for an hour)."""
    watchdog = _freeze.Watchdog(tick_s=0.01)
    now = watchdog.last
    watchdog.record(now + 3600.0)  # a tick while the clock was faked
    watchdog.record(now + 0.1)  # the next tick, on the real clock
    assert watchdog.stopped_for(now + 0.2, now + 0.3) < _freeze.GAP_S


def test_the_watchdog_flags_every_consumer_at_each_tick_from_its_own_thread() -> None:
    watchdog = _freeze.Watchdog(tick_s=0.01)
    state = _freeze.CallState()
    state.slow = False
    watchdog.register(state)
    try:
        deadline = time.monotonic() + 10
        while not state.slow and time.monotonic() < deadline:
            time.sleep(0.01)
        assert state.slow
    finally:
        watchdog.stop()

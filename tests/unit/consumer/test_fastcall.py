"""The per-record `poll` path: in C (`_fastcall.FastPoll`: the default wheel's, and the checkout's, which
`make setup` builds with KAFKA_COOP_BUILD_C=1) and in Python (what the pure fallback wheel runs). The
same behaviour, each test run on both; the broker tests run the C one, the install tier both wheels."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_coop.consumer import CoopConsumer, _core, _freeze
from kafka_coop.consumer._fastcall import FastPoll
from kafka_coop.testing import FakeConsumer
from tests.unit.consumer.helpers import T, make, parts


@pytest.fixture(params=["c", "python"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "python":
        monkeypatch.setattr(_core, "FastPoll", None)
    return str(request.param)


@pytest.fixture
def slow_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the calls that took the slow path."""
    calls: list[int] = []
    real = _core.WrappedClient._slow

    def slow(self: _core.WrappedClient, messages: list[Any], hand_out: bool) -> list[Any]:
        calls.append(len(messages))
        return real(self, messages, hand_out)

    monkeypatch.setattr(_core.WrappedClient, "_slow", slow)
    yield calls


def polled_once(path: str, *, marks: bool) -> tuple[CoopConsumer, FakeConsumer, Any]:
    """A consumer (`marks`: enable.auto.offset.store=false) with five records, offset 0 polled (the first
    call is a slow one: a new consumer's state starts flagged), its call state out of the watchdog's reach
    so the test alone says when it ticked. Returns offset 0's record too."""
    consumer, inner, _ = make(marks=marks)
    inner.rebalance("assign", parts(0))
    inner.group.produce(T, 0, *[b"x"] * 5)
    _freeze.WATCHDOG._states.discard(consumer._core.state)
    first = consumer.poll(0)
    assert isinstance(consumer.__dict__["poll"], FastPoll) == (path == "c")
    return consumer, inner, first


def drop_in(path: str) -> tuple[CoopConsumer, FakeConsumer]:
    """A drop-in consumer (librdkafka's defaults: no explicit marks) with records to poll."""
    consumer, inner, _ = polled_once(path, marks=False)
    return consumer, inner


def test_the_c_path_is_built_where_the_tests_run() -> None:
    """`make setup` asks for the extension (KAFKA_COOP_BUILD_C=1); a missing compiler is a failed build
    there, and a checkout installed without asking fails here, not silently testing one path only."""
    assert _core.FastPoll is not None
    assert isinstance(_freeze.CallState(), _core.FastCallState)


def test_the_record_polled_is_what_the_application_holds(path: str) -> None:
    consumer, _ = drop_in(path)
    msg = consumer.poll(0)
    assert msg is not None and consumer._core.state.held is msg


def test_a_call_between_two_ticks_takes_the_fast_path(path: str, slow_calls: list[int]) -> None:
    consumer, _ = drop_in(path)
    slow_calls.clear()
    state = consumer._core.state
    state.slow, state.tick = False, time.monotonic()
    assert consumer.poll(0) is not None
    assert slow_calls == []


def test_a_tick_takes_the_slow_path_once(path: str, slow_calls: list[int]) -> None:
    consumer, _ = drop_in(path)
    slow_calls.clear()
    state = consumer._core.state
    state.slow, state.tick = True, time.monotonic()
    consumer.poll(0)
    consumer.poll(0)
    assert slow_calls == [1]


def test_a_call_returning_after_the_watchdog_stopped_ticking_takes_the_slow_path(
    path: str, slow_calls: list[int]
) -> None:
    """A freeze stops the watchdog too: a call that returns after the thaw, before the watchdog thread
    has run again, sees a tick older than GAP_S (the SIGSTOP broker test once handed out such a batch)."""
    consumer, _ = drop_in(path)
    slow_calls.clear()
    state = consumer._core.state
    state.slow, state.tick = False, time.monotonic() - 2 * _freeze.GAP_S
    consumer.poll(0)
    assert slow_calls == [1]


def test_a_call_that_raised_seeks_back_and_raises_the_same_exception(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken: list[int] = []
    monkeypatch.setattr(_core.WrappedClient, "broken_call", lambda self, at_most: broken.append(at_most))
    consumer, _ = drop_in(path)
    interrupt = KeyboardInterrupt()

    def poll(timeout: float = -1) -> Any:
        raise interrupt

    # the fast path holds the client's bound poll: swap it underneath, as a Ctrl-C inside it would
    monkeypatch.setattr(FakeConsumer, "poll", lambda self, timeout=-1: poll(timeout))
    consumer.__dict__["poll"] = consumer._core.make_poll()
    with pytest.raises(KeyboardInterrupt) as raised:
        consumer.poll(0)
    assert raised.value is interrupt and broken == [1]


def test_the_timeout_is_passed_by_keyword_as_well(path: str) -> None:
    consumer, _ = drop_in(path)
    assert consumer.poll(timeout=0) is not None


@pytest.mark.parametrize("call", [lambda c: c.poll(1.0, 2), lambda c: c.poll(tmeout=1.0)])
def test_a_call_confluent_refuses_raises_type_error_and_seeks_nothing_back(path: str, call: Any) -> None:
    """Refused before the client is called, as confluent refuses it: not a broken call (which seeks every
    partition back by the call's size and forgets the record in hand)."""
    consumer, _ = drop_in(path)
    held = consumer._core.state.held
    with pytest.raises(TypeError):
        call(consumer)
    assert consumer._core.state.held is held and not consumer._core.floors


def marked(path: str) -> tuple[CoopConsumer, FakeConsumer, Any]:
    """An explicit-marks consumer with offset 0 polled, every later call on the fast path (its state not
    flagged, the tick now). Returns offset 0's record too."""
    consumer, inner, first = polled_once(path, marks=True)
    state = consumer._core.state
    state.slow, state.tick = False, time.monotonic()
    return consumer, inner, first


def test_an_explicit_marks_poll_on_the_fast_path_registers_the_record_as_handed_out(
    path: str, slow_calls: list[int]
) -> None:
    consumer, _, _ = marked(path)
    slow_calls.clear()
    msg = consumer.poll(0)
    assert slow_calls == [] and msg is not None
    assert consumer._core.ledger is not None and consumer._core.ledger.handed[-1] is msg


def test_an_explicit_marks_commit_stops_at_the_first_record_polled_on_the_fast_path_and_not_marked(
    path: str,
) -> None:
    consumer, inner, first = marked(path)
    rest = [consumer.poll(0) for _ in range(4)]
    for msg in [first, rest[0], rest[2]]:  # offsets 0, 1, 3 done; 2 is not
        consumer.mark_done(msg)
    consumer.close()
    assert inner.committed_offsets == {(T, 0): 2}


def test_an_explicit_marks_poll_folds_once_the_records_handed_out_reach_the_fold_size(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folds: list[int] = []
    real = _core.WrappedClient.fold

    def fold(self: _core.WrappedClient) -> None:
        folds.append(len(self.ledger.handed))  # type: ignore[union-attr]
        real(self)

    monkeypatch.setattr(_core.WrappedClient, "fold", fold)
    monkeypatch.setattr(_core, "FOLD_RECORDS", 2)
    consumer, _, _ = marked(path)
    folds.clear()
    consumer.poll(0)
    consumer.poll(0)
    assert folds == [], "fewer than FOLD_RECORDS handed out before each"
    consumer.poll(0)
    assert folds == [2], "FOLD_RECORDS handed out before it: fold first"
    assert list(consumer._core.ledger.handed)[-1].offset() == 3, "then register it"  # type: ignore[union-attr]


def test_the_c_path_takes_handed_and_fold_together_or_neither() -> None:
    state = _freeze.CallState()
    with pytest.raises(TypeError, match="together"):
        FastPoll(lambda t=-1: None, state, lambda m, h: m, lambda n: None, True, 1.0, handed=[])  # type: ignore[arg-type]

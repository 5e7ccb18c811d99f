"""`bounded_call`: a blocking call given a bound, its own outcome kept apart from the bound's."""

from __future__ import annotations

import threading

import pytest

from kafka_coop._waiting import StillRunning, bounded_call


def test_a_call_that_returns_in_time_gives_its_result() -> None:
    assert bounded_call(lambda: 7, 5.0, name="t") == 7


def test_a_call_that_raises_timeouterror_itself_is_not_taken_for_the_bound() -> None:
    def times_out() -> None:
        raise TimeoutError("the call's own")

    with pytest.raises(TimeoutError, match="the call's own"):
        bounded_call(times_out, 5.0, name="t")


def test_a_call_past_its_bound_is_left_running_and_said() -> None:
    release = threading.Event()
    with pytest.raises(StillRunning):
        bounded_call(release.wait, 0.05, name="t")
    release.set()

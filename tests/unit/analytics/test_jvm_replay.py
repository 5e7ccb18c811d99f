"""The harness that runs the step's specification against the JVM's `GroupStep` (`jvm_replay`): whatever
goes wrong in the JVM must fail the test that met it, with the JVM's own account, and never hang the run
or leave a JVM behind."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from kafka_coop.analytics._stream import OUTPUT_COLUMNS, StreamConfig
from tests.unit.analytics.jvm_replay import JvmStepError, StepReplay
from tests.unit.analytics.stream_feed import jvm_row_dict

pytestmark = pytest.mark.spark  # a JVM and PySpark's jars (Jackson)


@pytest.fixture
def replay() -> Iterator[StepReplay]:
    """A JVM of its own: these tests break it."""
    own = StepReplay(timeout_s=60)
    yield own
    own.close()


def pid_of(replay: StepReplay) -> int:
    replay.request({"op": "fields", "input": [], "output": []})
    assert replay._proc is not None
    return replay._proc.pid


def test_an_exception_in_the_jvm_is_a_python_error_with_the_java_stack_trace(replay: StepReplay) -> None:
    with pytest.raises(
        JvmStepError, match=r"(?s)IllegalArgumentException: StreamConfig fields.*at kafkacoop\."
    ):
        replay.request({"op": "wakeup", "state": None, "config": {"window_ms": 1}})
    pid = pid_of(replay)
    with pytest.raises(JvmStepError, match="unknown op"):
        replay.request({"op": "dance"})
    assert pid_of(replay) == pid, "the JVM goes on serving"


def test_a_jvm_that_dies_fails_the_request_and_the_next_one_starts_a_new_jvm(replay: StepReplay) -> None:
    pid = pid_of(replay)
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(JvmStepError, match=r"ended .*\(exit -9\)"):
        replay.wakeup(b"", StreamConfig(), 0)
    assert pid_of(replay) != pid


def test_a_jvm_that_stops_answering_is_killed_after_the_timeout(replay: StepReplay) -> None:
    pid = pid_of(replay)
    replay.timeout_s = 1
    os.kill(pid, signal.SIGSTOP)
    with pytest.raises(JvmStepError, match="no reply in 1 s"):
        replay.wakeup(b"", StreamConfig(), 0)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_jvm_row_with_a_value_outside_its_kinds_columns_is_refused() -> None:
    """`Output.dicts()` keeps only a kind's columns: a stray value the Parquet table would carry must
    not vanish from the comparison."""
    row = dict.fromkeys(OUTPUT_COLUMNS)
    row |= {"kind": "member", "group": "g", "ts": 5, "version": 1, "member": "a", "since": 3, "cause": "x"}
    assert jvm_row_dict(list(row.values())) == {
        "kind": "member",
        "group": "g",
        "ts": 5,
        "version": 1,
        "member": "a",
        "since": 3,
        "cause": "x",
    }
    with pytest.raises(AssertionError, match="fills columns it has not"):
        jvm_row_dict(list((row | {"owner": "b"}).values()))

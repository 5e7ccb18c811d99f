"""The consumer's unit tests pass at any uptime of the machine: on one booted two minutes ago, the
process's monotonic clock reads ~120 s, below the start of any clock a test moves (CI machines are often
freshly booted). These run tests that move the clock with `time.monotonic` reading that."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafka_coop.consumer import _freeze
from kafka_coop.testing import MockedClock
from tests.unit.consumer import test_freeze, test_offsets, test_reconfigure

FRESH_BOOT_S = 120.0


@pytest.fixture
def fresh_boot(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`time.monotonic` as on a machine up for two minutes, for every thread; the watchdog's own
    bookkeeping is set straight afterwards, so no later test sees the jump back as a freeze."""
    real = time.monotonic
    offset = real() - FRESH_BOOT_S
    monkeypatch.setattr(time, "monotonic", lambda: real() - offset)
    yield
    monkeypatch.undo()
    for _ in range(2):  # a tick may land between the undo and the reset: reset again after it
        _freeze.WATCHDOG.last = time.monotonic()
        _freeze.WATCHDOG._gaps.clear()
        time.sleep(1.5 * _freeze.TICK_S)


def test_an_interval_commit_falls_due_by_the_consumers_clock_on_a_fresh_machine(
    fresh_boot: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    test_offsets.test_interval_commits_happen_inside_poll_on_the_polling_thread_with_the_leader_epoch(
        monkeypatch
    )


def test_auto_commit_off_commits_nothing_on_a_fresh_machine(
    fresh_boot: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    test_offsets.test_auto_commit_off_means_kafka_coop_commits_nothing_but_what_the_app_commits(monkeypatch)


def test_a_gap_shorter_than_the_session_holds_nothing_on_a_fresh_machine(fresh_boot: None) -> None:
    test_freeze.test_a_gap_shorter_than_the_session_changes_nothing(MockedClock())


def test_a_cutovers_bound_passes_on_the_consumers_clock_on_a_fresh_machine(fresh_boot: None) -> None:
    test_reconfigure.test_a_cutover_waits_for_its_rejoin_by_the_consumers_clock()

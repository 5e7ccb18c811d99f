"""The consumer's one clock: every deadline, interval, freeze window and eviction age reads it.

A consumer is given one (`SYSTEM_CLOCK`, unless a test passes `kafka_coop.testing.MockedClock`) and hands
it to its core, freeze guard, handler and fatal rules: no part reads the process's clock beside another
that reads a moved one (a test clock at 1000 s against a machine up for two minutes read as a freeze).
"""

from __future__ import annotations

from time import monotonic, sleep
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float:
        """Monotonic seconds."""
        ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The process's monotonic clock (`time` is `time.monotonic` itself: the hot path pays no call)."""

    time = staticmethod(monotonic)
    sleep = staticmethod(sleep)


SYSTEM_CLOCK = SystemClock()


class Flagged(Protocol):
    """What a watchdog's tick stamps: a consumer's `CallState`."""

    tick: float
    slow: bool


class Witness(Protocol):
    """The watchdog a consumer registers with: `_freeze.WATCHDOG`, or a test's clock."""

    def register(self, state: Flagged) -> None:
        """Stamp `state` at every tick from now on."""
        ...

    def stopped_for(self, since: float, now: float) -> float:
        """The longest stretch between `since` and `now` in which this process did not run (seconds)."""
        ...


class WitnessedClock(Clock, Witness, Protocol):
    """What a test passes as a consumer's `clock=` (`kafka_coop.testing.MockedClock`): a clock that is the
    watchdog of the process it moves, so no part of the consumer reads the process's clock."""

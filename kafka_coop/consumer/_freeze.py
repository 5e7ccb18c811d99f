"""The watchdog: one daemon thread per process that wakes every `TICK_S`, and what it is for.

It raises a flag on every live consumer at each tick (`CallState.slow`) and stamps the tick's time on it
(`CallState.tick`), so a `poll`/`consume` reads one attribute and compares the clock with the last tick:
the call takes its slow path at most ten times a second, or when the watchdog has not ticked for
`GAP_S` (a freeze it has not woken from yet), and there it does what needs time (an interval commit that
is due, folding marks, the freeze check).

**Frozen processes.** A member whose whole process stopped (SIGSTOP, a frozen VM or container, a
stop-the-world pause) for longer than its group waits has, for the broker, left: its session ran out and
its partitions went to another member. librdkafka's own threads were frozen too, so on thaw nothing in
the client knows that yet, and the records it prefetched before the freeze come out of the next
`poll`/`consume` at once: a zombie processing records that already belong to someone else (seen in the
chaos run for classic static and KIP-848 members, docs/benchmarks.md). A frozen process also stops the
watchdog, and monotonic time keeps running, so when it wakes it sees its own gap: that gap is the
freeze, wherever the consumer was (between calls, or inside a `poll()` that blocks with no timeout).
An idle `poll(30)`, or an application busy for longer than its session (legal up to
max.poll.interval.ms, librdkafka heartbeats meanwhile), is no gap: the watchdog kept ticking. When a
freeze longer than `limit_s` falls in the window since the consumer's previous slow path, its records
are held back until the group answered (`FreezeGuard`).

What it cannot see: a freeze shorter than the limit, or a record handed out before the freeze. (Records
a call returns after the thaw before the watchdog thread has run again were a blind spot while the call
path read only the flag: the SIGSTOP broker test handed out such a batch in 4 of 6 runs on a loaded machine.)
Processing stays at-least-once; a zombie's work must be idempotent.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections import deque

from kafka_coop._vocab import RebalanceProtocol
from kafka_coop.consumer._clock import SYSTEM_CLOCK, Clock, Flagged, Witness

TICK_S = 0.1
# A tick later than this is a gap worth remembering (scheduling jitter on a loaded box stays below it).
GAP_S = 1.0
# How long a hold waits for the group's answer at most: a thawed client's first heartbeat goes out at
# once (its timer is overdue), so the eviction, if there was one, is back within a round trip or two.
HOLD_S = 10.0
# The broker's default (and default minimum) KIP-848 session, group.consumer.session.timeout.ms: a
# KIP-848 client does not know the broker's value.
KIP848_BROKER_SESSION_S = 45.0
LIBRDKAFKA_SESSION_S = 45.0
LIBRDKAFKA_MAX_POLL_S = 300.0


class PyCallState:
    """The per-consumer state the hot path reads: `slow` (take the slow path), `tick` (the watchdog's
    last tick, stamped on every live consumer's state) and `held` (drop-in: the batch the application
    holds now, not done until it calls again or commits). The C extension `_fastcall` has the same type
    with the same fields, which its `FastPoll` reads as struct fields."""

    __slots__ = ("__weakref__", "held", "slow", "tick")

    def __init__(self) -> None:
        self.slow = True
        self.tick = SYSTEM_CLOCK.time()
        self.held: object = None


try:
    from kafka_coop.consumer._fastcall import CallState as _CCallState  # the compiled wheel

    CallState: type[PyCallState] = _CCallState  # type: ignore[assignment]
except ImportError:  # pragma: no cover - the pure wheel
    CallState = PyCallState


class Watchdog:
    """The daemon thread: ticks every `tick_s`, flags every registered `CallState`, remembers its gaps."""

    def __init__(self, tick_s: float = TICK_S, clock: Clock = SYSTEM_CLOCK) -> None:
        self.tick_s = tick_s
        self.clock = clock
        self.last = clock.time()
        self._gaps: deque[tuple[float, float]] = deque(maxlen=64)  # (noted at, gap)
        self._states: weakref.WeakSet[Flagged] = weakref.WeakSet()
        self._pid: int | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def register(self, state: Flagged) -> None:
        with self._lock:
            self._states.add(state)
        self.ensure_running()

    def ensure_running(self) -> None:
        """Start the thread in this process (again after a fork: threads do not survive one)."""
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self.last = self.clock.time()
            threading.Thread(target=self._run, name="kafka-coop-watchdog", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.tick_s):
            now = self.clock.time()
            self.record(now)
            for state in list(self._states):
                state.tick = now
                state.slow = True

    def record(self, now: float) -> None:
        gap = now - self.last
        if gap > GAP_S:
            self._gaps.append((now, gap))
        self.last = now

    def stopped_for(self, since: float, now: float) -> float:
        # A gap noted after `now` came from a faked clock (a test's monkeypatch or freezegun while the
        # thread ticked): a monotonic clock never runs back, so it is no freeze of this window.
        noted = max((gap for at, gap in list(self._gaps) if since < at <= now), default=0.0)
        return max(noted, now - self.last - self.tick_s, 0.0)


WATCHDOG = Watchdog()


def freeze_limit_s(
    protocol: RebalanceProtocol, session_timeout_ms: int | None, max_poll_interval_ms: int | None
) -> float:
    """How long this member may not run before the records it holds may belong to someone else.

    Classic: its session (a frozen process sends no heartbeat), or max.poll.interval.ms if shorter.
    KIP-848: max.poll.interval.ms, or the broker's default session (45 s) if shorter.
    """
    max_poll = (max_poll_interval_ms / 1000.0) if max_poll_interval_ms else LIBRDKAFKA_MAX_POLL_S
    if protocol == "consumer":
        return min(max_poll, KIP848_BROKER_SESSION_S)
    session = (session_timeout_ms / 1000.0) if session_timeout_ms else LIBRDKAFKA_SESSION_S
    return min(max_poll, session)


class FreezeGuard:
    """The freeze check of one consumer, run in its slow path; the driver seeks held records back.

    A hold begins when the witness saw a freeze longer than `limit_s` since the previous check. It ends
    at the first call after the group answered (a rebalance callback or fatal error, counted by the
    handler's `rebalances`; the records of the call in which it answered are still held, since they may
    have been fetched before it), or after `hold_s`.
    """

    def __init__(
        self,
        limit_s: float,
        log: logging.Logger,
        *,
        clock: Clock = SYSTEM_CLOCK,
        witness: Witness | None = None,
        hold_s: float = HOLD_S,
    ) -> None:
        self.limit_s = limit_s
        self.hold_s = hold_s
        self.clock = clock
        self.checked_at = clock.time()
        self.holding = False
        self.hold_until = 0.0
        self.answered = False
        self.held = 0  # records held back so far (fetched again if still owned)
        self._answers = 0
        self._log = log
        self._witness: Witness = witness if witness is not None else WATCHDOG

    def restart(self, rebalances: int = 0) -> None:
        """A new start line (subscribe): the time before it is no gap."""
        self.checked_at = self.clock.time()
        self._answers = rebalances

    def verdict(self, now: float, rebalances: int) -> bool:
        """True when the records of the call that just returned may be handed out; False: hold them."""
        since, self.checked_at = self.checked_at, now
        answered_now = rebalances != self._answers
        self._answers = rebalances
        if not self.holding:
            stopped = self._witness.stopped_for(since, now)
            if stopped <= self.limit_s:
                return True
            self.holding, self.hold_until, self.answered = True, now + self.hold_s, answered_now
            self._log.warning(
                "This consumer did not run for %.1f s, longer than its group waits (%.0f s): records fetched "
                "before are held back until the group confirms its partitions (at most %.0f s).",
                stopped,
                self.limit_s,
                self.hold_s,
            )
            return False
        if answered_now:  # the group answered inside this call: what it returned may predate the answer
            self.answered = True
            return False
        if self.answered or now >= self.hold_until:
            self.holding = False
            return True
        return False

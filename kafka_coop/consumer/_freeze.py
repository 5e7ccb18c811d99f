"""Records fetched before this process stopped running are not handed out until the group has had its say.

A member whose whole process stopped (SIGSTOP, a frozen VM or container, a stop-the-world pause) for
longer than its group waits has, for the broker, left: its session ran out and its partitions went to
another member, which processes them from the last commit. librdkafka's own threads were frozen too, so
on thaw nothing in the client knows that yet. The records it prefetched before the freeze sit in its
queue, and the next `poll`/`consume` returns them at once, before the first heartbeat can come back
with the eviction: a zombie processing records that already belong to someone else (seen in the chaos
run for classic static and KIP-848 members, docs/benchmarks.md).

What the consumer can know is the clock: the time since the previous `poll`/`consume` returned. When that
gap is longer than the group can wait (`limit_s`, see `freeze_limit_s`), kafka-coop holds back every
record until the group answered: a rebalance callback (lost, revoked, assigned) or a fatal error after
the hold began ends it at once, and then what librdkafka still delivers is for partitions it owns now. A
held record is not dropped: its partition is sought back to the first held offset, so if this member
still owns it (the broker's session was longer than the gap) it is fetched again and delivered when the
hold ends, at the latest `hold_s` later. A gap that a call's own timeout explains (an idle `poll(30)`)
is not a freeze. librdkafka's max.poll.interval.ms timer cannot do this: it runs in a thread that was
frozen too, and the application's next poll resets it before it fires.

A long gap alone is not a freeze: an application that spends longer than its session on one batch
(legal up to max.poll.interval.ms, librdkafka heartbeats from its own thread meanwhile) keeps its
partitions. The witness that tells the two apart is `Ticker`, one daemon thread per process that notes
the time every `TICK_S`: if it ticked through the gap, the process ran and nothing is held; a stretch
without ticks longer than the limit is the freeze. (An application holding the GIL in one C call for
longer than the limit looks frozen to it: its records are held and fetched again, never lost.)

The check costs two clock reads and one comparison per `poll`/`consume` call; only a call that returns
after a long gap takes the slow path.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from kafka_coop._vocab import RebalanceProtocol

# How long a hold waits for the group's answer at most: a thawed client's first heartbeat goes out at
# once (its timer is overdue), so the eviction, if there was one, is back within a round trip or two.
HOLD_S = 10.0
# The broker's default (and default minimum) KIP-848 session, group.consumer.session.timeout.ms: a
# KIP-848 client does not know the broker's value.
KIP848_BROKER_SESSION_S = 45.0
LIBRDKAFKA_SESSION_S = 45.0
LIBRDKAFKA_MAX_POLL_S = 300.0


TICK_S = 0.5


class Witness(Protocol):
    def stopped_for(self, since: float, now: float) -> float:
        """The longest stretch between `since` and `now` in which this process did not run (seconds)."""
        ...


class Ticker:
    """A daemon thread that notes the monotonic time every `tick_s`; the gaps between its notes are the
    stretches the process did not run. Only long gaps are kept (the last 64)."""

    def __init__(self, tick_s: float = TICK_S) -> None:
        self.tick_s = tick_s
        self.last = time.monotonic()
        self._gaps: deque[tuple[float, float]] = deque(maxlen=64)  # (noted at, gap)
        self._pid: int | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def ensure_running(self) -> None:
        """Start the thread in this process (again after a fork: threads do not survive one)."""
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self.last = time.monotonic()
            threading.Thread(target=self._run, name="kafka-coop-ticker", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.tick_s):
            self.record(time.monotonic())

    def record(self, now: float) -> None:
        gap = now - self.last
        if gap > 2 * self.tick_s:
            self._gaps.append((now, gap))
        self.last = now

    def stopped_for(self, since: float, now: float) -> float:
        noted = max((gap for at, gap in list(self._gaps) if at > since), default=0.0)
        return max(noted, now - self.last - self.tick_s, 0.0)


_TICKER = Ticker()


def process_witness() -> Witness:
    """The process-wide ticker, running."""
    _TICKER.ensure_running()
    return _TICKER


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


def call_timeout_s(args: Sequence[Any], kwargs: Mapping[str, Any], position: int) -> float | None:
    """The `timeout` a poll/consume call was given (seconds), None for "block until something comes"."""
    timeout = kwargs.get("timeout", args[position] if len(args) > position else None)
    if timeout is None or not isinstance(timeout, int | float) or timeout < 0:
        return None
    return float(timeout)


class FreezeGuard:
    """The state of the check, shared by both drivers (they do the seeking: sync or awaited).

    `last_end` and `hold_until` are read on every call (the fast path); `verdict` is the slow path.
    `last_rebalance` is a callable returning the monotonic time of the latest rebalance callback or fatal
    error (the handler's `last_rebalance_at`).
    """

    def __init__(self, limit_s: float, log: logging.Logger, *, hold_s: float = HOLD_S) -> None:
        self.limit_s = limit_s
        self.hold_s = hold_s
        self.last_end = time.monotonic()
        self.hold_until = 0.0
        self.hold_from = 0.0
        self.held = 0  # records held back so far (re-fetched if still owned)
        self._log = log
        self._witness = process_witness()

    def restart(self) -> None:
        """A new start line (subscribe): the time before it is no gap."""
        self.last_end = time.monotonic()

    def verdict(self, start: float, end: float, timeout_s: float | None, last_rebalance: float) -> bool:
        """True when the records this call returned may be handed out; False: hold them back."""
        previous, self.last_end = self.last_end, end
        between = start - previous
        inside = end - start - timeout_s if timeout_s is not None else 0.0
        gap = max(between, inside)
        if (
            gap > self.limit_s
            and last_rebalance < start
            and end >= self.hold_until
            and self._witness.stopped_for(previous, end) > self.limit_s
        ):
            self.hold_from, self.hold_until = end, end + self.hold_s
            self._log.warning(
                "This consumer did not run for %.1f s, longer than its group waits (%.0f s): records fetched "
                "before are held back until the group confirms its partitions (at most %.0f s).",
                gap,
                self.limit_s,
                self.hold_s,
            )
        if end >= self.hold_until:
            return True
        if last_rebalance > self.hold_from:  # the group has answered: what is delivered now is owned
            self.hold_until = 0.0
            return True
        return False

    def seek_targets(self, messages: Iterable[Any]) -> list[tuple[str, int, int]]:
        """The first held offset of each partition in `messages` (records only, errors pass)."""
        first: dict[tuple[str, int], int] = {}
        for msg in messages:
            if msg is None or msg.error() is not None:
                continue
            key = (msg.topic(), msg.partition())
            offset = msg.offset()
            if key not in first or offset < first[key]:
                first[key] = offset
            self.held += 1
        return [(topic, partition, offset) for (topic, partition), offset in first.items()]


def passed_through(messages: Sequence[Any]) -> list[Any]:
    """What a held `consume` still returns: error events (they carry no records)."""
    return [m for m in messages if m.error() is not None]

"""The one driver base: everything a kafka-coop consumer does around its client, for both drivers.

`CoopConsumer` calls it from the application's thread; `CoopAIOConsumer` from its pool's workers (and
gives it a `run_hook` that runs hooks and sinks on the event loop). It owns:

- the **call path**: `poll`/`consume` closures of a fixed signature around the client's own. The fast
  path is the client call, one attribute store (drop-in: the batch the application now holds) or one
  `deque.append` (explicit marks: what was handed out), one attribute read (`CallState.slow`, raised by
  the watchdog ten times a second and by every callback) and one clock read against the watchdog's last
  tick (a call that returns after a freeze, before the frozen watchdog thread has run again, must not
  take the fast path: the SIGSTOP test saw such a batch handed out). The drop-in `poll`, paid once per
  record, is the same path in C when a source install built its extension with KAFKA_COOP_BUILD_C=1
  (`_fastcall.FastPoll`: ~20 ns a call where the closure costs ~100 ns; the wheel is pure Python). The
  slow path raises a fatal error or a hook's interrupt (seeking the call's records back: nothing it took
  is lost), applies deferred seeks, runs the freeze check, and makes the interval commit when it is due:
  on the polling thread, inside `poll`/`consume`, never behind the application's back (the Java
  consumer's rule);
- the **committer**: every commit is kafka-coop's, with explicit offsets and the committed record's
  leader epoch; the client itself stores and commits nothing. Interval, revoke, close and unassign
  commits are made on the application's behalf only with `enable.auto.commit=true` (librdkafka's and
  the Java client's rule); none goes below what the group holds as far as kafka-coop knows
  (`known_floor`: confirmed, or sent by the application's own `commit(message=/offsets=)`);
- the **step executor** the handler's rebalance generators run on, on the callback's own thread;
- **close**: commit what is done, close the client (revoking through the handler), bounded by a timeout
  if asked.

Locking: `_lock` guards kafka-coop's own bookkeeping and is never held across a client call (the client
has its own gate, and a rebalance callback holding the gate takes `_lock`).
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_INVALID, KafkaError, KafkaException, Message
from confluent_kafka import TopicPartition as ClientPartition

from kafka_coop._waiting import StillRunning, bounded_call
from kafka_coop.consumer._args import check_commit, check_partition, check_store
from kafka_coop.consumer._client_callbacks import ClientErrors, ClientLog
from kafka_coop.consumer._clock import SYSTEM_CLOCK
from kafka_coop.consumer._fatal import describe_error, error_code
from kafka_coop.consumer._freeze import GAP_S, CallState, FreezeGuard

try:
    from kafka_coop.consumer._fastcall import CallState as FastCallState
    from kafka_coop.consumer._fastcall import FastPoll
except ImportError:  # pragma: no cover - the wheel (pure Python): the Python path below
    FastPoll = FastCallState = None  # type: ignore[assignment,misc]
from kafka_coop.consumer._handler import client_partitions
from kafka_coop.consumer._offsets import Ledger, commit_offset, first_offsets
from kafka_coop.consumer._setup import LIBRDKAFKA_LOGGER, DriverSetup
from kafka_coop.consumer._steps import (
    Assign,
    CallHook,
    Commit,
    Emit,
    ReadAssignment,
    ReadCommitted,
    ReadMemberId,
    Release,
    Step,
    Steps,
    Unassign,
    Wait,
    run_steps,
)
from kafka_coop.consumer._subscription import SubscriptionWatch, restart_watch
from kafka_coop.errors import ConsumerFailed
from kafka_coop.events import CommittedOffset, RebalanceEvent
from kafka_coop.events import PartitionKey as Key

# How long close serves an incremental rebalance under way before it commits again (see close()).
CLOSE_REBALANCE_WAIT_S = 5.0
# How long close() waits for the client's own close of a member its group dropped (`_close_client`).
CLIENT_CLOSE_WAIT_S = 30.0
HELD_NOW = object()
# A commit refused with one of these was sent while the group rebalanced: made again when it ends.
REBALANCE_CODES = frozenset(
    {
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.STALE_MEMBER_EPOCH,
    }
)
# ... and at the latest this long after (KIP-848: a new epoch may come with no rebalance callback).
STALE_EPOCH_RETRY_S = 0.5
# A seek librdkafka could not apply because fetching had not started where the seek could land.
NOT_FETCHING_YET = (KafkaError._STATE, KafkaError._OUTDATED)
# Explicit marks keep every record handed out alive until the next fold; folding every few hundred
# records keeps that short-lived for the garbage collector (measured: holding a tick's worth, ~50,000
# records, cost ~0.3 µs per record in gen-2 collections; bench/wrapper_overhead.py, poll-mark).
FOLD_RECORDS = 256
FOLD_BATCHES = 4  # `commit()`'s default: the batch the application holds at the call is done
RunHook = Callable[[Callable[..., Any], tuple[Any, ...]], Any]
ClientFactory = Callable[[dict[str, Any]], Any]


def call_directly(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """The sync driver's hook runner."""
    return fn(*args)


def commit_partition(key: Key, offset: int, epoch: int | None, metadata: str | None) -> ClientPartition:
    """One explicit commit offset, with the leader epoch and any `store_offsets` metadata."""
    leader_epoch = -1 if epoch is None else epoch
    if metadata is None:
        return ClientPartition(key[0], key[1], offset, leader_epoch=leader_epoch)
    return ClientPartition(key[0], key[1], offset, metadata, leader_epoch=leader_epoch)


@dataclass
class CloseReport:
    """What `close()` committed, and what it could not."""

    committed: list[CommittedOffset] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class Core:
    """One consumer's client and everything kafka-coop does around it (see the module docstring)."""

    def __init__(
        self,
        prepared: DriverSetup,
        factory: ClientFactory,
        *,
        run_hook: RunHook = call_directly,
        error_cb: Callable[[Any], Any] | None = None,
        on_commit: Callable[[Any, Any], Any] | None = None,
    ) -> None:
        self.prepared = prepared
        self.handler = prepared.handler
        self.log = prepared.log
        self.run_hook = run_hook
        self.clock = prepared.clock
        self.state = CallState()
        self.guard = FreezeGuard(
            prepared.freeze_limit_s, prepared.log, clock=prepared.clock, witness=prepared.witness
        )
        self.ledger: Ledger | None = Ledger() if prepared.marks else None
        self.floors: dict[Key, int] = {}  # where kafka-coop sought a partition to: done below it
        # Drop-in: each partition's position as read by the last slow call (at most a tick old), and
        # the partitions sought since (their position may not show the seek yet): what a call that
        # raised had handed out before it, for `broken_call`.
        self.reached: dict[Key, int] = {}
        self.sought: set[Key] = set()
        self.confirmed: dict[Key, int] = {}  # what the broker confirmed kafka-coop committed
        self.sent: dict[Key, int] = {}  # what kafka-coop sent last (an interval commit may be in flight)
        # What the application committed itself with explicit offsets (`commit(message=/offsets=)`), as
        # sent: a floor for every later commit of kafka-coop's (never rewind what the app committed).
        self.app_sent: dict[Key, int] = {}
        # A commit refused because the group is rebalancing: sent again as soon as the rebalance ends.
        self.retry_after_rebalance = False
        # on_commit calls of commits kafka-coop answered itself (an asynchronous `commit()` with nothing
        # new): made inside the next poll/consume, where librdkafka makes its own.
        self.deferred_commit_cbs: deque[tuple[Any, list[ClientPartition]]] = deque()
        self.pending_seeks: dict[Key, ClientPartition] = {}
        # Seeks made but not yet seen to hold: partition -> [offset sought, seeks made again]
        self.unconfirmed_seeks: dict[Key, list[int]] = {}
        self.manual: set[Key] = set()  # partitions the application assigned itself (no group)
        self.topics: set[str] = set()  # subscribed or assigned: librdkafka knows their partitions
        # Calls whose await was cancelled (asyncio), and the records they took: handed out by the next
        # call, and not done until then.
        self.cancelled: deque[concurrent.futures.Future[Any]] = deque()
        self.carry: list[Any] = []
        self.warnings: collections.deque[str] = collections.deque()  # _subscription's, for the sink
        self.fatal_text: str | None = None
        self.subscribed = False
        self.closed = False
        self.next_commit = self.clock.time() + prepared.interval_s
        self._close_done: object = None
        self._close_reported = False
        self._lock = threading.Lock()
        self._user_on_commit = on_commit
        self.client_log = ClientLog(
            prepared.callbacks.get("logger") or logging.getLogger(LIBRDKAFKA_LOGGER),
            self._on_fatal_log,
            self.handler.note_eviction,
        )
        self.errors = ClientErrors(prepared.log, prepared.settings.bootstrap_servers, error_cb)
        conf = {
            **prepared.client_conf(),
            "logger": self.client_log,
            "error_cb": self.errors,
            "on_commit": self._on_commit,
        }
        self.inner: Any = factory(conf)
        self.state.tick = self.clock.time()
        prepared.witness.register(self.state)

    # --- the call path ---------------------------------------------------------------------------
    def make_poll(self, *, hand_out: bool = True) -> Callable[[float], Message | None]:
        """`poll(timeout)`: the client's, one attribute read on the fast path (see the module docstring).
        `hand_out=False` (asyncio): the caller registers what it hands out itself, once it has."""
        inner_poll, state, slow, broken = self.inner.poll, self.state, self._slow_poll, self.broken_call
        clock = self.clock.time  # a stale tick: the watchdog has not run since a freeze
        if self.ledger is None:
            # The same path, in C (it reads the process's clock: not for a test's)
            if FastPoll is not None and isinstance(state, FastCallState) and self.clock is SYSTEM_CLOCK:
                fast: Callable[[float], Message | None] = FastPoll(
                    inner_poll, state, slow, broken, hand_out, GAP_S
                )
                return fast

            def poll(timeout: float = -1) -> Message | None:
                try:
                    msg = inner_poll(timeout)
                except BaseException:
                    broken(1)
                    raise
                state.held = msg
                if state.slow or clock() - state.tick > GAP_S:
                    return slow(msg, hand_out)
                return msg  # type: ignore[no-any-return]

            return poll
        handed_out, fold = self.ledger.handed, self.fold
        handed = handed_out.append
        if not hand_out:

            def poll_unregistered(timeout: float = -1) -> Message | None:
                try:
                    msg = inner_poll(timeout)
                except BaseException:
                    broken(1)
                    raise
                if state.slow or clock() - state.tick > GAP_S:
                    return slow(msg, hand_out)
                return msg  # type: ignore[no-any-return]

            return poll_unregistered

        def poll_marked(timeout: float = -1) -> Message | None:
            try:
                msg = inner_poll(timeout)
            except BaseException:
                broken(1)
                raise
            if state.slow or clock() - state.tick > GAP_S:
                return slow(msg, hand_out)
            if msg is not None:
                # Fold before registering it: the records folded are then all marked (in the
                # sequential loop), none left over for the slower bookkeeping.
                if len(handed_out) >= FOLD_RECORDS:
                    fold()
                handed(msg)
            return msg  # type: ignore[no-any-return]

        return poll_marked

    def make_consume(self, *, hand_out: bool = True) -> Callable[[int, float], list[Message]]:
        inner_consume, state, slow, broken = (
            self.inner.consume,
            self.state,
            self._slow_consume,
            self.broken_call,
        )
        clock = self.clock.time
        if self.ledger is None:

            def consume(num_messages: int = 1, timeout: float = -1) -> list[Message]:
                try:
                    messages = inner_consume(num_messages, timeout)
                except BaseException:
                    broken(num_messages)
                    raise
                state.held = messages
                if state.slow or clock() - state.tick > GAP_S:
                    return slow(messages, hand_out)
                return messages  # type: ignore[no-any-return]

            return consume
        handed_out, fold = self.ledger.handed, self.fold
        handed = handed_out.append
        if not hand_out:

            def consume_unregistered(num_messages: int = 1, timeout: float = -1) -> list[Message]:
                try:
                    messages = inner_consume(num_messages, timeout)
                except BaseException:
                    broken(num_messages)
                    raise
                if state.slow or clock() - state.tick > GAP_S:
                    return slow(messages, hand_out)
                return messages  # type: ignore[no-any-return]

            return consume_unregistered

        def consume_marked(num_messages: int = 1, timeout: float = -1) -> list[Message]:
            try:
                messages = inner_consume(num_messages, timeout)
            except BaseException:
                broken(num_messages)
                raise
            if state.slow or clock() - state.tick > GAP_S:
                return slow(messages, hand_out)
            if len(handed_out) >= FOLD_BATCHES:  # (before registering it: see poll_marked)
                fold()
            handed(messages)
            return messages  # type: ignore[no-any-return]

        return consume_marked

    def _slow_poll(self, msg: Any, hand_out: bool) -> Message | None:
        out = self._slow([] if msg is None else [msg], hand_out)
        first: Message | None = out[0] if out else None
        if self.ledger is None:
            self.state.held = first
        return first

    def _slow_consume(self, messages: list[Any], hand_out: bool) -> list[Any]:
        return self._slow(messages, hand_out)

    def _slow(self, messages: list[Any], hand_out: bool) -> list[Any]:
        """Everything the fast path leaves out; returns what may be handed out."""
        state, handler = self.state, self.handler
        state.slow = False
        if self.fatal_text is not None and handler.failure is None:
            self.run(handler.fail(handler.fatal_from_log(self.fatal_text)))
        if handler.failure is not None:
            state.slow = True  # every later call raises it too
            state.held = None
            raise handler.failure
        interrupt = handler.take_interrupt()
        if interrupt is not None:  # a hook's BaseException: the rebalance is done; nothing is lost
            self.seek_back(messages)
            state.held = None
            state.slow = True
            raise interrupt
        while self.warnings:  # events go to the sink from the polling thread, as every event does
            self.emit(handler.lifecycle("warning", handler.member_id, error=self.warnings.popleft()))
        while self.deferred_commit_cbs:
            self._on_commit(*self.deferred_commit_cbs.popleft())
        now = self.clock.time()
        if self.pending_seeks:
            messages = self._apply_pending_seeks(messages)
        if self.unconfirmed_seeks:
            messages = self._confirm_seeks(messages)
        if not self.guard.verdict(now, handler.rebalances):
            self.guard.held += sum(1 for m in messages if m.error() is None)
            self.seek_back(messages)
            messages = [m for m in messages if m.error() is not None]
        if self.guard.holding or self.pending_seeks or self.unconfirmed_seeks:
            state.slow = True
        if self.ledger is None:
            state.held = messages
            self._note_reached()
        elif hand_out:
            self.ledger.handed.append(messages)
        if self.prepared.auto_commit and now >= self.next_commit:
            self.next_commit = now + self.prepared.interval_s
            self.commit_interval()
        elif self.ledger is not None and self.ledger.handed:
            self.fold()
        return messages

    def fold(self) -> None:
        """Take in what was handed out and marked since the last fold (explicit marks)."""
        if self.ledger is not None:
            with self._lock:
                self.ledger.fold()

    def _note_reached(self) -> None:
        """Drop-in, on a slow call (about ten a second): where each partition is now (see `reached`)."""
        keys = self.keys()
        if not keys:
            return
        with self._lock:
            skip, self.sought = self.sought, set()
        try:
            positions = self.inner.position(client_partitions(keys))
        except Exception:  # closed, or the group terminated
            return
        with self._lock:
            skip |= self.sought | self.unconfirmed_seeks.keys() | self.pending_seeks.keys()
            for tp in positions:
                key = (tp.topic, tp.partition)
                if key in skip or tp.error is not None or tp.offset < 0:
                    self.reached.pop(key, None)
                else:
                    self.reached[key] = tp.offset

    def _sought(self, key: Key) -> None:
        """(under `_lock`) `key` was sought: its `reached` no longer says where it is."""
        self.reached.pop(key, None)
        self.sought.add(key)

    def broken_call(self, at_most: int) -> None:
        """The client's `poll`/`consume` raised (Ctrl-C, an exception from a conf callback): confluent-kafka
        then drops the records the call had taken, after librdkafka moved the position past them. Which
        ones is unknown, so every partition goes back `at_most` offsets from its position: records may
        come twice, none is lost (and none is committed unseen: the commit goes by the seek). Not
        further back than where the last slow call saw it (drop-in: `reached`), so a partition the call
        took nothing from (confluent-kafka's wait for records, interrupted between its 200 ms chunks,
        took none at all) is not sought back."""
        held, self.state.held = self.state.held, None
        self.state.slow = True
        try:
            positions = self.inner.position(client_partitions(self.keys()))
        except Exception:  # closed, or the group terminated: nothing to seek
            return
        # Not further back than what is known done: the last commit, and the batch the call came after;
        # under explicit marks, what the ledger registered as handed out before the call (exactly where
        # the records the call took begin: a call that took none fetches nothing again).
        known = dict(self.confirmed)
        if self.ledger is not None:
            with self._lock:
                self.ledger.fold()
                for key in self.keys():
                    high = self.ledger.handed_high(key)
                    if high >= 0:
                        known[key] = max(known.get(key, 0), high)
        batch: list[Any] = held if isinstance(held, list) else [] if held is None else [held]
        for msg in batch:
            if msg.error() is None:
                key = (msg.topic(), msg.partition())
                known[key] = max(known.get(key, 0), msg.offset() + 1)
        with self._lock:
            reached = dict(self.reached)
        for tp in positions:
            if tp.error is not None or tp.offset < 0:
                continue
            key = (tp.topic, tp.partition)
            back = max(tp.offset - at_most, known.get(key, 0))
            seen = reached.get(key)
            if seen is not None and seen <= tp.offset:  # (above it: sought back since, unseen)
                back = max(back, seen)
            if back >= tp.offset:
                continue  # the call took nothing of it
            try:
                self.inner.seek(ClientPartition(tp.topic, tp.partition, back))
            except Exception as exc:
                self.log.debug("seek back %s-%d: %s", tp.topic, tp.partition, describe_error(exc))
                continue
            with self._lock:
                self.floors[key] = back
                self._sought(key)

    def seek_back(self, messages: Iterable[Any]) -> None:
        """Records the client handed out but the application will not get: fetch them again (if this
        member still owns the partition). Everything before them was handed out: done, once the
        application calls again."""
        for (topic, partition), offset in first_offsets(messages).items():
            try:
                self.inner.seek(ClientPartition(topic, partition, offset))
            except KafkaException as exc:  # no longer assigned: the new owner reads them
                self.log.debug("seek back %s-%d: %s", topic, partition, describe_error(exc))
                continue
            with self._lock:
                self.floors[(topic, partition)] = offset
                self._sought((topic, partition))

    def settle_cancelled(self) -> None:
        """Before any other call goes on (asyncio): wait for the calls whose await was cancelled, and carry
        what they took to the next `consume`/`poll` (it never reached the application). Until then the
        client's position is past records nobody saw, so nothing may read it for a commit."""
        taken = []  # those cancelled so far: one cancelled later may be the call running this
        while self.cancelled:
            taken.append(self.cancelled.popleft())
        for future in taken:
            try:
                result = future.result()
            except BaseException as exc:  # cancelled before it ran, or it raised: it handed out nothing
                self.log.debug("a cancelled call ended without records: %s", describe_error(exc))
                continue
            batch = result if isinstance(result, list) else [] if result is None else [result]
            self.state.held = None
            with self._lock:
                self.carry.extend(m for m in batch if m.error() is None)

    def take_carry(self, count: int) -> list[Any]:
        """Up to `count` carried records, handed out now (the application has them from here on)."""
        with self._lock:
            batch, self.carry = self.carry[:count], self.carry[count:]
        if self.ledger is None:
            self.state.held = batch
        return batch

    # --- seeks -------------------------------------------------------------------------------------
    def seek(self, partition: ClientPartition) -> None:
        """`seek`, also where librdkafka cannot yet (inside `on_assigned`, fetching not started: `_STATE`;
        or the assignment's fetch start, queued after the seek, was served first: `_OUTDATED`): then it
        is applied as soon as it can be, and nothing fetched before it is handed out."""
        check_partition(partition)
        key = (partition.topic, partition.partition)
        try:
            self.inner.seek(partition)
        except KafkaException as exc:
            if error_code(exc) not in NOT_FETCHING_YET or key not in self.keys():
                raise
            with self._lock:
                self.pending_seeks[key] = partition
            self.state.slow = True
            return
        self._note_seek(key, partition.offset)

    def _note_seek(self, key: Key, offset: int) -> None:
        with self._lock:
            # The application moved the partition itself: what it reads from here on is what it commits,
            # as with confluent (the never-rewind floor is for what it did not ask for).
            self.app_sent.pop(key, None)
            self.confirmed.pop(key, None)
            self._sought(key)
            if offset >= 0:
                self.floors[key] = offset
                self.unconfirmed_seeks[key] = [offset, 0]
            else:  # a logical offset (beginning, end): where it lands is the client's to say
                self.floors.pop(key, None)
                self.unconfirmed_seeks.pop(key, None)
        self.state.slow = True

    def _confirm_seeks(self, messages: list[Any]) -> list[Any]:
        """The first record of a partition sought says whether the seek held. librdkafka undoes a seek
        made while the partition's offset reset is in flight (no committed offset: its outdated
        ListOffsets reply restarts the reset, rdkafka_partition.c), so fetching starts where the reset
        says. A first record elsewhere than the offset sought: seek again, once (a gap in the log there,
        compaction or a transaction marker, gives the same record again), and hand out nothing of the
        partition fetched before it."""
        out: list[Any] = []
        again: set[Key] = set()
        for m in messages:
            if m.error() is not None:
                out.append(m)
                continue
            key = (m.topic(), m.partition())
            if key in again:
                continue
            with self._lock:
                sought = self.unconfirmed_seeks.get(key)
                if sought is not None and (m.offset() == sought[0] or sought[1] > 0):
                    del self.unconfirmed_seeks[key]
                    sought = None
            if sought is None:
                out.append(m)
                continue
            sought[1] += 1
            with self._lock:
                self._sought(key)
            try:
                self.inner.seek(ClientPartition(key[0], key[1], sought[0]))
            except KafkaException as exc:  # (not assigned any more) these records are handed out
                self.log.warning("seek %s-%d to %d again: %s", *key, sought[0], describe_error(exc))
                with self._lock:
                    self.unconfirmed_seeks.pop(key, None)
                out.append(m)
                continue
            self.log.info(
                "%s-%d: the first record after a seek to %d was %d; sought again",
                *key,
                *sought[:1],
                m.offset(),
            )
            again.add(key)
        return out

    def _apply_pending_seeks(self, messages: list[Any]) -> list[Any]:
        with self._lock:
            pending = dict(self.pending_seeks)
        waiting: set[Key] = set()
        for key, partition in pending.items():
            try:
                self.inner.seek(partition)
            except KafkaException as exc:
                if error_code(exc) in NOT_FETCHING_YET and key in self.keys():
                    waiting.add(key)  # fetching has not started yet
                    continue
                self.log.warning("seek %s-%d to %d: %s", *key, partition.offset, describe_error(exc))
            else:
                self._note_seek(key, partition.offset)
            with self._lock:
                self.pending_seeks.pop(key, None)
        # Records of a partition sought (or still to be) came from before the seek: not handed out.
        return [m for m in messages if m.error() is not None or (m.topic(), m.partition()) not in pending]

    # --- the committer -----------------------------------------------------------------------------
    def keys(self) -> list[Key]:
        """The partitions kafka-coop commits for: what the group gave, and what the app assigned."""
        return sorted({*self.handler.owned, *self.manual})

    def offsets(self, keys: Sequence[Key], *, done: object = None) -> list[ClientPartition]:
        """What is done of `keys`, as explicit offsets with the committed record's leader epoch, never
        below what the group holds as far as kafka-coop knows (`known_floor`: a commit never rewinds).

        Explicit marks: from the ledger alone (`Ledger.commit_point`), no client call. Drop-in: from the
        client's `position` (no client lock taken beyond it); the batch the application holds is not
        done, unless it is `done` (the application said so: `commit()`, a clean `close()`)."""
        if not keys:
            return []
        ledger = self.ledger
        out = []
        if ledger is not None:
            with self._lock:
                ledger.fold()
                points = {k: ledger.commit_point(k) for k in keys}
                carried = first_offsets(self.carry)  # taken, never handed out: never registered
                known = {k: self.known_floor(k) for k in keys}
            for key in keys:
                point = points[key]
                if point is None:
                    continue
                offset, epoch, metadata = point
                if key in carried:
                    offset = min(offset, carried[key])
                if offset < known[key]:
                    continue
                out.append(commit_partition(key, offset, epoch, metadata))
            return out
        with self._lock:
            floors = dict(self.floors)
            carried = first_offsets(self.carry)  # taken, never handed out: not done in any mode
            known = {k: self.known_floor(k) for k in keys}
        held = self.state.held
        holding: dict[Key, int] = {}
        if held is not None and held is not done:
            holding = first_offsets(held if isinstance(held, list) else [held])
        for key, first in carried.items():
            holding[key] = min(first, holding.get(key, first))
        positions = {(tp.topic, tp.partition): tp for tp in self.inner.position(client_partitions(keys))}
        for key in keys:
            tp = positions.get(key)
            position = tp.offset if tp is not None and tp.error is None and tp.offset >= 0 else None
            done_to = commit_offset(position, floors.get(key), held=holding.get(key))
            if done_to is None or done_to < known[key]:
                continue
            # The position's epoch is the last record handed out's: right only for the position itself.
            epoch = tp.leader_epoch if tp is not None and done_to == position else None
            out.append(commit_partition(key, done_to, epoch, None))
        return out

    def known_floor(self, key: Key) -> int:
        """What the group holds for `key` as far as kafka-coop knows (under `_lock`): what the broker
        confirmed, or what the application itself committed (`commit(message=)`, `commit(offsets=)`,
        counted from the moment it was sent). kafka-coop's own commits never go below it."""
        return max(self.confirmed.get(key, -1), self.app_sent.get(key, -1))

    def may_commit(self) -> str | None:
        """Why kafka-coop must not commit now, or None."""
        if self.prepared.transactional:
            return "the transaction owns the commit"
        if self.handler.failure is not None:
            return f"the consumer failed ({self.handler.failure.code})"
        if self.handler.evicted:
            return "this member was evicted (its member id was reset) and has not rejoined"
        return None

    def assignment_lost(self) -> KafkaError | None:
        """librdkafka's `_ASSIGNMENT_LOST`, as its own `commit()` would raise it: the member overran
        max.poll.interval.ms and its next poll has not served the loss yet. Asked of the client only
        when the last call returned longer ago than that (or the eviction was logged): a commit with no
        offsets, which sends nothing, since the client stores none (CLIENT_OWNS_NOTHING)."""
        if not self.handler.evicted and self.clock.time() - self.guard.checked_at <= self.prepared.max_poll_s:
            return None
        try:
            self.inner.commit(asynchronous=False)
        except KafkaException as exc:
            if error_code(exc) == KafkaError._ASSIGNMENT_LOST:
                return exc.args[0]  # type: ignore[no-any-return]
        return None

    def commit_interval(self) -> None:
        """The auto commit: what changed since the last one, asynchronously (on the polling thread)."""
        if self.may_commit() is not None:
            return
        try:
            offsets = [
                tp for tp in self.offsets(self.keys()) if self.sent.get((tp.topic, tp.partition)) != tp.offset
            ]
            if not offsets:
                return
            with self._lock:
                for tp in offsets:
                    self.sent[(tp.topic, tp.partition)] = tp.offset
            try:
                self.inner.commit(offsets=offsets, asynchronous=True)
            except BaseException:
                self._unsend(offsets)  # not sent: the next interval sends it again, changed or not
                raise
        except (KafkaException, RuntimeError) as exc:
            self.log.info("Interval commit not sent: %s", describe_error(exc))

    def commit_now(
        self, keys: Sequence[Key], *, done: object = None, on_behalf: bool = False
    ) -> list[ClientPartition]:
        """A synchronous commit of what is done of `keys`; the result lists, for every key committed now
        or before, the offset the group holds (per-partition errors included). `on_behalf` (a revoke,
        a close, an unassign: not the application's own call): only with `enable.auto.commit=true`, as
        librdkafka and the Java client commit on the application's behalf only then; otherwise it only
        reports what the application's own commits left."""
        if self.may_commit() is not None:
            return []
        offsets = []
        if self.prepared.auto_commit or not on_behalf:
            offsets = [
                tp
                for tp in self.offsets(keys, done=done)
                if self.confirmed.get((tp.topic, tp.partition)) != tp.offset
            ]
        result: list[ClientPartition] = []
        reported = on_behalf and self.prepared.auto_commit and self._user_on_commit is not None
        if offsets:
            with self._lock:
                for tp in offsets:
                    self.sent[(tp.topic, tp.partition)] = tp.offset
            try:
                result = list(self.inner.commit(offsets=offsets, asynchronous=False) or [])
            except KafkaException as exc:
                self._unsend(offsets)
                if reported:
                    self._report_commit(exc.args[0], offsets)
                raise
            except BaseException:
                self._unsend(offsets)
                raise
            self._confirm(result)
        fresh = {(tp.topic, tp.partition) for tp in result}
        earlier = [
            ClientPartition(k[0], k[1], self.confirmed[k])
            for k in keys
            if k in self.confirmed and k not in fresh
        ]
        # (an unchanged one once in a close: not again for the revoke that close's unsubscribe makes)
        if reported and (result or (earlier and not self._close_reported)):
            failed = next((tp.error for tp in result if tp.error is not None), None)
            self._report_commit(failed, result + earlier)
            self._close_reported = self.handler.closing
        return result + earlier

    def _report_commit(self, err: Any, partitions: list[ClientPartition]) -> None:
        """A commit librdkafka makes itself with `enable.auto.commit=true` (revoke, close, unassign)
        reaches `on_commit`; kafka-coop makes it synchronously, which librdkafka reports to no
        callback, so it reports it here (confluent-kafka reports even an unchanged one)."""
        assert self._user_on_commit is not None
        try:
            self.run_hook(self._user_on_commit, (err, partitions))
        except Exception:
            self.log.exception("on_commit raised")

    def commit_before_unassign(self, keys: Iterable[Key]) -> None:
        """The application unassigns partitions it assigned itself: what is done is committed first."""
        keys = sorted(keys)
        if keys and self.may_commit() is None:
            try:
                self.commit_now(keys, on_behalf=True)
            except KafkaException as exc:
                self.log.warning("Commit before unassign failed: %s", describe_error(exc))

    def _unsend(self, offsets: Iterable[ClientPartition]) -> None:
        with self._lock:
            for tp in offsets:
                key = (tp.topic, tp.partition)
                if self.sent.get(key) == tp.offset:
                    self.sent.pop(key, None)

    def _confirm(self, partitions: Iterable[Any]) -> None:
        with self._lock:
            for tp in partitions:
                key = (tp.topic, tp.partition)
                if tp.error is None and tp.offset >= 0:
                    self.confirmed[key] = tp.offset
                elif self.sent.get(key) == tp.offset:
                    self.sent.pop(key, None)  # failed: the next commit sends it again

    def release(self, keys: Iterable[Key], *, retire: bool = False) -> None:
        """The partitions left this member: forget their offsets, marks, seeks and held records (under
        explicit marks, an eager revoke's are kept for the assignment that ends it: `Ledger.assigned`)."""
        keys = set(keys)
        with self._lock:
            if self.ledger is not None:
                self.ledger.release(keys, retire=retire)
            self.carry = [m for m in self.carry if (m.topic(), m.partition()) not in keys]
            for key in keys:
                self.floors.pop(key, None)
                self.reached.pop(key, None)
                self.confirmed.pop(key, None)
                self.sent.pop(key, None)
                self.app_sent.pop(key, None)
                self.pending_seeks.pop(key, None)
                self.unconfirmed_seeks.pop(key, None)

    def _on_commit(self, err: Any, partitions: Any) -> None:
        """librdkafka's commit callback (inside poll): the outcome of every commit, interval ones too."""
        code = error_code(KafkaException(err)) if err is not None else None
        if err is not None and code not in (None, KafkaError._NO_OFFSET):
            self.log.info("Commit failed: %s", err)
        self._confirm(partitions or [])
        if code in REBALANCE_CODES or any(
            getattr(tp.error, "code", lambda: None)() in REBALANCE_CODES for tp in partitions or []
        ):
            # Refused because the group is rebalancing: sent again as soon as the rebalance ends (the
            # next assign or revoke), not an interval later; a KIP-848 epoch bump may bring no callback.
            self._unsend(partitions or [])
            self.retry_after_rebalance = True
            self.next_commit = min(self.next_commit, self.clock.time() + STALE_EPOCH_RETRY_S)
            self.state.slow = True
        if self._user_on_commit is not None:
            self.run_hook(self._user_on_commit, (err, partitions))

    # --- the application's commit and store_offsets -------------------------------------------------
    def commit_app(
        self,
        message: Any = None,
        offsets: list[ClientPartition] | None = None,
        asynchronous: bool = True,
        *,
        done: object = HELD_NOW,
    ) -> list[ClientPartition] | None:
        """`commit()` as confluent-kafka's: no arguments commits what the application consumed (drop-in)
        or marked (explicit); a message or offsets commit exactly that."""
        if message is not None or offsets is not None:
            check_commit(message, offsets)
            kwargs: dict[str, Any] = {"asynchronous": asynchronous}
            if message is not None:
                kwargs["message"] = message
            if offsets is not None:
                kwargs["offsets"] = offsets
            self._note_app_commit(message, offsets)
            result = self.inner.commit(**kwargs)
            if result is not None:
                self._confirm(result)
            return result  # type: ignore[no-any-return]
        lost = self.assignment_lost()
        if lost is not None:  # as confluent's: refused, nothing sent (asynchronous: told to on_commit)
            if not asynchronous:
                raise KafkaException(lost)
            self.deferred_commit_cbs.append((lost, []))
            self.state.slow = True
            return None
        why = self.may_commit()
        if why is not None and not self.prepared.transactional:
            raise KafkaException(KafkaError(KafkaError._STATE, f"Nothing was committed: {why}."))
        if done is HELD_NOW:
            done = self.state.held
        todo = [
            tp
            for tp in self.offsets(self.keys(), done=done)
            if self.confirmed.get((tp.topic, tp.partition)) != tp.offset
        ]
        if not todo:
            if asynchronous:
                if self._user_on_commit is not None:  # confluent reports it in the next poll's callback
                    nothing = [ClientPartition(k[0], k[1], OFFSET_INVALID) for k in self.keys()]
                    self.deferred_commit_cbs.append(
                        (KafkaError(KafkaError._NO_OFFSET, "Local: No offset stored"), nothing)
                    )
                    self.state.slow = True
                return None
            raise KafkaException(KafkaError(KafkaError._NO_OFFSET, "No offset to commit"))
        with self._lock:
            for tp in todo:
                self.sent[(tp.topic, tp.partition)] = tp.offset
        try:
            result = self.inner.commit(offsets=todo, asynchronous=asynchronous)
        except BaseException:
            self._unsend(todo)  # not committed: the next commit sends it again, changed or not
            raise
        if result is not None:
            self._confirm(result)
        return result  # type: ignore[no-any-return]

    def _note_app_commit(self, message: Any, offsets: list[ClientPartition] | None) -> None:
        """The application commits these offsets itself: from now on none of kafka-coop's goes below."""
        sent: list[tuple[Key, int]] = []
        if message is not None and getattr(message, "error", lambda: None)() is None:
            sent.append(((message.topic(), message.partition()), message.offset() + 1))
        for tp in offsets or ():
            if tp.offset >= 0:
                sent.append(((tp.topic, tp.partition), tp.offset))
        with self._lock:
            for key, offset in sent:
                self.app_sent[key] = max(offset, self.app_sent.get(key, -1))

    def store_offsets(
        self, message: Any = None, offsets: list[ClientPartition] | None = None, *, confluent: bool = False
    ) -> None:
        """confluent's `store_offsets` under explicit marks: a message is marked done; an offset says
        every record below it is done. `confluent` (the application called `store_offsets`, not
        `mark_done`): refused as librdkafka refuses it when none of its partitions is this member's,
        and only the partitions it owns are kept."""
        if confluent:
            check_store(message, offsets)
        if confluent and self.ledger is not None:
            offsets = self._refuse_unowned(message, offsets)
        if self.ledger is None:
            raise KafkaException(
                KafkaError(
                    KafkaError._INVALID_ARG,
                    "store_offsets() and mark_done() need explicit marks: set enable.auto.offset.store=false "
                    "(without it, a record is done once the application polls past it).",
                )
            )
        if message is not None:
            self.ledger.marks.append(message)
        for tp in offsets or ():
            self.ledger.marks.append((tp.topic, tp.partition, tp.offset, tp.metadata))

    def _refuse_unowned(
        self, message: Any, offsets: list[ClientPartition] | None
    ) -> list[ClientPartition] | None:
        """librdkafka stores an offset only for a partition assigned now (`_STATE` otherwise, or
        `_UNKNOWN_PARTITION` for a topic it knows nothing of) and raises the last error when none could
        be stored. Returns the offsets to keep."""
        owns, manual = self.handler.owns, self.manual
        keys = [] if message is None else [(message.topic(), message.partition())]
        kept = (
            None
            if offsets is None
            else [
                tp for tp in offsets if owns((tp.topic, tp.partition)) or (tp.topic, tp.partition) in manual
            ]
        )
        if any(owns(k) or k in manual for k in keys) or kept:
            return kept
        keys += [(tp.topic, tp.partition) for tp in offsets or ()]
        if not keys:
            return kept
        topic = keys[-1][0]
        known = topic in self.topics or any(t == topic for t, _ in manual)
        raise KafkaException(KafkaError(KafkaError._STATE if known else KafkaError._UNKNOWN_PARTITION))

    def committable(self) -> list[ClientPartition]:
        """What `commit()` would commit now (every partition, changed or not): for transactions."""
        return self.offsets(self.keys(), done=self.state.held)

    # --- the step executor (on the callback's own thread) -----------------------------------------
    def run(self, steps: Steps[Any]) -> Any:
        return run_steps(steps, self.execute)

    def execute(self, step: Step) -> Any:
        inner = self.inner
        if isinstance(step, CallHook):
            return self.run_hook(step.fn, step.args)
        if isinstance(step, Emit):
            return self.emit(step.event)
        if isinstance(step, Assign):
            return (
                inner.incremental_assign(step.partitions)
                if step.incremental
                else inner.assign(step.partitions)
            )
        if isinstance(step, Unassign):
            return inner.incremental_unassign(step.partitions) if step.incremental else inner.unassign()
        if isinstance(step, Commit):
            # Inside poll/consume the application called again: the batch it held is done. Inside close
            # it is done unless close runs on an exception.
            return self.commit_now(
                step.keys,
                done=self._close_done if self.handler.closing else self.state.held,
                on_behalf=True,
            )
        if isinstance(step, Release):
            return self.release(step.keys, retire=step.retire)
        if isinstance(step, ReadCommitted):
            return inner.committed(step.partitions, timeout=step.timeout_s)
        if isinstance(step, ReadAssignment):
            return inner.assignment()
        if isinstance(step, ReadMemberId):
            return inner.memberid()
        if isinstance(step, Wait):
            self.clock.sleep(step.seconds)
            return None
        raise TypeError(f"not a handler step: {step!r}")

    def watch_subscription(self, old: SubscriptionWatch | None, topics: list[str]) -> SubscriptionWatch:
        """A new `subscribe`'s watch of its topics (replacing the old one): its warnings go to `warn`."""
        return restart_watch(
            old,
            topics,
            rendered=self.prepared.rendered,
            group=self.prepared.settings.group_id,
            owned=lambda: self.handler.owned,
            warn=self.warn,
            log=self.log,
        )

    def warn(self, text: str) -> None:
        """From any thread: a `warning` event, emitted inside the next `poll`/`consume`."""
        self.warnings.append(text)
        self.state.slow = True

    def emit(self, event: RebalanceEvent) -> None:
        sink = self.prepared.sink
        if sink is None or self.closed:
            return
        try:
            self.run_hook(sink.emit, (event,))
        except Exception:
            self.log.exception("Rebalance event sink failed; the event is dropped, consumption goes on")

    # --- librdkafka's callbacks (inside poll/consume/close, on that call's thread) --------------------
    def on_assign(self, _consumer: Any, partitions: list[ClientPartition]) -> None:
        self.errors.reached()
        self.topics.update(tp.topic for tp in partitions)
        if self.ledger is not None:
            with self._lock:
                self.ledger.assigned({(tp.topic, tp.partition) for tp in partitions})
        self._callback(self.handler.assign(partitions))
        self._rebalance_ended()

    def on_revoke(self, _consumer: Any, partitions: list[ClientPartition]) -> None:
        self._callback(self.handler.revoke(partitions))
        self._rebalance_ended()

    def _rebalance_ended(self) -> None:
        """A commit refused during the rebalance is made by the next call, not an interval later."""
        if self.retry_after_rebalance:
            self.retry_after_rebalance = False
            self.next_commit = self.clock.time()
            self.state.slow = True

    def on_lost(self, _consumer: Any, partitions: list[ClientPartition]) -> None:
        self._callback(self.handler.lose(partitions))

    def _callback(self, steps: Steps[None]) -> None:
        """Run a rebalance callback's steps; never raise through librdkafka (an interrupt a hook raised
        is kept by the handler, and raised by the call path once the client call returned)."""
        try:
            self.run(steps)
        except BaseException as exc:  # a bug of ours: keep it for the call path rather than crash librdkafka
            self.log.exception("Rebalance callback failed")
            self.handler._keep_interrupt(exc)
        finally:
            self.state.slow = True

    def _on_fatal_log(self, text: str) -> None:
        """librdkafka logged a fatal error (inside poll/consume/close): the handler fails the consumer now,
        before any callback librdkafka queued after it (its own `lost`); the call path raises it."""
        if self.fatal_text is None:
            self.fatal_text = text
            if self.handler.failure is None:
                self._callback(self.handler.fail(self.handler.fatal_from_log(text)))
        self.state.slow = True

    # --- close -------------------------------------------------------------------------------------
    def close_intended(self, batch_done: bool) -> list[ClientPartition]:
        """What a close would commit (read before a bounded close starts, to say what it could not)."""
        if self.may_commit() is not None or not self.prepared.auto_commit:
            return []
        return self.offsets(self.keys(), done=self.state.held if batch_done else None)

    def close_timed_out(self, intended: list[ClientPartition], timeout: float) -> CloseReport:
        """The report of a close that did not finish within `timeout`: what of `intended` is confirmed."""
        confirmed = self.confirmed
        missing = [tp for tp in intended if confirmed.get((tp.topic, tp.partition)) != tp.offset]
        what = ", ".join(f"{tp.topic}-{tp.partition}@{tp.offset}" for tp in missing) or "nothing pending"
        return CloseReport(
            committed=[(tp.topic, tp.partition, tp.offset) for tp in intended if tp not in missing],
            errors=[
                f"close did not finish within {timeout:g} s (the group coordinator did not answer); "
                f"not committed: {what}; the client goes on closing in the background"
            ],
        )

    def finish_close(self, report: CloseReport) -> None:
        """The end of every close, finished or not: say what failed, emit `closed` (with what was
        committed), close the event sink."""
        error = "; ".join(report.errors) or None
        if error:
            self.log.warning("Close: %s", error)
        self.emit(self.handler.lifecycle("closed", "", committed=report.committed, error=error))
        self.closed = True
        sink = self.prepared.sink
        if sink is not None:
            try:
                sink.close()
            except Exception:
                self.log.exception("Closing the event sink failed")

    def _commit_after_rebalance(
        self, offsets: list[ClientPartition], error: str | None
    ) -> tuple[list[CommittedOffset], str | None]:
        """The close commit was refused with a stale generation: an incremental rebalance is under way
        (e.g. the application stops right after a revoke). Serve it (the records the client hands out
        meanwhile are sought back: they go to no one), then commit the same offsets once."""
        todo = [tp for tp in offsets if self.confirmed.get((tp.topic, tp.partition)) != tp.offset]
        if not todo:
            return [], error
        before, deadline = self.handler.rebalances, self.clock.time() + CLOSE_REBALANCE_WAIT_S
        try:
            while self.handler.rebalances == before and self.clock.time() < deadline:
                msg = self.inner.poll(0.1)
                if msg is not None:
                    self.seek_back([msg])
            result = list(self.inner.commit(offsets=todo, asynchronous=False) or [])
        except (KafkaException, RuntimeError) as exc:
            return [], f"{error}; again after the rebalance: {describe_error(exc)}"
        self._confirm(result)
        return [(tp.topic, tp.partition, tp.offset) for tp in result if tp.error is None], None

    def _serve_rebalances_before_close(self) -> None:
        """Serve, on this thread and while the member's group handler still runs, every rebalance
        librdkafka queued for this member, so that its client's close finds none.

        Why: the client's close starts by terminating the group handler, and a classic member's
        terminate makes a rebalance still queued stale (it rejoins, join-state init), so the handler
        terminates without waiting for it. The close then serves that rebalance, and confluent-kafka's
        callback asks the terminated handler (`rd_kafka_rebalance_protocol`, `rd_kafka_assign`) a
        question nobody answers, holding the GIL: the whole process stops (librdkafka issue 4041; seen
        in CI after a static member's poll overrun, a queued assign of a member that joined during it).

        A member that may leave first unsubscribes: from then on no rebalance can be queued, and the
        revoke it makes is served here. A classic static member with a member id does not: outside
        close, an unsubscribe would send the LeaveGroup static membership exists to avoid. It serves
        what is queued, and only a rebalance that arrives in the instant before the close starts is left
        to it (docs/consumer.md, "Known hang, narrowed"). Records the client hands out meanwhile go to no one:
        they are sought back (not done, not committed), and the partitions' next owner reads them."""
        if not self.subscribed:
            return
        if self._may_leave_first():
            try:
                self.inner.unsubscribe()
            except (KafkaException, RuntimeError) as exc:
                self.log.debug("unsubscribe before close: %s", describe_error(exc))
        deadline = self.clock.time() + CLOSE_REBALANCE_WAIT_S
        try:
            while self.clock.time() < deadline:
                msg = self.inner.poll(0)
                if msg is None:
                    return
                if msg.error() is None:
                    self.seek_back([msg])
        except (KafkaException, RuntimeError) as exc:
            self.log.debug("serving rebalances before close: %s", describe_error(exc))

    def _may_leave_first(self) -> bool:
        """Whether close may unsubscribe before closing the client: not a classic static member that
        still has its member id (its LeaveGroup would hand its partitions to others at once). One whose
        id was reset sends none: librdkafka leaves only with a member id."""
        if self.handler.protocol == "consumer" or not self.prepared.settings.instance_id:
            return True
        try:
            return not str(self.inner.memberid() or "")
        except (KafkaException, RuntimeError):
            return False

    def close(self, *, batch_done: bool) -> CloseReport:
        """Commit what is done, serve every queued rebalance (after an unsubscribe where that sends no
        unwanted LeaveGroup: librdkafka then revokes through the handler here), close the client."""
        report = CloseReport()
        self.handler.closing = True
        self.settle_cancelled()
        if self.fatal_text is not None and self.handler.failure is None:
            self.run(self.handler.fail(self.handler.fatal_from_log(self.fatal_text)))
        keys = self.keys()
        why = self.may_commit()
        if (
            why is None
            and keys
            and self.handler.protocol != "consumer"
            and self.prepared.settings.instance_id
        ):
            try:  # a static member whose member id was reset would be fenced (fatal) by a commit
                if not str(self.inner.memberid() or ""):
                    why = "this member's member id was reset (max.poll.interval.ms or session ran out)"
                    self.handler.evicted = True  # the revoke close makes must not commit either
            except (KafkaException, RuntimeError):
                pass
        self._close_done = self.state.held if batch_done else None
        if why is None and keys:
            intended = self.offsets(keys, done=self._close_done)
            try:
                committed, error, verdict = self.run(self.handler.commit_done(keys))
            except (KafkaException, RuntimeError) as exc:
                committed, error, verdict = [], f"commit on close: {describe_error(exc)}", "failed"
            if verdict == "evicted" and self.handler.protocol != "eager" and self.handler.failure is None:
                committed, error = self._commit_after_rebalance(intended, error)
            report.committed.extend(committed)
            if error:
                report.errors.append(error)
        elif why is not None and keys and not self.prepared.transactional:
            report.errors.append(f"nothing committed on close: {why}")
        evicted = self.handler.evicted
        self._serve_rebalances_before_close()
        evicted = evicted or self.handler.evicted  # serving a loss may have shown the eviction
        # librdkafka's eviction may not be known yet: it logs MAXPOLL to a queue only a poll serves, and
        # a service stuck past its poll limit may go straight to close(). The last call's time tells.
        overran = self.clock.time() - self.guard.checked_at > self.prepared.max_poll_s
        self.handler.client_closing = True
        try:
            if evicted or overran:
                self._close_client(report)
            else:
                self.inner.close()
        except (KafkaException, ConsumerFailed, RuntimeError) as exc:
            self.log.warning("Closing the client reported: %s", describe_error(exc))
        return report

    def _close_client(self, report: CloseReport) -> None:
        """The client's close of a member its group dropped, bounded where the close waits without the
        GIL: past CLIENT_CLOSE_WAIT_S it goes on in a daemon thread and the report says so. The hang seen
        in CI (librdkafka issue 4041: `rd_kafka_rebalance_protocol` / `rd_kafka_assign` inside
        confluent-kafka's rebalance-callback fallback) holds the GIL, so this bound cannot return there
        (docs/consumer.md, "Known hang, narrowed"). What close() commits was committed before it."""
        try:
            bounded_call(self.inner.close, CLIENT_CLOSE_WAIT_S, name="kafka-coop-client-close")
        except StillRunning:
            report.errors.append(
                f"the client's close did not return within {CLIENT_CLOSE_WAIT_S:g} s (librdkafka waits in "
                "its rebalance callback for a member its group dropped); it goes on in the background"
            )


def treat_as_done_on_close() -> bool:
    """Whether the batch the application holds is done when it closes: not while an exception is
    propagating or being handled (close() called from `finally`/`except` after processing raised)."""
    return sys.exc_info()[1] is None

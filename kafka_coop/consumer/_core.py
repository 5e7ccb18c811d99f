"""The one driver base: everything a kafka-coop consumer does around its client, for both drivers.

`CoopConsumer` calls it from the application's thread; `CoopAIOConsumer` from its pool's workers (and
gives it a `run_hook` that runs hooks and sinks on the event loop). It owns:

- the **call path**: `poll`/`consume` closures of a fixed signature around the client's own. The fast
  path is the client call, one attribute store (drop-in: the batch the application now holds) or one
  `deque.append` (explicit marks: what was handed out), one attribute read (`CallState.slow`, raised by
  the watchdog ten times a second and by every callback) and one clock read against the watchdog's last
  tick (a call that returns after a freeze, before the frozen watchdog thread has run again, must not
  take the fast path: the SIGSTOP test saw such a batch handed out). `poll`, paid once per record
  (drop-in and, registering what it hands out, explicit marks), is the same path in C where the
  compiled module is installed (`_fastcall.FastPoll`, in the default wheel: ~12 ns a call where the
  closure costs ~90 ns; the pure fallback wheel has none). The
  slow path raises a fatal error or a hook's interrupt (seeking the call's records back: nothing it took
  is lost), applies deferred seeks, runs the freeze check, and makes the interval commit when it is due:
  on the polling thread, inside `poll`/`consume`, never behind the application's back (the Java
  consumer's rule);
- the **step executor** the handler's rebalance generators run on, on the callback's own thread;
- the partitions' bookkeeping: what was handed out (the ledger, the batch held, records carried over a
  cancelled call), the seeks made and still to confirm, what librdkafka assigned.

Its two bases hold the rest: `Committer` (`_commits.py`: every commit, interval, revoke, close,
the application's own, and `on_commit`), and `Closer` (`_close.py`: the close).

Locking: `_lock` guards kafka-coop's own bookkeeping and is never held across a client call (the client
has its own gate, and a rebalance callback holding the gate takes `_lock`).
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message
from confluent_kafka import TopicPartition as ClientPartition

from kafka_coop.consumer._args import check_partition
from kafka_coop.consumer._client_callbacks import ClientErrors, ClientLog
from kafka_coop.consumer._clock import SYSTEM_CLOCK
from kafka_coop.consumer._close import Closer
from kafka_coop.consumer._commits import Committer
from kafka_coop.consumer._fatal import describe_error, error_code
from kafka_coop.consumer._freeze import GAP_S, CallState, FreezeGuard

try:
    from kafka_coop.consumer._fastcall import CallState as FastCallState
    from kafka_coop.consumer._fastcall import FastPoll
except ImportError:  # pragma: no cover - the pure wheel, or no compiler: the Python path below
    FastPoll = FastCallState = None  # type: ignore[assignment,misc]
from kafka_coop.consumer._handler import client_partitions
from kafka_coop.consumer._offsets import Ledger, first_offsets
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
from kafka_coop.events import PartitionKey as Key
from kafka_coop.events import RebalanceEvent

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


class WrappedClient(Committer, Closer):
    """One consumer's client, wrapped in everything kafka-coop does around it: what a driver holds
    (see the module docstring)."""

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
        self._start_commits(on_commit)
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
        self._close_done: object = None
        self._lock = threading.Lock()
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
        # The same paths in C where it is built (it reads the process's clock: not for a test's)
        c_state = (
            state
            if FastPoll is not None and isinstance(state, FastCallState) and self.clock is SYSTEM_CLOCK
            else None
        )
        if self.ledger is None:
            if c_state is not None and FastPoll is not None:
                fast: Callable[[float], Message | None] = FastPoll(
                    inner_poll, c_state, slow, broken, hand_out, GAP_S
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
        if hand_out and c_state is not None and FastPoll is not None:  # poll_marked below
            marked: Callable[[float], Message | None] = FastPoll(
                inner_poll,
                c_state,
                slow,
                broken,
                hand_out,
                GAP_S,
                handed=handed_out,
                fold=fold,
                fold_at=FOLD_RECORDS,
            )
            return marked
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

    # --- partitions that leave ---------------------------------------------------------------------
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

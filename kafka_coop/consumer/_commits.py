"""The committer: every commit is kafka-coop's, with explicit offsets and the committed record's leader
epoch; the client itself stores and commits nothing.

Interval, revoke, close and unassign commits are made on the application's behalf only with
`enable.auto.commit=true` (librdkafka's and the Java client's rule); none goes below what the group holds
as far as kafka-coop knows (`known_floor`: confirmed, or sent by the application's own
`commit(message=/offsets=)`). A commit the group refused while it rebalanced is sent again as soon as
the rebalance ends, and `on_commit` hears of every commit, those kafka-coop makes synchronously too.
What is done is `_offsets.py`'s rule; `Committer` is the part of `WrappedClient` that reads the client
for it and sends the commits.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from confluent_kafka import OFFSET_INVALID, KafkaError, KafkaException
from confluent_kafka import TopicPartition as ClientPartition

from kafka_coop.consumer._args import check_commit, check_store
from kafka_coop.consumer._clock import Clock
from kafka_coop.consumer._fatal import describe_error, error_code
from kafka_coop.consumer._freeze import FreezeGuard, PyCallState
from kafka_coop.consumer._handler import RebalanceHandler, client_partitions
from kafka_coop.consumer._offsets import Ledger, commit_offset, first_offsets
from kafka_coop.consumer._setup import DriverSetup
from kafka_coop.events import PartitionKey as Key

HELD_NOW = object()  # `commit_app`'s `done` by default: the batch the application holds now
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


def commit_partition(key: Key, offset: int, epoch: int | None, metadata: str | None) -> ClientPartition:
    """One explicit commit offset, with the leader epoch and any `store_offsets` metadata."""
    leader_epoch = -1 if epoch is None else epoch
    if metadata is None:
        return ClientPartition(key[0], key[1], offset, leader_epoch=leader_epoch)
    return ClientPartition(key[0], key[1], offset, metadata, leader_epoch=leader_epoch)


class Committer:
    """A consumer's commits: a base of `WrappedClient`, whose bookkeeping (declared here) it reads."""

    # The wrapped client's, set by `WrappedClient.__init__`
    inner: Any
    prepared: DriverSetup
    handler: RebalanceHandler
    state: PyCallState
    guard: FreezeGuard
    ledger: Ledger | None
    log: logging.Logger
    clock: Clock
    run_hook: Callable[[Callable[..., Any], tuple[Any, ...]], Any]
    carry: list[Any]
    floors: dict[Key, int]
    manual: set[Key]
    topics: set[str]
    _lock: threading.Lock

    def _start_commits(self, on_commit: Callable[[Any, Any], Any] | None) -> None:
        """The committer's own bookkeeping (called by `WrappedClient.__init__`, once the clock is set)."""
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
        self.next_commit = self.clock.time() + self.prepared.interval_s
        self._close_reported = False
        self._user_on_commit = on_commit

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

    def _rebalance_ended(self) -> None:
        """A commit refused during the rebalance is made by the next call, not an interval later."""
        if self.retry_after_rebalance:
            self.retry_after_rebalance = False
            self.next_commit = self.clock.time()
            self.state.slow = True

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

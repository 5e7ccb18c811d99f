"""The rebalance handler: every rebalance decision of kafka-coop, and what the member owns, in one place.

It never calls the client: each of librdkafka's callbacks is a generator of steps (`_steps`) that a
driver executes. Interface (all rebalance state lives here, drivers hold none):

- `assign(partitions)`, `revoke(partitions)`, `lose(partitions)`: the three librdkafka callbacks,
  given the `confluent_kafka.TopicPartition` list librdkafka passed;
- `fail(error)`: a fatal client error: `lost` event, empty `owned`, `on_lost`;
- `commit_done(keys)`: the commit `close()` makes before leaving the group;
- `legacy_assign(partitions)` / `legacy_unassign()`: what a confluent-style `on_assign`/`on_revoke`
  callback's own `assign()`/`unassign()` calls turn into;
- `lifecycle(kind, member_id)`: the `started`/`closed` events; `owned`, `failure`, `closing`,
  `evicted`, `rebalances`.

Why the order inside each callback is what it is: see `RebalanceListener`. Facts it relies on
(librdkafka 2.16 / confluent-kafka 2.16 source):

- confluent-kafka calls `assign()` itself after a Python rebalance callback that did not;
- a classic member whose `max.poll.interval.ms` ran out, or whose session expired, has its member id
  reset to "" before the queued revoke is served; a commit then goes out with an empty member id, which a
  static member pays for with FENCED_INSTANCE_ID, a *fatal* error (rd_kafka_handle_OffsetCommit_error);
- after a fatal error or while the consumer is closing, librdkafka turns any assign into an unassign
  (rd_kafka_cgrp_handle_assign_op), so `owned` is read back from `assignment()` after every call;
- a manual commit refused with STALE_MEMBER_EPOCH (KIP-848) is not retried by librdkafka, and means
  "retry with the next epoch", not eviction;
- a commit that fails for some partitions raises one KafkaException and drops the per-partition
  results, so the committed offsets are then read back from the broker.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import TopicPartition as ClientPartition

from kafka_coop._vocab import RebalanceProtocol
from kafka_coop.consumer._clock import SYSTEM_CLOCK, Clock
from kafka_coop.consumer._fatal import (
    EVICTED,
    EVICTION_WINDOW_S,
    Eviction,
    describe_error,
    error_code,
    fatal_code_from_text,
    fatal_error,
    is_fatal,
)
from kafka_coop.consumer._listener import Hooks, LegacyCallbacks, Partitions
from kafka_coop.consumer._refusal import Refusal
from kafka_coop.consumer._steps import (
    Assign,
    CallHook,
    Commit,
    Emit,
    ReadAssignment,
    ReadCommitted,
    ReadMemberId,
    Release,
    Steps,
    Unassign,
    Wait,
)
from kafka_coop.errors import ConsumerFailed
from kafka_coop.events import CommittedOffset, EventKind, EventStamp, Ownership, PartitionKey

READ_BACK_TIMEOUT_S = 10.0
STALE_EPOCH_RETRIES = 4
STALE_EPOCH_BACKOFF_S = 0.25

Phase = Literal["idle", "assigning", "revoking", "losing"]
Verdict = Literal["ok", "failed", "evicted", "fatal"]


def keys_of(partitions: Iterable[ClientPartition]) -> Partitions:
    return [(tp.topic, tp.partition) for tp in partitions]


def client_partitions(keys: Iterable[PartitionKey]) -> list[ClientPartition]:
    return [ClientPartition(topic, partition) for topic, partition in keys]


class RebalanceHandler:
    """Decides, for each rebalance callback, the calls to make, the hooks to run and the event to emit.

    `owned` is what this member owns after the last callback, checked against the client's real
    `assignment()` each time. `failure` is set once a fatal client error stopped the consumer.
    `evicted` is True from librdkafka's own eviction of a classic member (its member id is reset) until
    its next assignment: nothing may be committed meanwhile.
    """

    def __init__(
        self,
        *,
        protocol: RebalanceProtocol,
        stamp: EventStamp,
        hooks: Hooks,
        log: logging.Logger,
        clock: Clock = SYSTEM_CLOCK,
        eviction_window_s: float = EVICTION_WINDOW_S,
    ) -> None:
        self.protocol = protocol
        self.clock = clock
        self.incremental = protocol != "eager"
        self.hooks = hooks
        self.legacy = LegacyCallbacks()
        self.failure: ConsumerFailed | None = None
        self.closing = False
        # The client's own close has started: its group handler may have terminated, and then never
        # answers memberid()/assignment() (before it, close serves rebalances with the group alive).
        self.client_closing = False
        self.evicted = False
        self.rebalances = 0  # callbacks (and fatal errors) served so far: the group's answers
        self.eviction_window_s = eviction_window_s
        # Reads which broker rule refused an online upgrade (set by `prepare`, which has the connection).
        self.explain_refusal: Callable[[], Refusal | None] | None = None
        self._stamp = stamp
        self._log = log
        self._ownership = Ownership(protocol)
        self._phase: Phase = "idle"
        self._legacy_assigned = False
        self._interrupt: BaseException | None = None
        self._member_id = ""
        self._eviction: Eviction | None = None
        # Partitions an `assigned` event announced and no `revoked`/`lost` event has released yet.
        # librdkafka's close revokes the *group's* assignment, which under cooperative and KIP-848 includes
        # the partitions of an assign still pending when close began (rd_kafka_cgrp_revoke_all_rejoin); the
        # application never had those, so hooks and events name only what it was given.
        self._given: set[PartitionKey] = set()

    @property
    def owned(self) -> tuple[PartitionKey, ...]:
        return self._ownership.owned

    def owns(self, key: PartitionKey) -> bool:
        """Whether the group gave this member `key` (one set lookup: the store path asks per record)."""
        return self._ownership.holds(key)

    @property
    def member_id(self) -> str:
        """The member id read at the last callback ("" before the first, or once reset)."""
        return self._member_id

    def note_eviction(self, limit: str) -> None:
        """librdkafka logged that it evicted this member itself (see `ClientLog`)."""
        self._eviction = Eviction(limit, self.clock.time())
        if self.protocol != "consumer":
            # Classic: the member id is reset now (rd_kafka_cgrp_max_poll_interval_check_tmr_cb). KIP-848
            # keeps the member until its partitions are unassigned, so its commits still count.
            self.evicted = True

    def fatal(self, code: int, detail: str) -> ConsumerFailed:
        """The typed exception for a fatal error, knowing whether this member was just evicted."""
        eviction, now = self._eviction, self.clock.time()
        if eviction is not None and now - eviction.at > self.eviction_window_s:
            eviction = None
        refused = code == KafkaError.GROUP_ID_NOT_FOUND and self.protocol == "consumer"
        return fatal_error(
            code,
            detail,
            group=self._stamp.group,
            instance_id=self._stamp.instance_id,
            protocol=self.protocol,
            evicted=eviction,
            now=now,
            refusal=self.explain_refusal() if refused and self.explain_refusal is not None else None,
        )

    def fatal_from_log(self, text: str) -> ConsumerFailed:
        return self.fatal(fatal_code_from_text(text), text)

    def take_interrupt(self) -> BaseException | None:
        """A BaseException a hook raised, kept while the rebalance finished (the driver raises it)."""
        interrupt, self._interrupt = self._interrupt, None
        return interrupt

    # --- librdkafka's three callbacks ------------------------------------------------------------
    def assign(self, partitions: list[ClientPartition]) -> Steps[None]:
        self.rebalances += 1
        started = time.perf_counter()
        keys = keys_of(partitions)
        errors: list[str] = []
        self.evicted = False  # a new assignment comes with a new member id
        if self.hooks.start_offsets is not None and keys:
            offsets = yield from self._hook("start_offsets", self.hooks.start_offsets, (list(keys),), errors)
            if offsets is not None:
                errors.extend(_apply_start_offsets(partitions, offsets))
        self._legacy_assigned = False
        if self.legacy.on_assign is not None:
            self._phase = "assigning"
            try:
                yield from self._hook(
                    "on_assign", self.legacy.on_assign, (self.legacy.consumer, partitions), errors
                )
            finally:
                self._phase = "idle"
        # Closing: librdkafka turns an assign into an unassign, and an assign it serves after its group
        # terminated is never answered (close hung for good in CI); the partitions are not taken.
        if not self._legacy_assigned and not self.closing:
            try:
                yield Assign(partitions, self.incremental)
            except Exception as exc:  # librdkafka refused: the event says so, the service goes on
                errors.append(f"assign: {describe_error(exc)}")
            except BaseException as exc:
                self._keep_interrupt(exc)
        self._ownership.apply("assigned", keys)
        yield from self._reconcile(after_assign=True)
        applied = [k for k in keys if k in set(self.owned)]
        if len(applied) < len(keys):
            why = "the consumer is closing" if self.closing else "librdkafka did not apply the assignment"
            if self.failure is not None:
                why = f"the consumer failed ({self.failure.code})"
            errors.append(f"{len(keys) - len(applied)} of {len(keys)} partitions not assigned: {why}")
        if applied and self.hooks.on_assigned is not None:
            yield from self._hook("on_assigned", self.hooks.on_assigned, (list(applied),), errors)
        self._given = set(applied) if self.protocol == "eager" else self._given | set(applied)
        yield from self._emit("assigned", applied, started, error=_join(errors))

    def revoke(self, partitions: list[ClientPartition]) -> Steps[None]:
        self.rebalances += 1
        started = time.perf_counter()
        keys = self._was_given(partitions)
        if self.failure is not None:
            yield from self._lose(partitions, started, [f"after fatal error {self.failure.code}"])
            return
        if self.protocol != "consumer":
            member_id = yield from self._read_member_id()
            if member_id == "" or self.evicted:
                # The member id was reset (max.poll.interval.ms or the session ran out) while a rebalance
                # was already under way, so librdkafka serves a revoke instead of a loss. The group no
                # longer counts this member: a commit would be refused, and for a static member it would
                # be a fatal FENCED_INSTANCE_ID. The partitions are lost; nothing is committed.
                note = "member id reset (max.poll.interval.ms or session.timeout.ms exceeded); not committed"
                yield from self._lose(partitions, started, [note])
                return
        errors: list[str] = []
        self._phase = "revoking"
        try:
            if self.hooks.on_revoked is not None:
                yield from self._hook("on_revoked", self.hooks.on_revoked, (list(keys),), errors)
            if self.legacy.on_revoke is not None:
                given = [tp for tp in partitions if (tp.topic, tp.partition) in self._given]
                yield from self._hook(
                    "on_revoke", self.legacy.on_revoke, (self.legacy.consumer, given), errors
                )
        finally:
            self._phase = "idle"
        commit_started = time.perf_counter()
        committed, commit_error, verdict = yield from self._commit(keys)
        commit_ms = (time.perf_counter() - commit_started) * 1000.0
        if commit_error:
            errors.append(commit_error)
        if verdict == "fatal":
            yield from self._unassign(partitions, errors)
            assert self.failure is not None
            yield from self._fail_owned(self.failure, started, extra=keys, errors=errors)
            return
        if verdict == "evicted":
            yield from self._lose(partitions, started, errors)
            return
        yield from self._unassign(partitions, errors)
        released = keys_of(partitions)
        self._ownership.apply("revoked", released)
        self._given -= set(released)
        yield Release(tuple(released), retire=self.protocol == "eager")
        yield from self._reconcile()
        yield from self._emit(
            "revoked", keys, started, committed=committed, error=_join(errors), commit_ms=commit_ms
        )

    def lose(self, partitions: list[ClientPartition]) -> Steps[None]:
        self.rebalances += 1
        yield from self._lose(partitions, time.perf_counter(), [])

    def fail(self, error: ConsumerFailed) -> Steps[None]:
        """A fatal client error: librdkafka has dropped the assignment without a callback."""
        if self.failure is not None:
            return
        self.failure = error
        self.rebalances += 1
        if not self.closing:  # (a terminated group would never answer it)
            try:
                yield Unassign([], incremental=False)  # after a fatal error librdkafka accepts only this
            except Exception as exc:
                self._log.debug("unassign after fatal error: %s", describe_error(exc))
        yield from self._fail_owned(error, time.perf_counter(), extra=(), errors=[])

    def commit_done(
        self, keys: Sequence[PartitionKey]
    ) -> Steps[tuple[list[CommittedOffset], str | None, Verdict]]:
        """The commit before close: what is done of `keys`. Returns (committed, error description, verdict:
        "evicted" when the broker refused it as from a stale member or generation)."""
        if self.failure is not None:
            return [], None, "ok"
        committed, error, verdict = yield from self._commit(keys)
        if verdict == "fatal":
            assert self.failure is not None
            yield from self._fail_owned(self.failure, time.perf_counter(), extra=(), errors=[])
        return committed or [], error, verdict

    # --- what a legacy callback's own assign/unassign calls become --------------------------------
    def legacy_assign(self, partitions: list[ClientPartition]) -> Assign | None:
        """Inside a legacy `on_assign`: the protocol-correct call with the callback's offsets (else None).

        A confluent-style `on_assign` that calls `consumer.assign(partitions)` with offsets set (the
        documented way to start elsewhere) would break under cooperative and KIP-848, where only
        `incremental_assign` is legal; it is translated, executed now, and not repeated afterwards.
        """
        if self._phase != "assigning":
            return None
        self._legacy_assigned = True
        return Assign(list(partitions), self.incremental)

    def legacy_unassign(self) -> bool:
        """Inside a legacy `on_revoke`/`on_lost`: True means ignore the call, the handler unassigns
        after committing (an unassign before the commit would lose the offsets)."""
        return self._phase in ("revoking", "losing")

    # --- lifecycle -------------------------------------------------------------------------------
    def lifecycle(
        self,
        kind: EventKind,
        member_id: str,
        *,
        committed: Iterable[CommittedOffset] | None = None,
        error: str | None = None,
    ) -> Any:
        """The `started`/`closed` event (the driver gives it to the sink)."""
        if kind == "closed":
            self._given.clear()
            self._ownership.replace(())  # a closed member owns nothing, whatever callbacks did not say
        return self._stamp.make(
            kind,
            member_id=member_id,
            partitions=(),
            owned=self.owned,
            callback_ms=0.0,
            committed=committed,
            error=error,
        )

    # --- internals -------------------------------------------------------------------------------
    def _lose(self, partitions: list[ClientPartition], started: float, errors: list[str]) -> Steps[None]:
        keys = self._was_given(partitions)
        errors = list(errors)
        released = keys_of(partitions)
        if self.failure is not None and not set(released) & set(self.owned):
            # librdkafka's own lost callback after a fatal error: `fail` already reported these.
            yield from self._unassign(partitions, errors)
            return
        yield from self._unassign(partitions, errors)
        self._ownership.apply("lost", released)
        self._given -= set(released)
        yield Release(tuple(released))
        yield from self._reconcile()
        self._phase = "losing"
        try:
            if self.hooks.on_lost is not None:
                yield from self._hook("on_lost", self.hooks.on_lost, (list(keys),), errors)
            if self.legacy.on_lost is not None:
                given = [tp for tp in partitions if (tp.topic, tp.partition) in set(keys)]
                yield from self._hook("on_lost", self.legacy.on_lost, (self.legacy.consumer, given), errors)
        finally:
            self._phase = "idle"
        yield from self._emit("lost", keys, started, error=_join(errors))

    def _fail_owned(
        self, error: ConsumerFailed, started: float, *, extra: Iterable[PartitionKey], errors: list[str]
    ) -> Steps[None]:
        """Everything this member owned is lost, and it owns nothing from now on."""
        lost = sorted({*self.owned, *(k for k in extra if k in self._given)})
        self._ownership.replace(())
        self._given.clear()
        yield Release(tuple(lost))
        errors = [*errors, f"fatal {error.code}: {error.message}"]
        if lost:
            self._phase = "losing"
            try:
                if self.hooks.on_lost is not None:
                    yield from self._hook("on_lost", self.hooks.on_lost, (list(lost),), errors)
                if self.legacy.on_lost is not None:
                    args = (self.legacy.consumer, client_partitions(lost))
                    yield from self._hook("on_lost", self.legacy.on_lost, args, errors)
            finally:
                self._phase = "idle"
        yield from self._emit("lost", lost, started, error=_join(errors))

    def _was_given(self, partitions: list[ClientPartition]) -> Partitions:
        """The partitions of a librdkafka revoke/lost list that an `assigned` event gave this member."""
        return [key for key in keys_of(partitions) if key in self._given]

    def _unassign(self, partitions: list[ClientPartition], errors: list[str]) -> Steps[None]:
        try:
            yield Unassign(partitions, self.incremental)
        except Exception as exc:
            errors.append(f"unassign: {describe_error(exc)}")
        except BaseException as exc:
            self._keep_interrupt(exc)

    def _commit(
        self, keys: Sequence[PartitionKey]
    ) -> Steps[tuple[list[CommittedOffset] | None, str | None, Verdict]]:
        """Commit what is done of `keys`; report what the group holds for them. Never raises
        (BaseException aside)."""
        wanted = set(keys)
        for attempt in range(STALE_EPOCH_RETRIES + 1):
            try:
                result = yield Commit(tuple(keys))
            except KafkaException as exc:
                code = error_code(exc)
                if code == KafkaError.STALE_MEMBER_EPOCH and attempt < STALE_EPOCH_RETRIES:
                    backoff = STALE_EPOCH_BACKOFF_S * (attempt + 1)
                    self._log.info(
                        "Commit refused with STALE_MEMBER_EPOCH (the group moved this member to a new epoch "
                        "its client has not read yet); retrying in %.2f s",
                        backoff,
                    )
                    yield Wait(backoff)  # the heartbeat response in flight brings the new epoch
                    continue
                if is_fatal(exc):
                    code = code if code not in (None, KafkaError._FATAL) else fatal_code_from_text(str(exc))
                    self.failure = self.failure or self.fatal(code or KafkaError._FATAL, describe_error(exc))
                    return None, f"commit: {describe_error(exc)}", "fatal"
                if code in EVICTED:
                    return None, f"commit: {describe_error(exc)}; not committed", "evicted"
                read_back = yield from self._read_back(keys)
                if read_back is None:
                    note = "the group's offsets could not be read back, so what it holds is unknown"
                    return [], f"commit failed: {describe_error(exc)}; {note}", "failed"
                note = "committed lists the offsets read back from the broker"
                return read_back, f"commit failed: {describe_error(exc)}; {note}", "failed"
            except RuntimeError as exc:  # the consumer is closed underneath us
                return [], f"commit: {describe_error(exc)}; not committed", "failed"
            committed: list[CommittedOffset] = []
            failed: list[str] = []
            for tp in result or []:
                if (tp.topic, tp.partition) not in wanted:
                    continue
                if tp.error is not None:
                    failed.append(f"{tp.topic}-{tp.partition}: {tp.error}")
                elif tp.offset >= 0:
                    committed.append((tp.topic, tp.partition, tp.offset))
            return committed, (f"commit failed for {', '.join(failed)}" if failed else None), "ok"
        raise AssertionError("unreachable")  # pragma: no cover

    def _read_back(self, keys: Sequence[PartitionKey]) -> Steps[list[CommittedOffset] | None]:
        if not keys:
            return []
        try:
            back = yield ReadCommitted(client_partitions(keys), READ_BACK_TIMEOUT_S)
        except Exception as exc:
            self._log.warning("Could not read committed offsets back: %s", describe_error(exc))
            return None
        return [
            (tp.topic, tp.partition, tp.offset) for tp in back or [] if tp.error is None and tp.offset >= 0
        ]

    def _reconcile(self, *, after_assign: bool = False) -> Steps[None]:
        """Make `owned` the client's real assignment: librdkafka may have refused or undone a call.

        Not while closing or failed: librdkafka then turns every assign into an unassign, and once the
        group is terminated it drops `assignment()`/`memberid()` requests without answering (the call
        never returns), so the outcome is taken from that rule instead of asked for.
        """
        if self.closing or self.failure is not None:
            if after_assign:
                self._ownership.replace(())
            return
        try:
            real = yield ReadAssignment()
        except Exception as exc:  # closed: keep what the callbacks said
            self._log.debug("assignment() unreadable: %s", describe_error(exc))
            return
        if real is None:
            return
        keys = set(keys_of(real))
        if keys != set(self.owned):
            self._log.debug("owned %s corrected to the client's assignment %s", self.owned, sorted(keys))
            self._ownership.replace(keys)

    def _read_member_id(self) -> Steps[str]:
        if self.client_closing:  # see _reconcile: a terminated group never answers memberid()
            return self._member_id
        try:
            member_id = yield ReadMemberId()
        except Exception:
            return self._member_id
        self._member_id = str(member_id or "")
        return self._member_id

    def _hook(
        self, name: str, fn: Callable[..., Any], args: tuple[Any, ...], errors: list[str]
    ) -> Steps[Any]:
        try:
            return (yield CallHook(name, fn, args))
        except Exception as exc:  # recorded on the event; the rebalance goes on
            self._log.exception("%s hook raised; the rebalance goes on", name)
            errors.append(f"{name} hook: {describe_error(exc)}")
        except BaseException as exc:  # finish the rebalance first, then let the driver raise it
            self._keep_interrupt(exc)
            errors.append(f"{name} hook interrupted: {type(exc).__name__}")
        return None

    def _keep_interrupt(self, exc: BaseException) -> None:
        if self._interrupt is None:
            self._interrupt = exc

    def _emit(
        self,
        kind: EventKind,
        keys: Iterable[PartitionKey],
        started: float,
        *,
        committed: Iterable[CommittedOffset] | None = None,
        error: str | None = None,
        commit_ms: float | None = None,
    ) -> Steps[None]:
        member_id = yield from self._read_member_id()
        event = self._stamp.make(
            kind,
            member_id=member_id,
            partitions=keys,
            owned=self.owned,
            callback_ms=(time.perf_counter() - started) * 1000.0,
            committed=committed,
            error=error,
            commit_ms=commit_ms,
        )
        yield Emit(event)


def _apply_start_offsets(partitions: list[ClientPartition], offsets: Any) -> list[str]:
    """Set the offsets `start_offsets` chose on the partitions about to be assigned."""
    if not isinstance(offsets, Mapping):
        return [f"start_offsets returned {type(offsets).__name__}, not a mapping; ignored"]
    errors: list[str] = []
    by_key = {(tp.topic, tp.partition): tp for tp in partitions}
    for key, offset in offsets.items():
        tp = by_key.get(tuple(key) if isinstance(key, Sequence) else key)
        if tp is None:
            errors.append(f"start_offsets named {key!r}, which is not being assigned; ignored")
        elif isinstance(offset, bool) or not isinstance(offset, int):
            errors.append(f"start_offsets gave {key!r} the offset {offset!r}, not an integer; ignored")
        else:
            tp.offset = offset
    return errors


def _join(errors: list[str]) -> str | None:
    return "; ".join(errors) or None

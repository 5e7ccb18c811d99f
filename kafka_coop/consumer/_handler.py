"""The rebalance handler: every rebalance decision of kafka-coop, in one place, for any driver.

`CoopConsumer` (over `confluent_kafka.Consumer`) and `CoopAIOConsumer` (over
`confluent_kafka.aio.AIOConsumer`) differ only in how they *call* the inner consumer: directly, or
awaited. So the handler never calls it. Each rebalance callback is a generator of **steps**: it yields
what it needs done (`Assign`, `Unassign`, `CommitMarked`, `ReadCommitted`, `ReadAssignment`,
`ReadMemberId`, `Wait`, `CallHook`), the driver executes the step and sends the result back (or
throws the exception the call raised into the generator), and the generator decides the next one.
`run_sync` and `run_async` are the two loops; `execute_sync(inner)` runs a step against a
`confluent_kafka.Consumer`. A driver therefore looks like::

    def on_revoke(_consumer, partitions):            # the callback given to inner.subscribe
        run_sync(handler.revoke(partitions), execute_sync(inner))

    async def on_revoke(_consumer, partitions):      # asyncio: AIOConsumer awaits async callbacks
        await run_async(handler.revoke(partitions), execute_async)   # awaits hooks that are coroutines

Interface of `RebalanceHandler` (all rebalance state lives here, drivers hold none):

- `assign(partitions)`, `revoke(partitions)`, `lose(partitions)`: the three librdkafka callbacks,
  given the `confluent_kafka.TopicPartition` list librdkafka passed;
- `fail(error)`: a fatal client error (see `fatal_from_log`): `lost` event, empty `owned`, `on_lost`;
- `commit_marked()`: the commit `close()` makes before leaving the group;
- `legacy_assign(partitions)` / `legacy_unassign()`: what a confluent-style `on_assign`/`on_revoke`
  callback's own `assign()`/`unassign()` calls turn into (the driver routes them here);
- `lifecycle(kind, member_id)`: the `started`/`closed` events; `owned`, `failure`, `closing`.

`ClientLog` bridges librdkafka's log to Python logging and spots fatal errors in it; `ClientErrors`
is the `error_cb` that turns connection trouble into one sentence. Both are driver-independent.

Why the order inside each callback is what it is: see `RebalanceListener` (the contract users read).
Facts this module relies on (librdkafka 2.16 / confluent-kafka 2.16 source):

- confluent-kafka calls `assign()` itself after a Python rebalance callback that did not, and turns an
  exception raised by the callback into an exception from `poll`/`consume` (CallState_crash), so a
  `BaseException` from a hook can be re-raised after the rebalance work is done;
- a classic member whose `max.poll.interval.ms` ran out, or whose session expired, has its member id
  reset to "" before the queued revoke is served; a commit then goes out with an empty member id, which a
  static member pays for with FENCED_INSTANCE_ID, a *fatal* error (rd_kafka_handle_OffsetCommit_error);
- after a fatal error or while the consumer is closing, librdkafka turns any assign into an unassign
  (rd_kafka_cgrp_handle_assign_op), so `owned` is read back from `assignment()` after every call;
- a manual commit refused with STALE_MEMBER_EPOCH (KIP-848) is not retried by librdkafka, and means
  "retry with the next epoch", not eviction;
- a commit that failed for some partitions raises one KafkaException and drops the per-partition
  results, so the committed offsets are then read back from the broker.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, TypeVar

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import TopicPartition as ClientPartition

from kafka_coop._vocab import RebalanceProtocol
from kafka_coop.errors import ConsumerFailed, InstanceIdConflict
from kafka_coop.events import (
    CommittedOffset,
    EventKind,
    EventStamp,
    Ownership,
    RebalanceEvent,
    TopicPartition,
)
from kafka_coop.sinks import EventSink

T = TypeVar("T")

READ_BACK_TIMEOUT_S = 10.0
STALE_EPOCH_RETRIES = 4
STALE_EPOCH_BACKOFF_S = 0.25

# Commit errors meaning "this member's claim on the partitions is gone": nothing was committed, the next
# owner resumes at the last commit, so the partitions are reported lost.
_EVICTED = frozenset(
    {KafkaError.UNKNOWN_MEMBER_ID, KafkaError.ILLEGAL_GENERATION, KafkaError.FENCED_MEMBER_EPOCH}
)
# librdkafka makes these fatal (the instance id belongs to someone else); any error flagged fatal is too.
_FATAL_CODES = frozenset(
    {KafkaError.FENCED_INSTANCE_ID, KafkaError.UNRELEASED_INSTANCE_ID, KafkaError._FATAL}
)
# error_cb codes that mean "cannot reach or talk to the cluster"; librdkafka retries all of them.
# (_TRANSPORT alone is not one: an idle connection closed by the broker raises it on a healthy cluster.)
_UNREACHABLE = frozenset({KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE})
_REFUSED = frozenset({KafkaError._AUTHENTICATION, KafkaError._SSL, KafkaError.SASL_AUTHENTICATION_FAILED})
# librdkafka log facilities of its own eviction of this member (rdkafka_cgrp.c), and the setting that ran out.
_EVICTION_FACILITIES = {"MAXPOLL": "max.poll.interval.ms", "SESSTMOUT": "session.timeout.ms"}
# How long after such an eviction a FENCED_INSTANCE_ID is put down to it (librdkafka's default poll limit).
EVICTION_WINDOW_S = 300.0
# librdkafka log facilities of connection failures: summarized by ClientErrors in one sentence.
_CONNECTION_FACILITIES = frozenset({"FAIL", "ERROR", "CONNECT", "BROKERFAIL"})

Partitions = list[TopicPartition]
StartOffsets = Mapping[TopicPartition, int]
Hook = Callable[[Partitions], Any]
StartOffsetsHook = Callable[[Partitions], Any]
LegacyCallback = Callable[[Any, list[ClientPartition]], Any]


# --- steps: what the handler asks its driver to do on the inner consumer ---------------------------
@dataclass(frozen=True, slots=True)
class Assign:
    """`incremental_assign(partitions)` (cooperative, consumer) or `assign(partitions)` (eager)."""

    partitions: list[ClientPartition]
    incremental: bool


@dataclass(frozen=True, slots=True)
class Unassign:
    """`incremental_unassign(partitions)` (cooperative, consumer) or `unassign()` (eager)."""

    partitions: list[ClientPartition]
    incremental: bool


@dataclass(frozen=True, slots=True)
class CommitMarked:
    """`commit(asynchronous=False)` without offsets: every marked (stored) offset; returns the list."""


@dataclass(frozen=True, slots=True)
class ReadCommitted:
    """`committed(partitions, timeout=timeout_s)`: the broker's committed offsets."""

    partitions: list[ClientPartition]
    timeout_s: float


@dataclass(frozen=True, slots=True)
class ReadAssignment:
    """`assignment()`: what librdkafka really has assigned."""


@dataclass(frozen=True, slots=True)
class ReadMemberId:
    """`memberid()`: "" (or None) once a classic member's id was reset."""


@dataclass(frozen=True, slots=True)
class Wait:
    """Sleep (`time.sleep` / `asyncio.sleep`): the back-off before a commit retry."""

    seconds: float


@dataclass(frozen=True, slots=True)
class CallHook:
    """Call a user hook; an async driver awaits the result when it is awaitable."""

    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]


Step: TypeAlias = (
    Assign | Unassign | CommitMarked | ReadCommitted | ReadAssignment | ReadMemberId | Wait | CallHook
)
Steps: TypeAlias = Generator[Step, Any, T]


def run_sync(steps: Steps[T], execute: Callable[[Step], Any]) -> T:
    """Drive a handler generator to its end, executing each step synchronously."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as stop:
            result: T = stop.value
            return result
        value, error = None, None
        try:
            value = execute(step)
        except BaseException as exc:  # the generator decides; it re-raises what it cannot handle
            error = exc


async def run_async(steps: Steps[T], execute: Callable[[Step], Awaitable[Any]]) -> T:
    """Drive a handler generator to its end, awaiting each step (the asyncio driver's loop)."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as stop:
            result: T = stop.value
            return result
        value, error = None, None
        try:
            value = await execute(step)
        except BaseException as exc:
            error = exc


class InnerConsumer(Protocol):
    """The part of `confluent_kafka.Consumer` the steps use (a fake implements it in unit tests)."""

    def assign(self, partitions: list[ClientPartition]) -> None: ...
    def unassign(self) -> None: ...
    def incremental_assign(self, partitions: list[ClientPartition]) -> None: ...
    def incremental_unassign(self, partitions: list[ClientPartition]) -> None: ...
    def commit(self, *args: Any, **kwargs: Any) -> Any: ...
    def committed(self, partitions: list[ClientPartition], timeout: float = ...) -> Any: ...
    def assignment(self) -> Any: ...
    def memberid(self) -> Any: ...


def execute_sync(inner: InnerConsumer) -> Callable[[Step], Any]:
    """The sync driver's executor: each step is the one inner-consumer call it names."""

    def execute(step: Step) -> Any:
        if isinstance(step, CallHook):
            return step.fn(*step.args)
        return call_inner(inner, step)

    return execute


def call_inner(inner: InnerConsumer, step: Step) -> Any:
    """Run one non-hook step against a confluent-kafka consumer (shared by both drivers)."""
    if isinstance(step, Assign):
        return (
            inner.incremental_assign(step.partitions) if step.incremental else inner.assign(step.partitions)
        )
    if isinstance(step, Unassign):
        return inner.incremental_unassign(step.partitions) if step.incremental else inner.unassign()
    if isinstance(step, CommitMarked):
        return inner.commit(asynchronous=False)
    if isinstance(step, ReadCommitted):
        return inner.committed(step.partitions, timeout=step.timeout_s)
    if isinstance(step, ReadAssignment):
        return inner.assignment()
    if isinstance(step, ReadMemberId):
        return inner.memberid()
    if isinstance(step, Wait):
        time.sleep(step.seconds)
        return None
    raise TypeError(f"not an inner-consumer step: {step!r}")


# --- the listener contract ---------------------------------------------------------------------
class RebalanceListener:
    """The hooks of a kafka-coop consumer: one typed listener, with the order and offset guarantees.

    Subclass it and override what you need (or pass the same functions as `start_offsets=`,
    `on_assigned=`, `on_revoked=`, `on_lost=`). Partitions are `[(topic, partition), ...]`. With
    `CoopAIOConsumer` every method may be `async def`. A hook that raises an `Exception` is logged and
    recorded in the event's `error`; the rebalance goes on. A `BaseException` (KeyboardInterrupt,
    SystemExit, asyncio.CancelledError) also lets the rebalance finish — commit, unassign, `owned`,
    event — and is then re-raised from `poll`/`consume`.

    Assignment — `start_offsets` → assign → `on_assigned` → `assigned` event:
      `start_offsets(partitions)` runs *before* the partitions are assigned and may return
      `{(topic, partition): offset}` for any of them (e.g. offsets kept in your database; also
      `confluent_kafka.OFFSET_BEGINNING` / `OFFSET_END`). Fetching starts there, under eager,
      cooperative and KIP-848 alike. Partitions it leaves out start at the group's committed offset, or
      `auto.offset.reset`. `on_assigned(partitions)` runs after they are assigned (`owned` includes
      them; `seek`, `pause` work here).

    Revocation — `on_revoked` → commit → unassign → `revoked` event:
      `on_revoked(partitions)` runs while the partitions are still yours: finish or abandon in-flight
      work and `mark_done` what is done. Then every offset marked done is committed synchronously, and
      only then are the partitions released, so the next owner resumes exactly after the last record
      marked done. The event's `committed` lists what was committed for the revoked partitions.

    Loss — unassign → `on_lost` → `lost` event:
      the partitions already belong to someone else (session expired, poll interval exceeded, member
      fenced, fatal error). Nothing is committed: a commit now could overwrite the new owner's. Undo
      side effects of uncommitted work here. If the loss is only discovered by the revoke's commit
      (the broker refused it as from a stale member), `on_revoked` has run first, then `on_lost`.
    """

    def start_offsets(self, partitions: Partitions) -> StartOffsets | None:
        return None

    def on_assigned(self, partitions: Partitions) -> None:
        return None

    def on_revoked(self, partitions: Partitions) -> None:
        return None

    def on_lost(self, partitions: Partitions) -> None:
        return None


@dataclass(frozen=True, slots=True)
class Hooks:
    """The user's hooks, whichever way they were given."""

    start_offsets: StartOffsetsHook | None = None
    on_assigned: Hook | None = None
    on_revoked: Hook | None = None
    on_lost: Hook | None = None

    @classmethod
    def of(
        cls,
        listener: RebalanceListener | None = None,
        *,
        start_offsets: StartOffsetsHook | None = None,
        on_assigned: Hook | None = None,
        on_revoked: Hook | None = None,
        on_lost: Hook | None = None,
    ) -> Hooks:
        if listener is None:
            return cls(start_offsets, on_assigned, on_revoked, on_lost)
        if any(h is not None for h in (start_offsets, on_assigned, on_revoked, on_lost)):
            from kafka_coop.errors import InvalidInput

            raise InvalidInput(
                "Both listener= and on_*/start_offsets= hooks were given.",
                hint="Pass either one RebalanceListener or the separate hook functions.",
            )
        return cls(listener.start_offsets, listener.on_assigned, listener.on_revoked, listener.on_lost)


@dataclass(frozen=True, slots=True)
class LegacyCallbacks:
    """confluent-style `subscribe(on_assign=, on_revoke=, on_lost=)` callbacks: `(consumer, partitions)`."""

    consumer: Any = None
    on_assign: LegacyCallback | None = None
    on_revoke: LegacyCallback | None = None
    on_lost: LegacyCallback | None = None


# --- errors --------------------------------------------------------------------------------------
def error_code(exc: BaseException) -> int | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return int(exc.args[0].code())
    return None


def describe_error(exc: BaseException) -> str:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        err = exc.args[0]
        return f"{err.name()}: {err.str()}"
    return f"{type(exc).__name__}: {exc}"


def _is_fatal(exc: BaseException) -> bool:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        err = exc.args[0]
        return bool(err.fatal()) or err.code() in _FATAL_CODES
    return False


@dataclass(frozen=True, slots=True)
class Eviction:
    """librdkafka evicted this member itself: its poll limit or its session ran out (it logged why)."""

    limit: str  # the setting that ran out: "max.poll.interval.ms" or "session.timeout.ms"
    at: float  # time.monotonic() when the line was seen


def fatal_error(
    code: int,
    detail: str,
    *,
    group: str,
    instance_id: str | None,
    protocol: RebalanceProtocol,
    evicted: Eviction | None = None,
) -> ConsumerFailed:
    """The typed exception for a fatal client error: what happened, in one sentence, and the fix.

    FENCED_INSTANCE_ID means "a request carried a member id the broker no longer holds for this
    group.instance.id". A second process with the same id is one cause; the other is this member itself:
    when its `max.poll.interval.ms` or session ran out (e.g. a synchronous commit waiting for a moving
    coordinator), librdkafka reset its member id and rejoined, and a request still carrying the old identity
    is fenced. librdkafka logs the eviction first (MAXPOLL / SESSTMOUT), so with `evicted` the message says
    so instead of blaming a twin; without it, it names both causes.
    """
    name = KafkaError(code).name()
    who = f"group.instance.id {instance_id!r}" if instance_id else "this member's group.instance.id"
    if code == KafkaError.FENCED_INSTANCE_ID and evicted is not None:
        age = max(0.0, time.monotonic() - evicted.at)
        if evicted.limit == "max.poll.interval.ms":
            fix = (
                "keep the time between two polls, blocking calls included (a synchronous commit waits while "
                "the group coordinator moves), under max.poll.interval.ms, or raise it"
            )
        else:
            fix = (
                "the group coordinator did not answer for session.timeout.ms (e.g. while it moved); raise "
                "session.timeout.ms if such pauses are expected"
            )
        return ConsumerFailed(
            f"The broker fenced this member of group {group!r} ({name}) after this member's own "
            f"{evicted.limit} ran out {age:.0f} s earlier: librdkafka reset its member id to rejoin, so a "
            "request still carrying the old one (e.g. a synchronous commit) no longer matched the member the "
            f"broker holds for {who}; no other member uses the id.",
            code=name,
            hint=f"This consumer cannot continue; create a new one (committed offsets are intact). To avoid "
            f"it, {fix}.",
        )
    if code == KafkaError.FENCED_INSTANCE_ID:
        return InstanceIdConflict(
            f"The broker fenced this member of group {group!r} ({name}): another running member uses {who}, "
            "or this member was evicted (its session.timeout.ms or max.poll.interval.ms ran out) and a "
            "request still carried its old member id.",
            code=name,
            hint="Give every running member its own group.instance.id (e.g. the pod name) and stop any "
            "duplicate; if there is none, keep the time between polls, blocking commits included, under "
            "max.poll.interval.ms. This consumer cannot continue; create a new one.",
        )
    if code == KafkaError.UNRELEASED_INSTANCE_ID:
        return InstanceIdConflict(
            f"Another member of group {group!r} still holds {who}, so under KIP-848 the broker refused "
            f"this one ({name}).",
            code=name,
            hint="Stop the other member or give this one its own group.instance.id; if this process replaces "
            "one that was killed, the old session holds the id until the broker's "
            "group.consumer.session.timeout.ms (45 s by default) runs out. This consumer cannot continue; "
            "create a new one once the id is free.",
        )
    return ConsumerFailed(
        f"The consumer of group {group!r} ({protocol}) stopped on a fatal error: {name}: {detail}",
        code=name,
        hint="This consumer cannot continue; create a new one.",
    )


def fatal_code_from_text(text: str) -> int:
    """Which fatal error a librdkafka message names (its text is rd_kafka_err2str of the cause)."""
    for code in (KafkaError.FENCED_INSTANCE_ID, KafkaError.UNRELEASED_INSTANCE_ID):
        if KafkaError(code).str() in text:
            return int(code)
    return int(KafkaError._FATAL)


def _keys(partitions: Iterable[ClientPartition]) -> Partitions:
    return [(tp.topic, tp.partition) for tp in partitions]


def _client_partitions(keys: Iterable[TopicPartition]) -> list[ClientPartition]:
    return [ClientPartition(topic, partition) for topic, partition in keys]


# --- the handler ---------------------------------------------------------------------------------
Phase = Literal["idle", "assigning", "revoking", "losing"]


class RebalanceHandler:
    """Decides, for each rebalance callback, the calls to make, the hooks to run and the event to emit.

    `owned` is what this member owns after the last callback, checked against the client's real
    `assignment()` each time. `failure` is set once a fatal client error stopped the consumer.
    """

    def __init__(
        self,
        *,
        protocol: RebalanceProtocol,
        stamp: EventStamp,
        hooks: Hooks,
        sink: EventSink | None,
        log: logging.Logger,
        eviction_window_s: float = EVICTION_WINDOW_S,
    ) -> None:
        self.protocol = protocol
        self.incremental = protocol != "eager"
        self.hooks = hooks
        self.legacy = LegacyCallbacks()
        self.failure: ConsumerFailed | None = None
        self.closing = False
        self._stamp = stamp
        self._sink = sink
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
        self._given: set[TopicPartition] = set()
        # When the latest rebalance callback (or fatal error) ran: the group's answer a FreezeGuard waits for.
        self.last_rebalance_at = 0.0
        self.eviction_window_s = eviction_window_s

    @property
    def owned(self) -> tuple[TopicPartition, ...]:
        return self._ownership.owned

    def note_eviction(self, limit: str) -> None:
        """librdkafka logged that it evicted this member itself (see `ClientLog`)."""
        self._eviction = Eviction(limit, time.monotonic())

    def fatal(self, code: int, detail: str) -> ConsumerFailed:
        """The typed exception for a fatal error, knowing whether this member was just evicted."""
        eviction = self._eviction
        if eviction is not None and time.monotonic() - eviction.at > self.eviction_window_s:
            eviction = None
        return fatal_error(
            code,
            detail,
            group=self._stamp.group,
            instance_id=self._stamp.instance_id,
            protocol=self.protocol,
            evicted=eviction,
        )

    # --- librdkafka's three callbacks ------------------------------------------------------------
    def assign(self, partitions: list[ClientPartition]) -> Steps[None]:
        self.last_rebalance_at = time.monotonic()
        started = time.perf_counter()
        keys = _keys(partitions)
        errors: list[str] = []
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
        if not self._legacy_assigned:
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
        self._reraise()

    def revoke(self, partitions: list[ClientPartition]) -> Steps[None]:
        self.last_rebalance_at = time.monotonic()
        started = time.perf_counter()
        keys = self._was_given(partitions)
        if self.failure is not None:
            yield from self._lose(partitions, started, [f"after fatal error {self.failure.code}"])
            return
        if self.protocol != "consumer":
            member_id = yield from self._read_member_id()
            if member_id == "":
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
        committed, commit_error, verdict = yield from self._commit_marked(keys)
        commit_ms = (time.perf_counter() - commit_started) * 1000.0
        if commit_error:
            errors.append(commit_error)
        if verdict == "fatal":
            yield from self._unassign(partitions, errors)
            assert self.failure is not None
            yield from self._fail_owned(self.failure, started, extra=keys, errors=errors)
            self._reraise()
            return
        if verdict == "evicted":
            yield from self._lose(partitions, started, errors)
            return
        yield from self._unassign(partitions, errors)
        self._ownership.apply("revoked", _keys(partitions))
        self._given -= set(_keys(partitions))
        yield from self._reconcile()
        yield from self._emit(
            "revoked", keys, started, committed=committed, error=_join(errors), commit_ms=commit_ms
        )
        self._reraise()

    def lose(self, partitions: list[ClientPartition]) -> Steps[None]:
        self.last_rebalance_at = time.monotonic()
        yield from self._lose(partitions, time.perf_counter(), [])

    def fail(self, error: ConsumerFailed) -> Steps[None]:
        """A fatal client error: librdkafka has dropped the assignment without a callback."""
        if self.failure is not None:
            return
        self.failure = error
        self.last_rebalance_at = time.monotonic()
        errors: list[str] = []
        if not self.closing:  # (a terminated group would never answer it)
            try:
                yield Unassign([], incremental=False)  # after a fatal error librdkafka accepts only this
            except Exception as exc:
                self._log.debug("unassign after fatal error: %s", describe_error(exc))
        yield from self._fail_owned(error, time.perf_counter(), extra=(), errors=errors)
        self._reraise()

    def commit_marked(self) -> Steps[str | None]:
        """The commit before close: every marked offset. Returns an error description, or None."""
        if self.failure is not None:
            return None
        _, error, verdict = yield from self._commit_marked(list(self.owned))
        if verdict == "fatal":
            assert self.failure is not None
            yield from self._fail_owned(self.failure, time.perf_counter(), extra=(), errors=[])
        return error

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
    def lifecycle(self, kind: EventKind, member_id: str) -> None:
        if kind == "closed":
            self._given.clear()
            self._ownership.replace(())  # a closed member owns nothing, whatever callbacks did not say
        self._deliver(
            self._stamp.make(kind, member_id=member_id, partitions=(), owned=self.owned, callback_ms=0.0)
        )

    # --- internals -------------------------------------------------------------------------------
    def _lose(self, partitions: list[ClientPartition], started: float, errors: list[str]) -> Steps[None]:
        keys = self._was_given(partitions)
        errors = list(errors)
        if self.failure is not None and not set(_keys(partitions)) & set(self.owned):
            # librdkafka's own lost callback after a fatal error: `fail` already reported these.
            yield from self._unassign(partitions, errors)
            self._reraise()
            return
        yield from self._unassign(partitions, errors)
        self._ownership.apply("lost", _keys(partitions))
        self._given -= set(_keys(partitions))
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
        self._reraise()

    def _fail_owned(
        self, error: ConsumerFailed, started: float, *, extra: Iterable[TopicPartition], errors: list[str]
    ) -> Steps[None]:
        """Everything this member owned is lost, and it owns nothing from now on."""
        lost = sorted({*self.owned, *(k for k in extra if k in self._given)})
        self._ownership.replace(())
        self._given.clear()
        errors = [*errors, f"fatal {error.code}: {error.message}"]
        if lost:
            self._phase = "losing"
            try:
                if self.hooks.on_lost is not None:
                    yield from self._hook("on_lost", self.hooks.on_lost, (list(lost),), errors)
                if self.legacy.on_lost is not None:
                    args = (self.legacy.consumer, _client_partitions(lost))
                    yield from self._hook("on_lost", self.legacy.on_lost, args, errors)
            finally:
                self._phase = "idle"
        yield from self._emit("lost", lost, started, error=_join(errors))

    def _was_given(self, partitions: list[ClientPartition]) -> Partitions:
        """The partitions of a librdkafka revoke/lost list that an `assigned` event gave this member."""
        return [key for key in _keys(partitions) if key in self._given]

    def _unassign(self, partitions: list[ClientPartition], errors: list[str]) -> Steps[None]:
        try:
            yield Unassign(partitions, self.incremental)
        except Exception as exc:
            errors.append(f"unassign: {describe_error(exc)}")
        except BaseException as exc:
            self._keep_interrupt(exc)

    def _commit_marked(
        self, keys: Sequence[TopicPartition]
    ) -> Steps[tuple[list[CommittedOffset] | None, str | None, Literal["ok", "failed", "evicted", "fatal"]]]:
        """Commit every marked offset; report those of `keys`. Never raises (BaseException aside)."""
        wanted = set(keys)
        for attempt in range(STALE_EPOCH_RETRIES + 1):
            try:
                result = yield CommitMarked()
            except KafkaException as exc:
                code = error_code(exc)
                if code == KafkaError._NO_OFFSET:
                    return [], None, "ok"  # nothing marked since the last commit: nothing to lose
                if code == KafkaError.STALE_MEMBER_EPOCH and attempt < STALE_EPOCH_RETRIES:
                    backoff = STALE_EPOCH_BACKOFF_S * (attempt + 1)
                    self._log.info(
                        "Commit refused with STALE_MEMBER_EPOCH (the group moved this member to a new epoch "
                        "its client has not read yet); retrying in %.2f s",
                        backoff,
                    )
                    yield Wait(backoff)  # the heartbeat response in flight brings the new epoch
                    continue
                if _is_fatal(exc):
                    code = code if code not in (None, KafkaError._FATAL) else fatal_code_from_text(str(exc))
                    self.failure = self.failure or self.fatal(code or KafkaError._FATAL, describe_error(exc))
                    return None, f"commit: {describe_error(exc)}", "fatal"
                if code in _EVICTED:
                    return None, f"commit: {describe_error(exc)}; not committed", "evicted"
                read_back = yield from self._read_back(keys)
                note = "committed lists the offsets read back from the broker"
                return read_back, f"commit failed: {describe_error(exc)}; {note}", "failed"
            except RuntimeError as exc:  # the consumer is closed underneath us
                return None, f"commit: {describe_error(exc)}", "failed"
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

    def _read_back(self, keys: Sequence[TopicPartition]) -> Steps[list[CommittedOffset] | None]:
        if not keys:
            return []
        try:
            back = yield ReadCommitted(_client_partitions(keys), READ_BACK_TIMEOUT_S)
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
        keys = set(_keys(real))
        if keys != set(self.owned):
            self._log.debug("owned %s corrected to the client's assignment %s", self.owned, sorted(keys))
            self._ownership.replace(keys)

    def _read_member_id(self) -> Steps[str]:
        if self.closing:  # see _reconcile: a terminated group never answers memberid()
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
        except BaseException as exc:  # finish the rebalance first, then let it through
            self._keep_interrupt(exc)
            errors.append(f"{name} hook interrupted: {type(exc).__name__}")
        return None

    def _keep_interrupt(self, exc: BaseException) -> None:
        if self._interrupt is None:
            self._interrupt = exc

    def _reraise(self) -> None:
        interrupt, self._interrupt = self._interrupt, None
        if interrupt is not None:
            raise interrupt

    def _emit(
        self,
        kind: EventKind,
        keys: Iterable[TopicPartition],
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
        self._deliver(event)

    def _deliver(self, event: RebalanceEvent) -> None:
        if self._sink is None:
            return
        try:
            self._sink.emit(event)
        except Exception:
            self._log.exception("Rebalance event sink failed; the event is dropped, consumption goes on")


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


# --- librdkafka's log and error callbacks --------------------------------------------------------
class ClientLog:
    """The `logger` given to librdkafka: its log lines go to Python logging, fatal ones to `on_fatal`.

    confluent-kafka calls `log(level, "%s [%s] %s", facility, client, text)` from inside
    `poll`/`consume`; an exception raised here comes out of that `poll`/`consume` call, which is how a
    fatal error reaches the service as a typed exception without a Python frame on the per-record path.
    librdkafka logs every fatal error (facility FATAL) because confluent-kafka always sets an error_cb.
    librdkafka's own evictions of this member (facility MAXPOLL, SESSTMOUT) go to `on_evicted`, which
    tells a later FENCED_INSTANCE_ID apart from a twin (see `fatal_error`).
    Connection failures (facility FAIL & co.) go to INFO: `ClientErrors` says, once and in a sentence,
    when no broker can be reached.
    """

    def __init__(
        self,
        logger: logging.Logger,
        on_fatal: Callable[[str], None] | None = None,
        on_evicted: Callable[[str], None] | None = None,
    ) -> None:
        self.logger = logger
        self.on_fatal = on_fatal
        self.on_evicted = on_evicted

    def log(self, level: int, fmt: str, *args: Any) -> None:
        facility = str(args[0]) if args else ""
        if facility == "FATAL" and self.on_fatal is not None:
            self.logger.log(level, fmt, *args)
            self.on_fatal(str(args[-1]) if args else fmt)
            return
        if facility in _EVICTION_FACILITIES and self.on_evicted is not None:
            self.on_evicted(_EVICTION_FACILITIES[facility])
        if facility in _CONNECTION_FACILITIES and level >= logging.WARNING:
            level = logging.INFO
        self.logger.log(level, fmt, *args)


class ClientErrors:
    """The `error_cb`: one sentence when the cluster cannot be reached (librdkafka keeps retrying), then
    the user's own `error_cb`, if any."""

    def __init__(
        self, logger: logging.Logger, bootstrap: str, user: Callable[[KafkaError], Any] | None
    ) -> None:
        self.logger = logger
        self.bootstrap = bootstrap
        self.user = user
        self.warned = False
        self.last_transport: str | None = None

    def __call__(self, err: KafkaError) -> None:
        code = err.code()
        if code == KafkaError._TRANSPORT:
            self.last_transport = err.str()  # the why, for the sentence when every broker is down
        if not self.warned and (code in _UNREACHABLE or code in _REFUSED):
            self.warned = True
            what = "refused this client's credentials" if code in _REFUSED else "cannot be reached"
            why = (
                self.last_transport
                if code == KafkaError._ALL_BROKERS_DOWN and self.last_transport
                else err.str()
            )
            self.logger.warning(
                "The Kafka cluster at %s %s (%s); the consumer keeps retrying.", self.bootstrap, what, why
            )
        if self.user is not None:
            self.user(err)

    def reached(self) -> None:
        """The cluster answered (an assignment arrived): warn again at the next outage."""
        self.warned = False


def awaitable(value: Any) -> bool:
    return inspect.isawaitable(value)

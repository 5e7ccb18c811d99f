"""CoopAIOConsumer: `confluent_kafka.aio.AIOConsumer` with kafka-coop's rebalance handler and offset contract.

The asyncio driver of `_handler.RebalanceHandler`. How AIOConsumer runs things (confluent-kafka 2.16,
`confluent_kafka/aio/_AIOConsumer.py` and `_common.py`) decides its shape:

- every AIOConsumer method runs the blocking `Consumer` call on a thread-pool worker, under a
  per-call identity that confluent-kafka's reentrancy gate checks: a call from another identity waits
  until the one in flight returns (so nothing here ever calls the inner `Consumer` from the loop);
- librdkafka's rebalance callbacks fire inside `poll`/`consume`/`close` on that worker; AIOConsumer
  runs the coroutine it was given on the event loop and blocks the worker until it is done, and calls
  the coroutine makes on the consumer are admitted as re-entrant (same identity);
- `logger` and `error_cb` (also `stats_cb`, `throttle_cb`, `on_commit`) are called on the loop.

So the three rebalance callbacks are coroutines that drive the handler's steps with `run_async`: each
inner-consumer step is the awaited AIOConsumer call it names, and hooks — plain or `async def` — run
on the event loop, where a service's own asyncio objects live. Sinks also run on the loop.

A fatal client error reaches the loop through librdkafka's log (`ClientLog`, facility FATAL), after
the `consume`/`poll` that carried it. `poll` and `consume` are therefore thin coroutines around
AIOConsumer's own: when a fatal error was logged, they run the handler's `fail` (a `lost` event with
an empty `owned`, `on_lost`) and raise `ConsumerFailed`, on that call and every later one; and they hold
back records fetched before a freeze past the session, as the sync driver does (`_freeze.FreezeGuard`).
A `BaseException` from a hook (asyncio.CancelledError above all) is kept by the callback and raised by
the `poll`/`consume`/`close` that served it, never sent back through librdkafka's rebalance callback.
That is one coroutine frame per batch; `bench/wrapper_overhead.py` measures it against a raw AIOConsumer.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, NoReturn

from confluent_kafka import KafkaException
from confluent_kafka import TopicPartition as ClientPartition
from confluent_kafka.aio import AIOConsumer

from kafka_coop.consumer._freeze import call_timeout_s, passed_through
from kafka_coop.consumer._handler import (
    Assign,
    CallHook,
    ClientErrors,
    ClientLog,
    CommitMarked,
    Hook,
    LegacyCallback,
    LegacyCallbacks,
    ReadAssignment,
    ReadCommitted,
    ReadMemberId,
    RebalanceListener,
    StartOffsetsHook,
    Step,
    Steps,
    Unassign,
    Wait,
    describe_error,
    fatal_code_from_text,
    run_async,
)
from kafka_coop.consumer._setup import LIBRDKAFKA_LOGGER, check_duplicate_id, manifest, prepare, publisher
from kafka_coop.errors import ConsumerFailed
from kafka_coop.events import RebalanceEvent, TopicPartition
from kafka_coop.identity import DuplicatePolicy
from kafka_coop.manifest import Manifest
from kafka_coop.settings import ConsumerSettings
from kafka_coop.sinks import EventSink

log = logging.getLogger("kafka_coop.consumer")
# AIOConsumer's default; at least 2, since a rebalance callback's own calls need a second worker.
DEFAULT_MAX_WORKERS = 100


def execute_async(aio: AIOConsumer) -> Callable[[Step], Awaitable[Any]]:
    """The asyncio driver's executor: each inner-consumer step is the awaited AIOConsumer call it names;
    hooks are called on the loop and awaited when they return an awaitable."""

    async def execute(step: Step) -> Any:
        if isinstance(step, CallHook):
            result = step.fn(*step.args)
            return await result if inspect.isawaitable(result) else result
        if isinstance(step, Assign):
            if step.incremental:
                return await aio.incremental_assign(step.partitions)
            return await aio.assign(step.partitions)
        if isinstance(step, Unassign):
            if step.incremental:
                return await aio.incremental_unassign(step.partitions)
            return await aio.unassign()
        if isinstance(step, CommitMarked):
            return await aio.commit(asynchronous=False)
        if isinstance(step, ReadCommitted):
            return await aio.committed(step.partitions, timeout=step.timeout_s)
        if isinstance(step, ReadAssignment):
            return await aio.assignment()
        if isinstance(step, ReadMemberId):
            return await member_id(aio)
        if isinstance(step, Wait):
            await asyncio.sleep(step.seconds)
            return None
        raise TypeError(f"not a handler step: {step!r}")

    return execute


async def member_id(aio: AIOConsumer) -> str:
    """`memberid()` through AIOConsumer's gate-aware dispatch (AIOConsumer has no `memberid` of its own).

    `_call` and `_consumer` are AIOConsumer internals (confluent-kafka 2.13-2.16); a unit test pins
    them, and if they go the member id is reported empty rather than breaking a rebalance.
    """
    call = getattr(aio, "_call", None)
    inner = getattr(aio, "_consumer", None)
    if call is None or inner is None:
        return ""
    return str(await call(inner.memberid) or "")


class CoopAIOConsumer:
    """Drop-in for `confluent_kafka.aio.AIOConsumer` with the same hooks, events and offset contract as
    `CoopConsumer`; create it inside a running event loop (as AIOConsumer requires).

    `conf` is a librdkafka dict or `ConsumerSettings`; as with AIOConsumer, `error_cb`, `stats_cb`,
    `throttle_cb` and `on_commit` given in it are coroutines (they run on the loop). Hooks: a
    `RebalanceListener` (`listener=`) or the functions `start_offsets=`, `on_assigned=`, `on_revoked=`,
    `on_lost=`, each plain or `async def`; they run on the event loop, in the order and with the offset
    guarantees written on `RebalanceListener`. `events` is a sink, a callable or a path (JSON lines);
    sinks are called on the loop, so keep them quick. Anything not defined here passes through to the
    AIOConsumer (awaitable).

    Offset contract (docs/consumer.md "The offset contract"): a record is done when the application
    says so, `await consumer.mark_done(msg)` (the same as `store_offsets`; `offsets=[...]` marks a whole
    batch in one call). On revoke, and on `close()` — also from `__aexit__`, with or without an
    exception — what is marked done is committed, nothing else; on lost nothing is committed. A fatal
    client error emits `lost` with an empty `owned`, runs `on_lost` and raises `ConsumerFailed`
    (`InstanceIdConflict` for the group.instance.id cases) from `poll`/`consume`.

    The duplicate-id check (`duplicate_check=`) and the manifest topic check run in `subscribe`, off
    the loop, before the member joins.
    """

    def __init__(
        self,
        conf: Mapping[str, Any] | ConsumerSettings,
        *,
        listener: RebalanceListener | None = None,
        start_offsets: StartOffsetsHook | None = None,
        on_assigned: Hook | None = None,
        on_revoked: Hook | None = None,
        on_lost: Hook | None = None,
        events: EventSink | Callable[[RebalanceEvent], Any] | str | None = None,
        manifests: bool | str = False,
        duplicate_check: DuplicatePolicy = "off",
        logger: logging.Logger | None = None,
        max_workers: int = DEFAULT_MAX_WORKERS,
    ) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "CoopAIOConsumer must be created inside a running event loop (in an async function); "
                "synchronous code uses CoopConsumer."
            ) from None
        prepared = prepare(
            conf,
            listener=listener,
            start_offsets=start_offsets,
            on_assigned=on_assigned,
            on_revoked=on_revoked,
            on_lost=on_lost,
            events=events,
            logger=logger,
            default_log=log,
        )
        self._prepared = prepared
        self.settings = prepared.settings
        self._log = prepared.log
        self.protocol = prepared.protocol
        self._sink = prepared.sink
        self._handler = prepared.handler
        self._guard = prepared.guard
        self._closed = False
        self._subscribed = False
        self._duplicate_check = duplicate_check
        self._fatal_text: str | None = None
        # A BaseException a hook raised inside a rebalance callback (asyncio.CancelledError,
        # KeyboardInterrupt, SystemExit), kept until the poll/consume/close that served it returns.
        self._interrupt: BaseException | None = None
        self._member_id = ""
        self._client_log = ClientLog(
            prepared.callbacks.get("logger") or logging.getLogger(LIBRDKAFKA_LOGGER),
            self._on_fatal_log,
            self._handler.note_eviction,
        )
        self._user_error_cb = prepared.callbacks.get("error_cb")
        self._errors = ClientErrors(self._log, self.settings.bootstrap_servers, None)
        self._consumer = AIOConsumer(
            {**prepared.client_conf(), "logger": self._client_log, "error_cb": self._on_error},
            max_workers=max_workers,
        )
        self._execute = execute_async(self._consumer)
        self._publisher = publisher(prepared, manifests, self._manifest)
        # Marking done is AIOConsumer's own coroutine method: no frame of ours per record.
        self.store_offsets: Callable[..., Awaitable[Any]] = self._consumer.store_offsets
        self.mark_done: Callable[..., Awaitable[Any]] = self._consumer.store_offsets

    # --- pass-through ----------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        return getattr(self._consumer, name)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "failed" if self.failure else "open"
        return (
            f"CoopAIOConsumer(group={self.settings.group_id!r}, protocol={self.protocol!r}, "
            f"instance_id={self.settings.instance_id!r}, state={state!r})"
        )

    @property
    def owned(self) -> tuple[TopicPartition, ...]:
        return self._handler.owned

    @property
    def failure(self) -> ConsumerFailed | None:
        """The fatal error that stopped this consumer, or None."""
        return self._handler.failure

    # --- the per-batch path --------------------------------------------------------------------
    async def consume(self, *args: Any, **kwargs: Any) -> list[Any]:
        if self._fatal_text is not None or self._handler.failure is not None:
            await self._fail()
        start = time.monotonic()
        messages: list[Any] = await self._consumer.consume(*args, **kwargs)
        end = time.monotonic()
        if self._interrupt is not None:
            self._raise_interrupt()
        if self._fatal_text is not None or self._handler.failure is not None:
            await self._fail()
        guard = self._guard
        if end - guard.last_end <= guard.limit_s and end >= guard.hold_until:
            guard.last_end = end
            return messages
        if guard.verdict(start, end, call_timeout_s(args, kwargs, 1), self._handler.last_rebalance_at):
            return messages
        await self._seek_back(guard.seek_targets(messages))
        return passed_through(messages)

    async def poll(self, *args: Any, **kwargs: Any) -> Any:
        if self._fatal_text is not None or self._handler.failure is not None:
            await self._fail()
        start = time.monotonic()
        message = await self._consumer.poll(*args, **kwargs)
        end = time.monotonic()
        if self._interrupt is not None:
            self._raise_interrupt()
        if self._fatal_text is not None or self._handler.failure is not None:
            await self._fail()
        guard = self._guard
        if end - guard.last_end <= guard.limit_s and end >= guard.hold_until:
            guard.last_end = end
            return message
        timeout = call_timeout_s(args, kwargs, 0)
        if (
            guard.verdict(start, end, timeout, self._handler.last_rebalance_at)
            or message is None
            or message.error() is not None
        ):
            return message
        await self._seek_back(guard.seek_targets([message]))
        return None

    async def _seek_back(self, targets: list[tuple[str, int, int]]) -> None:
        """Fetch held records again from their first offset, if this member still owns the partition."""
        for topic, partition, offset in targets:
            try:
                await self._consumer.seek(ClientPartition(topic, partition, offset))
            except KafkaException as exc:  # no longer assigned: the new owner reads them
                self._log.debug("seek back %s-%d: %s", topic, partition, describe_error(exc))

    # --- lifecycle -------------------------------------------------------------------------------
    async def subscribe(
        self,
        topics: Sequence[str],
        on_assign: LegacyCallback | None = None,
        on_revoke: LegacyCallback | None = None,
        on_lost: LegacyCallback | None = None,
    ) -> None:
        """Subscribe with kafka-coop's callbacks; confluent-style ones (`async def on_assign(consumer,
        partitions)`, as AIOConsumer takes them) run inside them, as written on `CoopConsumer.subscribe`;
        their `await consumer.assign(...)` is routed through the handler."""
        self._require_open()
        loop = asyncio.get_running_loop()
        if self._duplicate_check != "off" and self.settings.instance_id:
            await loop.run_in_executor(None, self._check_duplicate)
        self._handler.legacy = LegacyCallbacks(self, on_assign, on_revoke, on_lost)
        # Always pass all three: without on_lost, lost partitions arrive through on_revoke.
        await self._consumer.subscribe(
            list(topics), on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )
        self._subscribed = True
        self._guard.restart()
        self._handler.lifecycle("started", await self._read_member_id())
        if self._publisher is not None:
            await loop.run_in_executor(None, self._publisher.start)

    async def commit(self, *args: Any, **kwargs: Any) -> Any:
        self._require_open()
        return await self._consumer.commit(*args, **kwargs)

    async def assign(self, partitions: list[Any]) -> None:
        step = self._handler.legacy_assign(partitions)
        if step is None:
            await self._consumer.assign(partitions)
        else:
            await self._execute(step)

    async def incremental_assign(self, partitions: list[Any]) -> None:
        step = self._handler.legacy_assign(partitions)
        if step is None:
            await self._consumer.incremental_assign(partitions)
        else:
            await self._execute(step)

    async def unassign(self) -> None:
        if not self._handler.legacy_unassign():
            await self._consumer.unassign()

    async def incremental_unassign(self, partitions: list[Any]) -> None:
        if not self._handler.legacy_unassign():
            await self._consumer.incremental_unassign(partitions)

    async def close(self) -> None:
        """Commit what is marked done, leave the group (revoking through the handler), close the sinks.

        The same sequence as `CoopConsumer.close`, awaited: the loop keeps running meanwhile.
        """
        if self._closed:
            return
        self._handler.closing = True
        loop = asyncio.get_running_loop()
        try:
            if self._publisher is not None:
                await loop.run_in_executor(None, self._publisher.close)
            if self._subscribed and self._handler.failure is None:
                error = await run_async(self._handler.commit_marked(), self._execute)
                if error:
                    self._log.warning("Commit on close failed: %s", error)
            try:
                await self._consumer.close()
            except (KafkaException, ConsumerFailed) as exc:
                self._log.warning("Closing the client reported: %s", describe_error(exc))
        finally:
            self._closed = True
            self._handler.lifecycle("closed", "")
            if self._sink is not None:
                try:
                    self._sink.close()
                except Exception:
                    self._log.exception("Closing the event sink failed")
        if self._interrupt is not None:  # a hook interrupted the revoke close made: closed, then raised
            self._raise_interrupt()

    async def __aenter__(self) -> CoopAIOConsumer:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def _require_open(self) -> None:
        if self._closed:
            raise RuntimeError("This CoopAIOConsumer is closed; create a new one.")

    # --- callbacks from librdkafka (run on the loop by AIOConsumer, inside poll/consume/close) --------
    async def _rebalance(self, steps: Steps[None]) -> None:
        """Run a rebalance callback's steps; keep an interrupt a hook raised instead of raising it here.

        Raised from this coroutine, it would go back through AIOConsumer's callback trampoline into
        librdkafka's rebalance callback as a different exception (concurrent.futures.CancelledError for
        asyncio.CancelledError), and confluent-kafka's crash path: seen on the broker under eager, the
        service's close() then never returned. The handler has finished the rebalance (commit, unassign,
        `owned`, event) before it re-raises, so `poll`/`consume`/`close` raise it as soon as they return.
        """
        try:
            await run_async(steps, self._execute)
        except ConsumerFailed:
            raise
        except BaseException as exc:
            if self._interrupt is None:
                self._interrupt = exc

    def _raise_interrupt(self) -> NoReturn:
        interrupt, self._interrupt = self._interrupt, None
        assert interrupt is not None
        raise interrupt

    async def _on_assign(self, _consumer: Any, partitions: list[Any]) -> None:
        self._errors.reached()
        await self._rebalance(self._handler.assign(partitions))
        # Not while closing: the tombstone is written, and a terminated group never answers memberid().
        if self._publisher is not None and not self._handler.closing:
            await self._read_member_id()
            self._publisher.publish_now()

    async def _on_revoke(self, _consumer: Any, partitions: list[Any]) -> None:
        await self._rebalance(self._handler.revoke(partitions))
        failure = self._handler.failure
        if failure is not None and not self._handler.closing:
            raise failure

    async def _on_lost(self, _consumer: Any, partitions: list[Any]) -> None:
        await self._rebalance(self._handler.lose(partitions))

    async def _on_error(self, err: Any) -> None:
        self._errors(err)
        if self._user_error_cb is not None:
            result = self._user_error_cb(err)
            if inspect.isawaitable(result):
                await result

    def _on_fatal_log(self, text: str) -> None:
        """Called on the loop (AIOConsumer forwards librdkafka's log there): the next poll/consume fails."""
        if self._fatal_text is None:
            self._fatal_text = text

    async def _fail(self) -> None:
        """The failure (logged FATAL, or found by the handler, e.g. a fenced commit), raised every time."""
        if self._handler.failure is None:
            text = self._fatal_text or ""
            error = self._handler.fatal(fatal_code_from_text(text), text)
            await run_async(self._handler.fail(error), self._execute)
        failure = self._handler.failure
        assert failure is not None
        raise failure

    # --- helpers ---------------------------------------------------------------------------------
    async def _read_member_id(self) -> str:
        with contextlib.suppress(RuntimeError, KafkaException):  # closed: keep the last one read
            self._member_id = await member_id(self._consumer)
        return self._member_id

    def _manifest(self) -> Manifest | None:
        """Built on the loop (on assign) and on the heartbeat thread: from the cached member id only,
        never a call on the client (which would wait on the consume in flight)."""
        return manifest(self._prepared, self._member_id)

    def _check_duplicate(self) -> None:
        check_duplicate_id(self._prepared, self._duplicate_check)

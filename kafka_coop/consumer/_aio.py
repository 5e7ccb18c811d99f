"""CoopAIOConsumer: the asyncio face of the same consumer, over a `confluent_kafka.Consumer` and a pool.

Like `confluent_kafka.aio.AIOConsumer`, every blocking call runs on a worker of a thread pool; unlike it,
a rebalance never needs a second worker. librdkafka runs the rebalance callbacks inside the
`poll`/`consume`/`close` that serves them, on that call's worker, and kafka-coop executes the handler's
steps right there, against the client (the client's gate admits the thread that holds it). Only hooks
and sinks go to the event loop (`Bridge`), where a service's asyncio objects live; the worker waits for
them, and a client call a hook awaits meanwhile (`await consumer.seek(...)`, `commit()`, ...) is run by
that waiting worker, so nothing in a rebalance waits for the pool. Marking done is a `deque.append` on
the loop (no worker, no client call), so tasks marking records while a `consume` serves a rebalance
never park workers behind the client's gate.

A cancelled `consume()`/`poll()` loses nothing: its worker may still take records from librdkafka; the
next call waits for it and hands those records out first (until then they are not done: a commit never
passes them), and a revoke drops those of the partitions it takes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import inspect
import logging
import queue
import threading
from collections.abc import Awaitable, Callable, Generator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, Message
from confluent_kafka import TopicPartition as ClientPartition

from kafka_coop.consumer._args import check_partitions, check_unassign, commit_flag
from kafka_coop.consumer._clock import WitnessedClock
from kafka_coop.consumer._close import CloseReport, treat_as_done_on_close
from kafka_coop.consumer._core import FOLD_BATCHES, FOLD_RECORDS, ClientFactory, WrappedClient
from kafka_coop.consumer._handler import client_partitions
from kafka_coop.consumer._listener import (
    Hook,
    LegacyCallback,
    LegacyCallbacks,
    RebalanceListener,
    StartOffsetsHook,
)
from kafka_coop.consumer._reconfigure import ControlChoice, LiveControl, live_control
from kafka_coop.consumer._setup import (
    DriverSetup,
    check_duplicate_id,
    check_topics,
    manifest,
    prepare,
    publisher,
    rebuild,
)
from kafka_coop.consumer._shutdown import CLOSE_TIMEOUT_S, ShutdownSignal, SignalStop
from kafka_coop.consumer._subscription import SubscriptionWatch
from kafka_coop.errors import ConsumerFailed, InvalidInput
from kafka_coop.events import PartitionKey, RebalanceEvent
from kafka_coop.identity import DuplicatePolicy
from kafka_coop.manifest import ControlOutcome, Manifest
from kafka_coop.settings import ConsumerSettings
from kafka_coop.sinks import EventSink

log = logging.getLogger("kafka_coop.consumer")
# AIOConsumer's default. At least 2: a consume in flight holds one, and the application's other calls
# (commit, position, ...) need another.
DEFAULT_MAX_WORKERS = 100
MIN_WORKERS = 2
# The client's gate identity (confluent-kafka >= 2.16): set on the loop while a hook runs, so a hook or
# sink may also call the inner client directly, as the callback's own thread would.
_GATE_IDENTITY: contextvars.ContextVar[int] | None
try:
    from confluent_kafka.cimpl import _reentry_identity_var as _GATE_IDENTITY
except ImportError:  # pragma: no cover - older confluent-kafka: no gate, nothing to present
    _GATE_IDENTITY = None


class _Done:
    """What `mark_done` returns under asyncio: already done, so `await consumer.mark_done(msg)` costs one
    frame, and a mark made from a plain function or another thread counts even if never awaited."""

    __slots__ = ()

    def __await__(self) -> Generator[None, None, None]:
        yield from ()


_DONE = _Done()


class CallQueue:
    """Client calls a hook awaits while its rebalance callback's worker waits: that worker runs them."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.open = True
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()

    async def submit(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        future = self.loop.create_future()
        self._queue.put((fn, args, kwargs, future))
        return await future

    def close(self) -> None:
        self._queue.put(None)

    def serve(self) -> None:
        """Run queued calls on this thread until `close()`; then run what is left and stop."""
        while True:
            item = self._queue.get()
            if item is None:
                break
            self._run(item)
        self.open = False
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                self._run(item)

    def _run(self, item: Any) -> None:
        fn, args, kwargs, future = item
        try:
            value, error = fn(*args, **kwargs), None
        except BaseException as exc:
            value, error = None, exc
        self.loop.call_soon_threadsafe(_settle, future, value, error)


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


_IN_REBALANCE: contextvars.ContextVar[CallQueue | None] = contextvars.ContextVar(
    "kafka_coop_rebalance_calls", default=None
)


class Bridge:
    """Runs hooks, sinks and the conf's coroutine callbacks on the event loop, for a worker thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.loop_thread = threading.get_ident()
        self._detached: set[asyncio.Future[Any]] = set()

    def run(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        if threading.get_ident() == self.loop_thread or self.loop.is_closed():
            result = fn(*args)
            if inspect.isawaitable(result):  # cannot wait here: let it run on its own
                task = asyncio.ensure_future(result, loop=self.loop)
                self._detached.add(task)
                task.add_done_callback(self._detached.discard)
                return None
            return result
        calls = CallQueue(self.loop)
        identity = threading.get_ident()

        async def runner() -> tuple[bool, Any]:
            token = _IN_REBALANCE.set(calls)
            gate = _GATE_IDENTITY.set(identity) if _GATE_IDENTITY is not None else None
            try:
                result = fn(*args)
                if inspect.isawaitable(result):
                    result = await result
                return True, result
            except BaseException as exc:  # the very exception the hook raised, for the handler
                return False, exc
            finally:
                if gate is not None and _GATE_IDENTITY is not None:
                    _GATE_IDENTITY.reset(gate)
                _IN_REBALANCE.reset(token)

        future = asyncio.run_coroutine_threadsafe(runner(), self.loop)
        future.add_done_callback(lambda _: calls.close())
        calls.serve()
        ok, value = future.result()
        if not ok:
            raise value
        return value


class CoopAIOConsumer:
    """Drop-in for `confluent_kafka.aio.AIOConsumer` with the same hooks, events and offset ownership as
    `CoopConsumer`; create it inside a running event loop (as AIOConsumer requires).

    `conf` is a librdkafka dict or `ConsumerSettings`; as with AIOConsumer, `error_cb`, `stats_cb`,
    `throttle_cb` and `on_commit` given in it (or in `callbacks=`) may be coroutines (they run on the
    loop). Hooks: a `RebalanceListener` (`listener=`) or the functions `start_offsets=`, `on_assigned=`,
    `on_revoked=`, `on_lost=`, each plain or `async def`; they run on the event loop, in the order and
    with the offset guarantees written on `RebalanceListener`. `events` is a sink, a callable or a path;
    sinks are called on the loop, so keep them quick. Anything not defined here passes through to the
    inner consumer, awaitable.

    Offsets as `CoopConsumer` (drop-in: what the application consumed past is done; explicit marks
    with `enable.auto.offset.store=false`: `await consumer.mark_done(msg)` from any task, in any order).
    `max_workers` is the pool's size (at least 2); `executor=` gives your own pool instead.

    Stopping: as `CoopConsumer`, SIGTERM and SIGINT end an `async with` block on the main thread cleanly
    (the next `poll`/`consume` raises `ShutdownSignal`; a call in flight returns at its timeout), unless
    the application handles them itself or passes `handle_signals=False` (docs/consumer.md "Stopping").
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
        callbacks: Mapping[str, Any] | None = None,
        transactional: bool = False,
        max_workers: int = DEFAULT_MAX_WORKERS,
        executor: concurrent.futures.Executor | None = None,
        client: ClientFactory | None = None,
        handle_signals: bool = True,
        clock: WitnessedClock | None = None,
        control: ControlChoice = False,
    ) -> None:
        self._handle_signals = handle_signals
        self._clock = clock  # a rebuilt client's core goes on on the same clock
        self._factory: ClientFactory = client or Consumer
        self._hook_args: dict[str, Any] = {
            "listener": listener,
            "start_offsets": start_offsets,
            "on_assigned": on_assigned,
            "on_revoked": on_revoked,
            "on_lost": on_lost,
        }
        self._subscription: tuple[list[str], Any, Any, Any] | None = None
        self._control_armed = False
        self._holding = False
        # A live rebuild runs on one worker; the calls other tasks make meanwhile wait for it (_enter) and
        # go to the client it installs, and it waits for the calls in flight before closing the old one.
        self._rebuild = threading.Condition()
        self._rebuilding = False
        self._in_flight = 0
        self._control_ended = False  # set by close: no control record is acted on after
        self._retired: list[tuple[Any, str]] = []  # (a client or core a rebuild replaced, which)
        self._signals: SignalStop | None = None
        self._watch: SubscriptionWatch | None = None
        self._watch_topics = client is None  # the fake client has no cluster to ask
        self._stopped: ShutdownSignal | None = None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "CoopAIOConsumer must be created inside a running event loop (in an async function); "
                "synchronous code uses CoopConsumer."
            ) from None
        if executor is None and max_workers < MIN_WORKERS:
            raise InvalidInput(
                f"max_workers={max_workers} is too small: a consume in flight holds one worker and every "
                "other call needs another.",
                hint=f"Give CoopAIOConsumer max_workers={MIN_WORKERS} or more (the default is "
                f"{DEFAULT_MAX_WORKERS}).",
            )
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
            callbacks=callbacks,
            transactional=transactional,
            clock=clock,
        )
        self._prepared = prepared
        self.settings = prepared.settings
        self.protocol = prepared.protocol
        self._log = prepared.log
        self._handler = prepared.handler
        self._duplicate_check = duplicate_check
        self._manifests = manifests
        self._bridge = bridge = Bridge(loop)
        self._owns_executor = executor is None
        self._executor = executor or concurrent.futures.ThreadPoolExecutor(
            max_workers, thread_name_prefix="kafka-coop-aio"
        )
        for name in ("stats_cb", "throttle_cb"):  # AIOConsumer runs these on the loop too
            if name in prepared.callbacks:
                prepared.callbacks[name] = self._on_loop(prepared.callbacks[name])
        user_error_cb = prepared.callbacks.get("error_cb")
        self._core = core = WrappedClient(
            prepared,
            client or Consumer,
            run_hook=bridge.run,
            error_cb=self._on_loop(user_error_cb) if user_error_cb is not None else None,
            on_commit=prepared.callbacks.get("on_commit"),
        )
        self._consumer = core.inner
        self._publisher = publisher(prepared, manifests, self._manifest)
        self._install_calls(core)
        # Live reconfiguration (docs/consumer.md): off unless asked for; it arms the next call's job.
        self._control: LiveControl | None = live_control(control, prepared, self._control_arm, self._log)

    def _install_calls(self, core: WrappedClient) -> None:
        self._consume_fn = core.make_consume(hand_out=False)
        self._poll_fn = core.make_poll(hand_out=False)
        self._handed = core.ledger.handed.append if core.ledger is not None else None
        if core.ledger is not None:
            append = core.ledger.marks.append

            def mark_done(message: Message) -> Awaitable[None]:
                append(message)
                return _DONE

            self.__dict__["mark_done"] = mark_done
        else:
            self.__dict__.pop("mark_done", None)

    def _on_loop(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        bridge = self._bridge

        def on_loop(*args: Any) -> Any:
            return bridge.run(fn, args)

        return on_loop

    # --- the per-batch path ------------------------------------------------------------------------
    async def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        """`AIOConsumer.consume`. Cancelling the await loses nothing (see the module docstring)."""
        if self._stopped is not None:
            raise self._stopped
        future = self._executor.submit(self._consume_job, num_messages, timeout)
        try:
            messages: list[Message] = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            self._core.cancelled.append(future)  # what it takes is sought back before the next call
            raise
        if self._handed is not None:
            # Folded before registering it (keeps the records handed out short-lived for the GC; the
            # ones folded are all marked in a sequential loop, none left over: see WrappedClient.make_poll).
            if len(self._core.ledger.handed) >= FOLD_BATCHES:  # type: ignore[union-attr]
                self._core.fold()
            self._handed(messages)
        return messages

    def _consume_job(self, num_messages: int, timeout: float) -> list[Message]:
        if self._control is None:
            return self._consume_now(num_messages, timeout)
        if self._control_armed or self._holding:
            self._control_run(timeout)
            if self._holding:
                return []
        self._enter()
        try:
            return self._consume_now(num_messages, timeout)
        finally:
            self._leave()

    def _consume_now(self, num_messages: int, timeout: float) -> list[Message]:
        core = self._core
        core.settle_cancelled()
        if core.carry:  # what a cancelled call took comes first
            return core.take_carry(max(num_messages, 1))
        return self._consume_fn(num_messages, timeout)

    async def poll(self, timeout: float = -1) -> Message | None:
        """`AIOConsumer.poll` (one hop to the pool per record: prefer `consume`)."""
        if self._stopped is not None:
            raise self._stopped
        future = self._executor.submit(self._poll_job, timeout)
        try:
            message: Message | None = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            self._core.cancelled.append(future)
            raise
        if self._handed is not None and message is not None:
            if len(self._core.ledger.handed) >= FOLD_RECORDS:  # type: ignore[union-attr]
                self._core.fold()
            self._handed(message)
        return message

    def _poll_job(self, timeout: float) -> Message | None:
        if self._control is None:
            return self._poll_now(timeout)
        if self._control_armed or self._holding:
            self._control_run(timeout)
            if self._holding:
                return None
        self._enter()
        try:
            return self._poll_now(timeout)
        finally:
            self._leave()

    def _poll_now(self, timeout: float) -> Message | None:
        core = self._core
        core.settle_cancelled()
        if core.carry:
            carried: Message = core.take_carry(1)[0]
            if core.ledger is None:
                core.state.held = carried
            return carried
        return self._poll_fn(timeout)

    def mark_done(self, message: Message) -> Awaitable[None]:
        """Explicit marks (`enable.auto.offset.store=false`): `message` is processed. Any task or thread,
        any order; awaiting it is optional (it never waits)."""
        self._core.store_offsets(message)
        return _DONE

    async def store_offsets(
        self, message: Message | None = None, offsets: list[ClientPartition] | None = None
    ) -> None:
        """`store_offsets`, kept by kafka-coop (no pool worker): see `CoopConsumer.store_offsets`."""
        self._core.store_offsets(message, offsets, confluent=True)

    async def commit(
        self,
        message: Message | None = None,
        offsets: list[ClientPartition] | None = None,
        asynchronous: bool = True,
        *args: Any,
        **kwargs: Any,
    ) -> list[ClientPartition] | None:
        """`commit()` as `CoopConsumer.commit`: without arguments, what was consumed (drop-in: the batch
        the application holds counts as processed) or marked done."""
        self._require_open()
        asynchronous = commit_flag(asynchronous, args, kwargs)
        done = self._core.state.held
        result: list[ClientPartition] | None = await self._call(
            self._core.commit_app, message, offsets, asynchronous, done=done
        )
        return result

    async def committable(self) -> list[ClientPartition]:
        """The offsets `commit()` would commit now, for `send_offsets_to_transaction`."""
        done = self._core.state.held
        result: list[ClientPartition] = await self._call(self._core.offsets, self._core.keys(), done=done)
        return result

    # --- pass-through and dispatch -------------------------------------------------------------------
    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a client call on the pool (after the calls whose await was cancelled are settled), or, from
        a hook inside a rebalance, on the rebalance's worker."""
        calls = _IN_REBALANCE.get()
        if calls is not None and calls.open:
            return await calls.submit(fn, args, kwargs)
        return await asyncio.wrap_future(self._executor.submit(self._settled, fn, args, kwargs))

    def _settled(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self._control is None:
            self._core.settle_cancelled()
            return fn(*args, **kwargs)
        self._enter()
        try:
            fn = self._current(fn)
            self._core.settle_cancelled()
            return fn(*args, **kwargs)
        finally:
            self._leave()

    def _current(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` as the call was made; bound to a client or core a live rebuild replaced since (the call
        waited for the rebuild), the same method of the current one."""
        owner = getattr(fn, "__self__", None)
        for retired, which in self._retired:
            if owner is retired:
                return getattr(self._core if which == "core" else self._consumer, fn.__name__)  # type: ignore[no-any-return]
        return fn

    def _enter(self) -> None:
        """A call's turn on the client (control on): after the live rebuild under way, if any."""
        with self._rebuild:
            while self._rebuilding:
                self._rebuild.wait()
            self._in_flight += 1

    def _leave(self) -> None:
        with self._rebuild:
            self._in_flight -= 1
            if not self._in_flight:
                self._rebuild.notify_all()

    # --- the client's own, awaited, typed as confluent-kafka's stubs type them ------------------------
    async def assignment(self, *args: Any, **kwargs: Any) -> list[ClientPartition]:
        result: list[ClientPartition] = await self._call(self._consumer.assignment, *args, **kwargs)
        return result

    async def position(self, partitions: list[ClientPartition]) -> list[ClientPartition]:
        result: list[ClientPartition] = await self._call(self._consumer.position, partitions)
        return result

    async def committed(
        self, partitions: list[ClientPartition], timeout: float = -1
    ) -> list[ClientPartition]:
        result: list[ClientPartition] = await self._call(self._consumer.committed, partitions, timeout)
        return result

    async def pause(self, partitions: list[ClientPartition]) -> None:
        await self._call(self._consumer.pause, partitions)

    async def resume(self, partitions: list[ClientPartition]) -> None:
        await self._call(self._consumer.resume, partitions)

    async def unsubscribe(self) -> None:
        await self._call(self._consumer.unsubscribe)

    async def memberid(self) -> str | None:
        result: str | None = await self._call(self._consumer.memberid)
        return result

    async def consumer_group_metadata(self) -> Any:
        return await self._call(self._consumer.consumer_group_metadata)

    async def get_watermark_offsets(
        self, partition: ClientPartition, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        result: tuple[int, int] = await self._call(
            self._consumer.get_watermark_offsets, partition, timeout, cached
        )
        return result

    async def offsets_for_times(
        self, partitions: list[ClientPartition], timeout: float = -1
    ) -> list[ClientPartition]:
        result: list[ClientPartition] = await self._call(
            self._consumer.offsets_for_times, partitions, timeout
        )
        return result

    async def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        return await self._call(self._consumer.list_topics, topic, timeout)

    if not TYPE_CHECKING:  # anything else passes through at run time, awaitable; mypy sees only the typed

        def __getattr__(self, name: str) -> Any:
            target = getattr(self._consumer, name)
            if not callable(target):
                return target

            async def call(*args: Any, **kwargs: Any) -> Any:
                return await self._call(target, *args, **kwargs)

            call.__name__ = name
            return call

    def __repr__(self) -> str:
        state = "closed" if self._core.closed else "failed" if self.failure else "open"
        return (
            f"CoopAIOConsumer(group={self.settings.group_id!r}, protocol={self.protocol!r}, "
            f"instance_id={self.settings.instance_id!r}, state={state!r})"
        )

    @property
    def owned(self) -> tuple[PartitionKey, ...]:
        return self._handler.owned

    @property
    def closing(self) -> bool:
        """True from the start of `close()` (see `CoopConsumer.closing`)."""
        return self._handler.closing

    @property
    def failure(self) -> ConsumerFailed | None:
        """The fatal error that stopped this consumer, or None."""
        return self._handler.failure

    # --- lifecycle -------------------------------------------------------------------------------
    async def subscribe(
        self,
        topics: list[str],
        on_assign: LegacyCallback | None = None,
        on_revoke: LegacyCallback | None = None,
        on_lost: LegacyCallback | None = None,
    ) -> None:
        """Subscribe with kafka-coop's callbacks; confluent-style ones (`async def on_assign(consumer,
        partitions)`, as AIOConsumer takes them) run inside them, as written on `CoopConsumer.subscribe`;
        their `await consumer.assign(...)` is routed through the handler."""
        self._require_open()
        names = check_topics(topics)
        loop = asyncio.get_running_loop()
        if self._duplicate_check != "off" and self.settings.instance_id:
            await loop.run_in_executor(
                None, check_duplicate_id, self._prepared, self._duplicate_check, self._manifests
            )
        self._subscription = (names, on_assign, on_revoke, on_lost)
        await self._call(self._subscribe_client, names, on_assign, on_revoke, on_lost)
        core = self._core
        core.emit(self._handler.lifecycle("started", await self._call(self._member_id)))
        self._restart_watch(names)
        if self._publisher is not None:
            await loop.run_in_executor(None, self._publisher.start)
        if self._control is not None:
            self._control.start()

    def _subscribe_client(
        self,
        names: list[str],
        on_assign: LegacyCallback | None,
        on_revoke: LegacyCallback | None,
        on_lost: LegacyCallback | None,
    ) -> None:
        core = self._core
        self._handler.legacy = LegacyCallbacks(self, on_assign, on_revoke, on_lost)
        # Always pass all three: without on_lost, lost partitions arrive through on_revoke.
        self._consumer.subscribe(
            names, on_assign=self._on_assign, on_revoke=core.on_revoke, on_lost=core.on_lost
        )
        core.subscribed = True
        core.topics.update(names)
        core.guard.restart(self._handler.rebalances)

    def _restart_watch(self, names: list[str]) -> None:
        if self._watch_topics:
            self._watch = self._core.watch_subscription(self._watch, names)

    async def assign(self, partitions: list[ClientPartition], /) -> None:
        check_partitions(partitions)
        step = self._handler.legacy_assign(partitions)
        if step is not None:  # inside a legacy on_assign
            await self._call(self._core.execute, step)
            return
        await self._call(self._consumer.assign, partitions)
        self._core.manual = {(tp.topic, tp.partition) for tp in partitions}

    async def incremental_assign(self, partitions: list[ClientPartition], /) -> None:
        check_partitions(partitions)
        step = self._handler.legacy_assign(partitions)
        if step is not None:
            await self._call(self._core.execute, step)
            return
        await self._call(self._consumer.incremental_assign, partitions)
        self._core.manual |= {(tp.topic, tp.partition) for tp in partitions}

    async def unassign(self) -> None:
        if self._handler.legacy_unassign():
            return
        core = self._core
        await self._call(core.commit_before_unassign, core.manual)
        await self._call(self._consumer.unassign)
        core.release(core.manual)
        core.manual = set()

    async def incremental_unassign(self, partitions: list[ClientPartition], /) -> None:
        check_unassign(partitions)
        if self._handler.legacy_unassign():
            return
        core = self._core
        keys = {(tp.topic, tp.partition) for tp in partitions}
        await self._call(core.commit_before_unassign, keys & core.manual)
        await self._call(self._consumer.incremental_unassign, partitions)
        core.release(keys)
        core.manual -= keys

    async def seek(self, partition: ClientPartition) -> None:
        """`seek`; inside `on_assigned` it is applied as soon as librdkafka can (see `CoopConsumer.seek`)."""
        await self._call(self._core.seek, partition)

    async def close(self, timeout: float | None = None) -> None:
        """Commit what is done, leave the group (revoking through the handler), close the sinks; as
        `CoopConsumer.close`, awaited (the loop runs meanwhile). `timeout` bounds it."""
        await self._close(batch_done=treat_as_done_on_close(), timeout=timeout)

    async def _close(self, *, batch_done: bool, timeout: float | None) -> None:
        if self._control is not None and not self._control_ended:
            # off the loop (the follower's close joins its thread), after a live rebuild under way: the
            # client to close is the one it installed
            await asyncio.wrap_future(self._executor.submit(self._end_control))
        core = self._core
        if core.closed:
            return
        self._handler.closing = True
        if self._watch is not None:
            self._watch.close()
        loop = asyncio.get_running_loop()
        report = CloseReport()
        held = self._control is not None and self._control.closed is not None
        try:
            if self._publisher is not None:
                await loop.run_in_executor(None, self._publisher.close)
            if held:  # closed for a cutover: its client is closed, what was done committed then
                return
            intended = [] if timeout is None else await self._call(core.close_intended, batch_done)
            job = asyncio.wrap_future(self._executor.submit(core.close, batch_done=batch_done))
            try:
                report = await asyncio.wait_for(asyncio.shield(job), timeout)
            except TimeoutError:
                assert timeout is not None
                report = core.close_timed_out(intended, timeout)
        finally:
            core.finish_close(report)
            if self._owns_executor:  # not waiting: a worker may still need the loop (a callback)
                self._executor.shutdown(wait=False, cancel_futures=True)
        interrupt = self._handler.take_interrupt()
        if interrupt is not None:  # a hook interrupted the revoke close made: closed, then raised
            raise interrupt

    async def __aenter__(self) -> CoopAIOConsumer:
        if self._handle_signals and self._signals is None:
            signals = SignalStop(self._stop_polling, self._log)
            if signals.install(force=False):  # a raise in the middle would land inside the event loop
                self._signals = signals
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        signals, self._signals = self._signals, None
        if signals is None:
            await self._close(batch_done=exc is None, timeout=None)
            return False
        stopped = isinstance(exc, ShutdownSignal)
        try:
            signals.begin_close()
            if isinstance(exc, ShutdownSignal):
                await self._close(batch_done=exc.clean, timeout=CLOSE_TIMEOUT_S)
            else:
                await self._close(batch_done=exc is None, timeout=None)
        finally:
            signals.restore()
        return stopped  # the block ended on a signal: the code after it runs

    def _stop_polling(self, signum: int) -> None:
        """The first signal: the next `poll`/`consume` raises instead of calling the client."""
        self._stopped = ShutdownSignal(signum, clean=True)

    def _require_open(self) -> None:
        if self._core.closed:
            raise RuntimeError("This CoopAIOConsumer is closed; create a new one.")

    # --- callbacks from librdkafka (on the worker of the call that serves them) -----------------------
    def _on_assign(self, consumer: Any, partitions: list[ClientPartition]) -> None:
        self._core.on_assign(consumer, partitions)
        if self._publisher is not None and not self._handler.closing:
            self._publisher.publish_now()

    # --- helpers ---------------------------------------------------------------------------------
    def _member_id(self) -> str:
        try:
            return str(self._consumer.memberid() or "")
        except Exception:
            return ""

    def _manifest(self) -> Manifest | None:
        """Built from the member id read at the last assignment, never by a call on the client (which
        would wait for the consume in flight)."""
        built = manifest(self._prepared, self._handler.member_id)
        control = self._control
        if built is None or control is None or control.outcome is None:
            return built
        return built.model_copy(update={"control": control.outcome})

    @property
    def last_control(self) -> ControlOutcome | None:
        """This member's answer to the last control record it acted on (`control=`), or None."""
        return None if self._control is None else self._control.outcome

    # --- live reconfiguration (LiveControl's Member, on the pool worker of the call it arms) -----
    def _control_arm(self) -> None:
        self._control_armed = True

    def _control_run(self, timeout: float) -> None:
        control = self._control
        assert control is not None
        if self._holding and not self._control_armed:
            control.wait(timeout)
        with self._rebuild:  # one point at a time, once the calls on the client now have returned
            while self._rebuilding:
                self._rebuild.wait()
            if self._control_ended:
                return
            self._rebuilding = True
            while self._in_flight:
                self._rebuild.wait()
        try:
            self._control_armed = False
            control.point(self)
            if control.inbox:
                self._control_armed = True
        finally:
            with self._rebuild:
                self._rebuilding = False
                self._rebuild.notify_all()

    def _end_control(self) -> None:
        """Close's first step: stop following, wait for the rebuild under way, and act on nothing more."""
        control = self._control
        assert control is not None
        control.close()
        with self._rebuild:
            while self._rebuilding:
                self._rebuild.wait()
            self._control_ended = True
            control.inbox.clear()
            self._control_armed = False

    @property
    def control_core(self) -> WrappedClient:
        return self._core

    def control_build(self, settings: ConsumerSettings) -> tuple[DriverSetup, WrappedClient]:
        # the member keeps its callbacks: stats_cb and throttle_cb already run on the loop
        prepared = rebuild(settings, self._prepared, self._hook_args, default_log=log, clock=self._clock)
        user_error_cb = prepared.callbacks.get("error_cb")
        core = WrappedClient(
            prepared,
            self._factory,
            run_hook=self._bridge.run,
            error_cb=self._on_loop(user_error_cb) if user_error_cb is not None else None,
            on_commit=prepared.callbacks.get("on_commit"),
        )
        return prepared, core

    def control_close_client(self) -> None:
        with contextlib.suppress(Exception):  # paused: close hands out nothing more (see CoopConsumer)
            self._consumer.pause(client_partitions(self._core.keys()))
        self._core.close(batch_done=True)

    def control_install(self, prepared: DriverSetup, core: WrappedClient) -> None:
        self._retired += [(self._core, "core"), (self._consumer, "client")]
        prepared.stamp.protocol = prepared.protocol
        self._prepared = prepared
        self.settings = prepared.settings
        self.protocol = prepared.protocol
        self._log = prepared.log
        self._handler = prepared.handler
        self._core = core
        self._consumer = core.inner
        self._install_calls(core)
        if self._subscription is not None:
            names, on_assign, on_revoke, on_lost = self._subscription
            self._subscribe_client(names, on_assign, on_revoke, on_lost)
            self._restart_watch(names)

    def control_hold(self, holding: bool) -> None:
        self._holding = holding

    def control_answered(self) -> None:
        if self._publisher is not None:
            self._publisher.publish_now()

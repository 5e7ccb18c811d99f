"""CoopConsumer: `confluent_kafka.Consumer` with kafka-coop's rebalance handler and offset ownership."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, overload

from confluent_kafka import Consumer, KafkaException, Message
from confluent_kafka import TopicPartition as ClientPartition

from kafka_coop._waiting import StillRunning, bounded_call
from kafka_coop.consumer._args import check_partitions, check_unassign, commit_flag
from kafka_coop.consumer._clock import WitnessedClock
from kafka_coop.consumer._close import CloseReport, treat_as_done_on_close
from kafka_coop.consumer._core import ClientFactory, WrappedClient
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
from kafka_coop.errors import ConsumerFailed
from kafka_coop.events import PartitionKey, RebalanceEvent
from kafka_coop.identity import DuplicatePolicy
from kafka_coop.manifest import ControlOutcome, Manifest
from kafka_coop.settings import ConsumerSettings
from kafka_coop.sinks import EventSink

log = logging.getLogger("kafka_coop.consumer")


class CoopConsumer:
    """Drop-in for `confluent_kafka.Consumer` that owns the rebalance callbacks and the offsets.

    `conf` is a librdkafka dict (callbacks such as `error_cb`, `stats_cb`, `throttle_cb`, `on_commit`,
    `oauth_cb`, `logger` included) or `ConsumerSettings` (then pass those as `callbacks={...}`).
    Hooks: a `RebalanceListener` (`listener=`) or the functions `start_offsets=`, `on_assigned=`,
    `on_revoked=`, `on_lost=`; their order and guarantees are written on `RebalanceListener`. `events` is
    a sink, a callable or a path (JSON lines). Anything not defined here passes through to the inner
    consumer.

    Offsets (docs/consumer.md "The offset contract"): kafka-coop decides every commit, with explicit
    offsets; its client stores and commits nothing by itself. Which records are done:

    - **Drop-in** (the default): what the application polled past. The records a `poll`/`consume`
      returned are done when the application calls `poll`/`consume` again, calls `commit()`, or closes
      the consumer normally; never when processing raised (a `with` block left on an exception, or
      `close()` called while one propagates). `commit()` without arguments commits what was consumed,
      as confluent-kafka's does. Confluent code needs no change.
    - **Explicit marks**, with `enable.auto.offset.store=false` (librdkafka's way of saying "I store
      offsets myself"): a record is done when `mark_done(msg)` (or `store_offsets`) says so, from any
      thread, in any order; a partition's commit is its lowest record handed out and not done (or the
      offset after the highest handed out, all done), read from kafka-coop's own ledger, never from the
      client's position: it never passes a record in flight, failed, or not handed out yet.

    With `enable.auto.commit=true` (the default) what is done is committed every
    `auto.commit.interval.ms`, on the polling thread inside `poll`/`consume`; on revoke, before the
    partitions go; and on `close()`. With `enable.auto.commit=false` kafka-coop commits nothing on the
    application's behalf, as confluent-kafka and the Java client: only `commit()` commits. No commit of
    kafka-coop's goes below what the application committed itself (`commit(message=/offsets=)`). On
    lost (evicted, fenced, fatal) nothing is committed. With `transactional=True` the application's
    producer transactions own the commit (`send_offsets_to_transaction(consumer.committable(), ...)`)
    and kafka-coop commits nothing.

    A fatal client error (e.g. another member took this `group.instance.id`) emits `lost` with an empty
    `owned`, runs `on_lost`, and raises `ConsumerFailed` (`InstanceIdConflict` for the id cases) from
    `poll`/`consume`; the consumer cannot be used after that. `client=` builds the inner consumer from
    the conf (default `confluent_kafka.Consumer`; `kafka_coop.testing.FakeGroup().client` in tests);
    `clock=` a `kafka_coop.testing.MockedClock` the test moves (default: the process's monotonic clock).

    Stopping: while its `with` block runs on the main thread, SIGTERM and SIGINT end the block cleanly
    (the next `poll`/`consume` raises `ShutdownSignal`, which the block swallows after closing: final
    commit, leave, `revoked`/`closed`), unless the application installed handlers of its own or passed
    `handle_signals=False` (docs/consumer.md "Stopping").

    Live reconfiguration: with `control=True` (or `ControlOptions`) the member follows the control topic
    and, at its next `poll`/`consume`, rebuilds its client on the settings a rollout step gives, keeping
    its group.instance.id (docs/consumer.md "Live reconfiguration"); `last_control` is its last answer.
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
        client: ClientFactory | None = None,
        handle_signals: bool = True,
        clock: WitnessedClock | None = None,
        control: ControlChoice = False,
    ) -> None:
        self._handle_signals = handle_signals
        self._clock = clock  # a rebuilt client's core goes on on the same clock
        # With control on, poll/consume go through one indirection, so that a service holding on to
        # `c.poll` (a local for speed) still reaches the client a reconfiguration rebuilt.
        self._routed = control is not False
        self._poll_stopped = False
        self._holding = False
        self._subscription: tuple[list[str], Any, Any, Any] | None = None
        self._factory: ClientFactory = client or Consumer
        self._hook_args: dict[str, Any] = {
            "listener": listener,
            "start_offsets": start_offsets,
            "on_assigned": on_assigned,
            "on_revoked": on_revoked,
            "on_lost": on_lost,
        }
        self._signals: SignalStop | None = None
        self._watch: SubscriptionWatch | None = None
        self._watch_topics = client is None  # the fake client has no cluster to ask
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
        # The client first, then the duplicate check: librdkafka finds the cluster and the group coordinator
        # in its own threads while the check waits for its describe, and it sends no JoinGroup (or KIP-848
        # heartbeat) before `subscribe`, so the check still runs before this member joins.
        self._core = core = WrappedClient(
            prepared,
            client or Consumer,
            error_cb=prepared.callbacks.get("error_cb"),
            on_commit=prepared.callbacks.get("on_commit"),
        )
        self._consumer = core.inner
        if duplicate_check != "off" and self.settings.instance_id:
            try:
                check_duplicate_id(prepared, duplicate_check, manifests)
            except BaseException:
                self._consumer.close()
                raise
        self._publisher = publisher(prepared, manifests, self._manifest)
        self._manifest_member_id = ""
        self._install_calls(core)
        # Live reconfiguration (docs/consumer.md): off unless asked for; it arms the next call.
        self._control: LiveControl | None = live_control(control, prepared, self._control_arm, self._log)

    def _install_calls(self, core: WrappedClient) -> None:
        """The per-call path: closures of a fixed signature around the client's own (see _core)."""
        self._core_poll = core.make_poll()
        self._core_consume = core.make_consume()
        self._route_calls()
        if core.ledger is not None:  # marking done is one deque append: no lock, no client call
            self.__dict__["mark_done"] = core.ledger.marks.append
        else:
            self.__dict__.pop("mark_done", None)

    def _route_calls(self) -> None:
        """poll/consume go to the client, or (closed for a cutover) return nothing; a signal's stop wins."""
        if self._poll_stopped:
            return
        if self._holding:
            self._set_calls(self._held_poll, self._held_consume)
        else:
            self._set_calls(self._core_poll, self._core_consume)

    def _set_calls(self, poll: Callable[..., Any], consume: Callable[..., Any]) -> None:
        if not self._routed:
            self.__dict__["poll"] = poll
            self.__dict__["consume"] = consume
            return
        self._poll_target, self._consume_target = poll, consume
        if "_via" not in self.__dict__:
            self.__dict__["_via"] = True

            def via_poll(timeout: float = -1) -> Message | None:
                return self._poll_target(timeout)  # type: ignore[no-any-return]

            def via_consume(num_messages: int = 1, timeout: float = -1) -> list[Message]:
                return self._consume_target(num_messages, timeout)  # type: ignore[no-any-return]

            self.__dict__["poll"] = via_poll
            self.__dict__["consume"] = via_consume

    # --- the per-call path (instance attributes set in __init__ take the calls; these say the types) ---
    def poll(self, timeout: float = -1) -> Message | None:
        """`Consumer.poll`: one record (or error event), or None after `timeout` seconds."""
        return self.__dict__["poll"](timeout)  # type: ignore[no-any-return]

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        """`Consumer.consume`: up to `num_messages` records (and error events)."""
        return self.__dict__["consume"](num_messages, timeout)  # type: ignore[no-any-return]

    def mark_done(self, message: Message) -> None:
        """Explicit marks (`enable.auto.offset.store=false`): `message` is processed. Any thread, any
        order; the committed offset of its partition never passes a record not marked."""
        self._core.store_offsets(message)

    def store_offsets(
        self, message: Message | None = None, offsets: list[ClientPartition] | None = None
    ) -> None:
        """`Consumer.store_offsets`, kept by kafka-coop: a message is marked done; `offsets` say every
        record below each offset is done. Needs `enable.auto.offset.store=false`, as librdkafka does."""
        self._core.store_offsets(message, offsets, confluent=True)

    @overload
    def commit(self, *, asynchronous: Literal[True] = ...) -> None: ...
    @overload
    def commit(self, *, asynchronous: Literal[False]) -> list[ClientPartition]: ...
    @overload
    def commit(self, *, message: Message, asynchronous: Literal[True] = ...) -> None: ...
    @overload
    def commit(self, *, message: Message, asynchronous: Literal[False]) -> list[ClientPartition]: ...
    @overload
    def commit(self, *, offsets: list[ClientPartition], asynchronous: Literal[True] = ...) -> None: ...
    @overload
    def commit(
        self, *, offsets: list[ClientPartition], asynchronous: Literal[False]
    ) -> list[ClientPartition]: ...

    def commit(
        self,
        message: Message | None = None,
        offsets: list[ClientPartition] | None = None,
        asynchronous: bool = True,
        *args: Any,
        **kwargs: Any,
    ) -> list[ClientPartition] | None:
        """`Consumer.commit`. Without arguments: what the application consumed (drop-in; the batch it
        holds counts as processed) or marked done (explicit marks), with explicit offsets and leader
        epochs; `_NO_OFFSET` (synchronous) when nothing is new. A message or offsets: exactly those.
        (confluent's also takes `async`, and a fourth positional argument: `asynchronous`.)"""
        self._require_open()
        asynchronous = commit_flag(asynchronous, args, kwargs)
        return self._core.commit_app(message, offsets, asynchronous)

    def committable(self) -> list[ClientPartition]:
        """The offsets `commit()` would commit now, every owned partition (with leader epochs): what
        `Producer.send_offsets_to_transaction` takes in a consume-transform-produce loop."""
        return self._core.committable()

    # --- the client's own, typed as confluent-kafka's stubs type them -----------------------------
    def assignment(self, *args: Any, **kwargs: Any) -> list[ClientPartition]:
        return self._consumer.assignment(*args, **kwargs)  # type: ignore[no-any-return]

    def position(self, partitions: list[ClientPartition]) -> list[ClientPartition]:
        return self._consumer.position(partitions)  # type: ignore[no-any-return]

    def committed(self, partitions: list[ClientPartition], timeout: float = -1) -> list[ClientPartition]:
        return self._consumer.committed(partitions, timeout)  # type: ignore[no-any-return]

    def pause(self, partitions: list[ClientPartition]) -> None:
        self._consumer.pause(partitions)

    def resume(self, partitions: list[ClientPartition]) -> None:
        self._consumer.resume(partitions)

    def unsubscribe(self) -> None:
        self._consumer.unsubscribe()

    def memberid(self) -> str | None:
        return self._consumer.memberid()  # type: ignore[no-any-return]

    def consumer_group_metadata(self) -> Any:
        return self._consumer.consumer_group_metadata()

    def get_watermark_offsets(
        self, partition: ClientPartition, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        return self._consumer.get_watermark_offsets(partition, timeout, cached)  # type: ignore[no-any-return]

    def offsets_for_times(
        self, partitions: list[ClientPartition], timeout: float = -1
    ) -> list[ClientPartition]:
        return self._consumer.offsets_for_times(partitions, timeout)  # type: ignore[no-any-return]

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        return self._consumer.list_topics(topic, timeout)

    if not TYPE_CHECKING:  # anything else passes through at run time; mypy sees only what is typed

        def __getattr__(self, name: str) -> Any:
            return getattr(self._consumer, name)

    def __repr__(self) -> str:
        state = "closed" if self._core.closed else "failed" if self.failure else "open"
        return (
            f"CoopConsumer(group={self.settings.group_id!r}, protocol={self.protocol!r}, "
            f"instance_id={self.settings.instance_id!r}, state={state!r})"
        )

    @property
    def owned(self) -> tuple[PartitionKey, ...]:
        return self._handler.owned

    @property
    def closing(self) -> bool:
        """True from the start of `close()`. An event sink must not call `assignment()` or `memberid()`
        then: once the group has terminated, librdkafka never answers them (the call hangs)."""
        return self._handler.closing

    @property
    def last_control(self) -> ControlOutcome | None:
        """This member's answer to the last control record it acted on (`control=`), or None."""
        return None if self._control is None else self._control.outcome

    @property
    def failure(self) -> ConsumerFailed | None:
        """The fatal error that stopped this consumer, or None."""
        return self._handler.failure

    # --- lifecycle -------------------------------------------------------------------------------
    def subscribe(
        self,
        topics: list[str],
        on_assign: LegacyCallback | None = None,
        on_revoke: LegacyCallback | None = None,
        on_lost: LegacyCallback | None = None,
    ) -> None:
        """Subscribe with kafka-coop's callbacks; confluent-style ones run inside them (RebalanceListener).

        A legacy `on_assign(consumer, partitions)` runs before the partitions are assigned: offsets it
        sets on `partitions`, or passes to `consumer.assign()`/`incremental_assign()`, are where fetching
        starts, under every protocol (its `assign()` becomes `incremental_assign()` where that is the
        legal call). A legacy `on_revoke` runs before the commit; its `unassign()` is left to kafka-coop,
        which unassigns after committing.
        """
        self._require_open()
        names = check_topics(topics)
        self._subscription = (names, on_assign, on_revoke, on_lost)
        self._subscribe(names, on_assign, on_revoke, on_lost, started=True)
        if self._control is not None:
            self._control.start()

    def _subscribe(
        self,
        names: list[str],
        on_assign: LegacyCallback | None,
        on_revoke: LegacyCallback | None,
        on_lost: LegacyCallback | None,
        *,
        started: bool,
    ) -> None:
        core = self._core
        self._handler.legacy = LegacyCallbacks(self, on_assign, on_revoke, on_lost)
        # Always pass all three: without on_lost, lost partitions arrive through on_revoke (FACTS).
        self._consumer.subscribe(
            names, on_assign=self._on_assign, on_revoke=core.on_revoke, on_lost=core.on_lost
        )
        core.subscribed = True
        core.topics.update(names)
        core.guard.restart(self._handler.rebalances)
        if started:
            core.emit(self._handler.lifecycle("started", self._member_id()))
        if self._watch_topics:
            self._watch = core.watch_subscription(self._watch, names)
        if self._publisher is not None:
            self._publisher.start()

    def assign(self, partitions: list[ClientPartition], /) -> None:
        check_partitions(partitions)
        step = self._handler.legacy_assign(partitions)
        if step is not None:  # inside a legacy on_assign
            self._core.execute(step)
            return
        self._consumer.assign(partitions)
        self._core.manual = {(tp.topic, tp.partition) for tp in partitions}

    def incremental_assign(self, partitions: list[ClientPartition], /) -> None:
        check_partitions(partitions)
        step = self._handler.legacy_assign(partitions)
        if step is not None:
            self._core.execute(step)
            return
        self._consumer.incremental_assign(partitions)
        self._core.manual |= {(tp.topic, tp.partition) for tp in partitions}

    def unassign(self) -> None:
        if self._handler.legacy_unassign():
            return
        self._core.commit_before_unassign(self._core.manual)
        self._consumer.unassign()
        self._core.release(self._core.manual)
        self._core.manual = set()

    def incremental_unassign(self, partitions: list[ClientPartition], /) -> None:
        check_unassign(partitions)
        if self._handler.legacy_unassign():
            return
        keys = {(tp.topic, tp.partition) for tp in partitions}
        self._core.commit_before_unassign(keys & self._core.manual)
        self._consumer.incremental_unassign(partitions)
        self._core.release(keys)
        self._core.manual -= keys

    def seek(self, partition: ClientPartition) -> None:
        """`Consumer.seek`; inside `on_assigned` (fetching not started yet) it is applied as soon as
        librdkafka can, and no record fetched before it is handed out."""
        self._core.seek(partition)

    def close(self, timeout: float | None = None) -> None:
        """Commit what is done, leave the group (revoking through the handler), close the sinks.

        Drop-in: the batch of the last `poll`/`consume` counts as processed unless `close()` runs while
        an exception propagates (from `__exit__` or a `finally`). `timeout` (seconds) bounds the whole
        close: a commit waiting for a group coordinator that does not answer is given up, the `closed`
        event says what was not committed, and the client finishes closing in the background. Nothing
        is committed after a fatal error.
        """
        self._close(batch_done=treat_as_done_on_close(), timeout=timeout)

    def _close(self, *, batch_done: bool, timeout: float | None) -> None:
        core = self._core
        if core.closed:
            return
        self._handler.closing = True
        if self._watch is not None:
            self._watch.close()
        report = CloseReport()
        held = self._control is not None and self._control.closed is not None
        if self._control is not None:
            self._control.close()
        try:
            # The manifest heartbeat thread reads the member id: stop it before the client goes.
            if self._publisher is not None:
                self._publisher.close()
            if held:  # closed for a cutover: its client is closed, what was done committed then
                pass
            elif timeout is None:
                report = core.close(batch_done=batch_done)
            else:
                report = self._close_within(timeout, batch_done)
        finally:
            core.finish_close(report)
        interrupt = self._handler.take_interrupt()
        if interrupt is not None:  # a hook interrupted the revoke close made: closed, then raised
            raise interrupt

    def _close_within(self, timeout: float, batch_done: bool) -> CloseReport:
        core = self._core
        intended = core.close_intended(batch_done)
        try:
            return bounded_call(lambda: core.close(batch_done=batch_done), timeout, name="kafka-coop-close")
        except StillRunning:
            return core.close_timed_out(intended, timeout)

    def __enter__(self) -> CoopConsumer:
        if self._handle_signals and self._signals is None:
            signals = SignalStop(self._stop_polling, self._log)
            if signals.install():
                self._signals = signals
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        signals, self._signals = self._signals, None
        if signals is None:
            self._close(batch_done=exc is None, timeout=None)
            return False
        stopped = isinstance(exc, ShutdownSignal)
        try:
            signals.begin_close()
            if stopped:
                assert isinstance(exc, ShutdownSignal)
                self._close(batch_done=exc.clean, timeout=CLOSE_TIMEOUT_S)
            else:
                self._close(batch_done=exc is None, timeout=None)
        finally:
            signals.restore()
        return stopped  # the block ended on a signal: the code after it runs

    def _stop_polling(self, signum: int) -> None:
        """The first signal: the next `poll`/`consume` raises instead of calling the client."""
        assert self._signals is not None
        self._poll_stopped = True  # a control record arriving now must not take the call back
        stopped = self._signals.stopped

        def poll(timeout: float = -1) -> Message | None:
            raise stopped()

        def consume(num_messages: int = 1, timeout: float = -1) -> list[Message]:
            raise stopped()

        self.__dict__["poll"] = poll
        self.__dict__["consume"] = consume
        self._poll_target, self._consume_target = poll, consume  # a routed poll held by the service

    def _require_open(self) -> None:
        if self._core.closed:
            raise RuntimeError("This CoopConsumer is closed; create a new one.")

    # --- callbacks from librdkafka (inside poll/consume/close) -----------------------------------
    def _on_assign(self, consumer: Any, partitions: list[ClientPartition]) -> None:
        self._core.on_assign(consumer, partitions)
        # Not while closing: the tombstone is written, and a terminated group never answers memberid().
        if self._publisher is not None and not self._handler.closing:
            self._manifest_member_id = self._handler.member_id
            self._publisher.publish_now()

    # --- helpers ---------------------------------------------------------------------------------
    def _member_id(self) -> str:
        try:
            return str(self._consumer.memberid() or "")
        except (RuntimeError, KafkaException):
            return ""

    def _manifest(self) -> Manifest | None:
        """Built on the polling thread (on assign) and on the heartbeat thread, from the member id read at
        the last assignment, never by a call on the client: confluent-kafka 2.16 serializes calls on one
        client, so a memberid() from the heartbeat thread waits for the poll in flight, and a service that
        polls back to back starved the heartbeat (seen on the broker). A member id changes only by a new
        join, which an assignment follows."""
        built = manifest(self._prepared, self._manifest_member_id)
        control = self._control
        if built is None or control is None or control.outcome is None:
            return built
        return built.model_copy(update={"control": control.outcome})

    # --- live reconfiguration (LiveControl's Member; all on the polling thread but _control_arm) ----
    def _control_arm(self) -> None:
        """From the control feed's thread: the next poll/consume acts on the queued records first."""
        if not self._poll_stopped:
            self._set_calls(self._armed_poll, self._armed_consume)

    def _control_run(self) -> None:
        control = self._control
        assert control is not None
        self._route_calls()
        control.point(self)
        self._route_calls()
        if control.inbox:  # delivered while the point ran
            self._control_arm()

    def _armed_poll(self, timeout: float = -1) -> Message | None:
        self._control_run()
        return self.__dict__["poll"](timeout)  # type: ignore[no-any-return]

    def _armed_consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        self._control_run()
        return self.__dict__["consume"](num_messages, timeout)  # type: ignore[no-any-return]

    def _held_poll(self, timeout: float = -1) -> Message | None:
        assert self._control is not None
        self._control.wait(timeout)
        self._control_run()
        return None

    def _held_consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        assert self._control is not None
        self._control.wait(timeout)
        self._control_run()
        return []

    @property
    def control_core(self) -> WrappedClient:
        return self._core

    def control_build(self, settings: ConsumerSettings) -> tuple[DriverSetup, WrappedClient]:
        prepared = rebuild(settings, self._prepared, self._hook_args, default_log=log, clock=self._clock)
        core = WrappedClient(
            prepared,
            self._factory,
            error_cb=prepared.callbacks.get("error_cb"),
            on_commit=prepared.callbacks.get("on_commit"),
        )
        return prepared, core

    def control_close_client(self) -> None:
        # Paused first: close serves the rebalances queued for the member until the client has nothing
        # more to hand out, and records it would fetch meanwhile go to no one (it seeks them back).
        with contextlib.suppress(KafkaException, RuntimeError):
            self._consumer.pause(client_partitions(self._core.keys()))
        self._core.close(batch_done=True)  # at a call: the batch the application held is done

    def control_install(self, prepared: DriverSetup, core: WrappedClient) -> None:
        prepared.stamp.protocol = prepared.protocol  # the member's events go on, on the new protocol
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
            self._subscribe(names, on_assign, on_revoke, on_lost, started=False)

    def control_hold(self, holding: bool) -> None:
        self._holding = holding
        self._route_calls()

    def control_answered(self) -> None:
        if self._publisher is not None:
            self._manifest_member_id = self._handler.member_id or self._manifest_member_id
            self._publisher.publish_now()

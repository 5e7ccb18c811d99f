"""CoopConsumer: `confluent_kafka.Consumer` with kafka-coop's rebalance handler and offset contract.

The sync driver of `_handler.RebalanceHandler`: it gives librdkafka three callbacks that run the
handler's steps directly on the inner consumer, routes librdkafka's log and errors through
`ClientLog`/`ClientErrors`, and leaves marking done (`store_offsets`, `mark_done`) as the inner
consumer's own bound method. `poll` and `consume` are one thin frame around the inner ones: two clock
reads and a comparison (`_freeze.FreezeGuard`: records fetched before a freeze past the session are
held until the group has answered).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, NoReturn

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as ClientPartition

from kafka_coop.consumer._freeze import call_timeout_s, passed_through
from kafka_coop.consumer._handler import (
    ClientErrors,
    ClientLog,
    Hook,
    LegacyCallback,
    LegacyCallbacks,
    RebalanceListener,
    StartOffsetsHook,
    describe_error,
    execute_sync,
    fatal_code_from_text,
    run_sync,
)
from kafka_coop.consumer._setup import LIBRDKAFKA_LOGGER, check_duplicate_id, manifest, prepare, publisher
from kafka_coop.errors import ConsumerFailed
from kafka_coop.events import RebalanceEvent, TopicPartition
from kafka_coop.identity import DuplicatePolicy
from kafka_coop.manifest import Manifest
from kafka_coop.settings import ConsumerSettings
from kafka_coop.sinks import EventSink

log = logging.getLogger("kafka_coop.consumer")
_monotonic = time.monotonic


class CoopConsumer:
    """Drop-in for `confluent_kafka.Consumer` that owns the rebalance callbacks and keeps at-least-once.

    `conf` is a librdkafka dict (callbacks such as `error_cb`, `stats_cb`, `throttle_cb`, `on_commit`,
    `oauth_cb`, `logger` included) or `ConsumerSettings` (then pass those as `callbacks={...}`).
    Hooks: a `RebalanceListener` (`listener=`) or the functions `start_offsets=`, `on_assigned=`,
    `on_revoked=`, `on_lost=`; their order and guarantees are written on `RebalanceListener`. `events` is
    a sink, a callable or a path (JSON lines). Anything not defined here passes through to the inner
    consumer.

    Offset contract (docs/consumer.md "Offset contract"):

    - A record is *done* when the application says so: `mark_done(msg)` (the same as
      `store_offsets(msg)`). kafka-coop sets `enable.auto.offset.store=false` unless the conf sets it, so
      delivering a record never makes it committable.
    - On revoke: `on_revoked` runs, then every offset marked done is committed synchronously, then the
      partitions are released. On `close()` — also from `__exit__`, with or without an exception — the
      same: what is marked done is committed, nothing else. A record whose processing raised is never
      committed unless it was marked done.
    - On lost (evicted, fenced, fatal): nothing is committed.
    - `enable.auto.commit=true` (librdkafka's default) commits what is marked done in the background too.
      Setting `enable.auto.offset.store=true` yourself says "delivered means done": then
      delivered records are committed on revoke and close, as with a plain Consumer.

    A fatal client error (e.g. another member took this `group.instance.id`) emits `lost` with an empty
    `owned`, runs `on_lost`, and raises `ConsumerFailed` (`InstanceIdConflict` for the id cases) from
    `poll`/`consume`; the consumer cannot be used after that.
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
    ) -> None:
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
        # The member id the manifest names, read on the polling thread at each assignment (see `_manifest`).
        self._manifest_member_id = ""
        self._client_log = ClientLog(prepared.callbacks.get("logger") or logging.getLogger(LIBRDKAFKA_LOGGER))
        self._errors = ClientErrors(
            self._log, self.settings.bootstrap_servers, prepared.callbacks.get("error_cb")
        )
        # The client first, then the duplicate check: librdkafka finds the cluster and the group coordinator
        # in its own threads while the check waits for its describe, and it sends no JoinGroup (or KIP-848
        # heartbeat) before `subscribe`, so the check still runs before this member joins.
        self._consumer = Consumer(
            {**prepared.client_conf(), "logger": self._client_log, "error_cb": self._errors}
        )
        self._execute = execute_sync(self._consumer)
        self._client_log.on_fatal = self._on_fatal_log
        self._client_log.on_evicted = self._handler.note_eviction
        if duplicate_check != "off" and self.settings.instance_id:
            try:
                check_duplicate_id(prepared, duplicate_check)
            except BaseException:
                self._consumer.close()
                raise
        self._publisher = publisher(prepared, manifests, self._manifest)
        # poll/consume: the inner consumer's own, with two clock reads around them (_freeze.FreezeGuard).
        self._inner_poll = self._consumer.poll
        self._inner_consume = self._consumer.consume
        self.poll: Callable[..., Any] = self._poll
        self.consume: Callable[..., Any] = self._consume
        # Marking done is the inner consumer's own bound method: no Python frame of ours per record.
        self.store_offsets: Callable[..., Any] = self._consumer.store_offsets
        self.mark_done: Callable[..., Any] = self._consumer.store_offsets

    # --- pass-through ----------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        return getattr(self._consumer, name)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "failed" if self.failure else "open"
        return (
            f"CoopConsumer(group={self.settings.group_id!r}, protocol={self.protocol!r}, "
            f"instance_id={self.settings.instance_id!r}, state={state!r})"
        )

    @property
    def owned(self) -> tuple[TopicPartition, ...]:
        return self._handler.owned

    @property
    def closing(self) -> bool:
        """True from the start of `close()`. An event sink must not call `assignment()` or `memberid()`
        then: once the group has terminated, librdkafka never answers them (the call hangs)."""
        return self._handler.closing

    @property
    def failure(self) -> ConsumerFailed | None:
        """The fatal error that stopped this consumer, or None."""
        return self._handler.failure

    # --- lifecycle -------------------------------------------------------------------------------
    def subscribe(
        self,
        topics: Sequence[str],
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
        self._handler.legacy = LegacyCallbacks(self, on_assign, on_revoke, on_lost)
        # Always pass all three: without on_lost, lost partitions arrive through on_revoke (FACTS).
        self._consumer.subscribe(
            list(topics), on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )
        self._subscribed = True
        self._guard.restart()
        self._handler.lifecycle("started", self._member_id())
        if self._publisher is not None:
            self._publisher.start()

    # --- the per-call path -------------------------------------------------------------------------
    def _poll(self, *args: Any, **kwargs: Any) -> Any:
        start = _monotonic()
        msg = self._inner_poll(*args, **kwargs)
        end = _monotonic()
        guard = self._guard
        if end - guard.last_end <= guard.limit_s and end >= guard.hold_until:
            guard.last_end = end
            return msg
        timeout = call_timeout_s(args, kwargs, 0)
        if guard.verdict(start, end, timeout, self._handler.last_rebalance_at) or msg is None or msg.error():
            return msg
        self._seek_back(guard.seek_targets([msg]))
        return None

    def _consume(self, *args: Any, **kwargs: Any) -> Any:
        start = _monotonic()
        messages = self._inner_consume(*args, **kwargs)
        end = _monotonic()
        guard = self._guard
        if end - guard.last_end <= guard.limit_s and end >= guard.hold_until:
            guard.last_end = end
            return messages
        if guard.verdict(start, end, call_timeout_s(args, kwargs, 1), self._handler.last_rebalance_at):
            return messages
        self._seek_back(guard.seek_targets(messages))
        return passed_through(messages)

    def _seek_back(self, targets: list[tuple[str, int, int]]) -> None:
        """Fetch held records again from their first offset, if this member still owns the partition."""
        for topic, partition, offset in targets:
            try:
                self._consumer.seek(ClientPartition(topic, partition, offset))
            except KafkaException as exc:  # no longer assigned: the new owner reads them
                self._log.debug("seek back %s-%d: %s", topic, partition, describe_error(exc))

    def commit(self, *args: Any, **kwargs: Any) -> Any:
        self._require_open()
        return self._consumer.commit(*args, **kwargs)

    def assign(self, partitions: list[Any]) -> None:
        step = self._handler.legacy_assign(partitions)
        if step is None:
            self._consumer.assign(partitions)
        else:
            self._execute(step)

    def incremental_assign(self, partitions: list[Any]) -> None:
        step = self._handler.legacy_assign(partitions)
        if step is None:
            self._consumer.incremental_assign(partitions)
        else:
            self._execute(step)

    def unassign(self) -> None:
        if not self._handler.legacy_unassign():
            self._consumer.unassign()

    def incremental_unassign(self, partitions: list[Any]) -> None:
        if not self._handler.legacy_unassign():
            self._consumer.incremental_unassign(partitions)

    def close(self) -> None:
        """Commit what is marked done, leave the group (revoking through the handler), close the sinks.

        The commit is synchronous and bounded by librdkafka's own request timeouts, as a plain
        Consumer's close is. Nothing is committed after a fatal error.
        """
        if self._closed:
            return
        self._handler.closing = True
        try:
            # The manifest heartbeat thread reads memberid() on the client: stop it before the client goes.
            if self._publisher is not None:
                self._publisher.close()
            if self._subscribed and self._handler.failure is None:
                error = run_sync(self._handler.commit_marked(), self._execute)
                if error:
                    self._log.warning("Commit on close failed: %s", error)
            try:
                self._consumer.close()
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

    def __enter__(self) -> CoopConsumer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _require_open(self) -> None:
        if self._closed:
            raise RuntimeError("This CoopConsumer is closed; create a new one.")

    # --- callbacks from librdkafka (inside poll/consume/close) -----------------------------------
    def _on_assign(self, _consumer: Any, partitions: list[Any]) -> None:
        self._errors.reached()
        run_sync(self._handler.assign(partitions), self._execute)
        # Not while closing: the tombstone is written, and a terminated group never answers memberid().
        if self._publisher is not None and not self._handler.closing:
            self._manifest_member_id = self._member_id()
            self._publisher.publish_now()

    def _on_revoke(self, _consumer: Any, partitions: list[Any]) -> None:
        run_sync(self._handler.revoke(partitions), self._execute)
        self._raise_if_failed()

    def _on_lost(self, _consumer: Any, partitions: list[Any]) -> None:
        run_sync(self._handler.lose(partitions), self._execute)

    def _on_fatal_log(self, text: str) -> None:
        if self._handler.failure is None:
            error = self._handler.fatal(fatal_code_from_text(text), text)
            run_sync(self._handler.fail(error), self._execute)
        self._raise_if_failed()

    def _raise_if_failed(self) -> None:
        """After a fatal error, poll/consume raise it: now (from this callback) and on every later call."""
        failure = self._handler.failure
        if failure is None:
            return

        def failed(*_args: Any, **_kwargs: Any) -> NoReturn:
            raise failure

        self.poll = self.consume = failed
        if not self._handler.closing:
            raise failure

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
        return manifest(self._prepared, self._manifest_member_id)

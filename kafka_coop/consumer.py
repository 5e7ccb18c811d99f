"""CoopConsumer: confluent_kafka.Consumer with correct rebalance handling under every protocol.

This is the one module that drives confluent_kafka.Consumer. Rebalance callbacks are converted here
into `RebalanceEvent`s before user code runs (the arroyo pattern), and the protocol is resolved once
from the settings, because it decides which assignment calls are legal:

- eager (range, roundrobin): `assign`/`unassign` with the whole assignment;
- cooperative-sticky and KIP-848 `consumer`: `incremental_assign`/`incremental_unassign` with the
  delta — the plain calls would be wrong here (confluent-kafka-python #1040, #1420).

Revoked partitions have their stored offsets committed synchronously before they leave. Lost
partitions commit nothing (librdkafka also skips its own auto-commit while the assignment is lost and
drops the stored offsets of removed partitions). Errors inside callbacks — ours or the user's hooks —
are recorded on the event and never propagate into librdkafka or crash the service.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException

from kafka_coop import __version__
from kafka_coop.events import EventKind, EventStamp, Ownership, RebalanceEvent, TopicPartition
from kafka_coop.identity import DuplicatePolicy, check_duplicate
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC, Manifest, ManifestPublisher, local_host, timestamp_ms
from kafka_coop.settings import ConsumerSettings
from kafka_coop.sinks import EventSink, as_sink

log = logging.getLogger("kafka_coop.consumer")

Hook = Callable[[list[TopicPartition]], Any]
LegacyCallback = Callable[[Any, list[Any]], Any]
DEFAULT_CLOSE_COMMIT_TIMEOUT_S = 10.0
# Commit errors meaning "you are not (or no longer) a member of this generation".
_EVICTED = frozenset(
    {
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.FENCED_INSTANCE_ID,
        KafkaError.STALE_MEMBER_EPOCH,
        KafkaError.FENCED_MEMBER_EPOCH,
    }
)


class ConsumerState(enum.Enum):
    """Guards public methods: nothing may be called on a closed consumer."""

    CREATED = "created"
    SUBSCRIBED = "subscribed"
    CLOSED = "closed"


def _keys(partitions: Iterable[Any]) -> list[TopicPartition]:
    return [(tp.topic, tp.partition) for tp in partitions]


def _describe_error(exc: BaseException) -> str:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        err = exc.args[0]
        return f"{err.name()}: {err.str()}"
    return f"{type(exc).__name__}: {exc}"


class CoopConsumer:
    """Drop-in for `confluent_kafka.Consumer` that owns the rebalance callbacks.

    `conf` is a librdkafka dict or `ConsumerSettings`. Hooks receive `[(topic, partition), ...]`:
    `on_assigned` after the partitions are assigned; `on_revoked` before the commit and unassign (finish
    work and `store_offsets` there); `on_lost` after the partitions are gone. `events` is a sink, a
    callable or a path (JSON lines). Anything not defined here passes through to the inner consumer.
    """

    def __init__(
        self,
        conf: Mapping[str, Any] | ConsumerSettings,
        *,
        on_assigned: Hook | None = None,
        on_revoked: Hook | None = None,
        on_lost: Hook | None = None,
        events: EventSink | Callable[[RebalanceEvent], Any] | str | None = None,
        manifests: bool | str = False,
        duplicate_check: DuplicatePolicy = "off",
        logger: logging.Logger | None = None,
    ) -> None:
        self.settings = conf if isinstance(conf, ConsumerSettings) else ConsumerSettings.from_conf(conf)
        self._log = logger or log
        for warning in self.settings.warnings:
            self._log.warning(warning)
        self.protocol = self.settings.protocol
        self._hooks = {"assigned": on_assigned, "revoked": on_revoked, "lost": on_lost}
        self._legacy: dict[str, LegacyCallback | None] = {}
        self._sink = as_sink(events)
        rendered = self.settings.render()
        self._client_id = rendered.get("client.id", "rdkafka")
        # The client first, then the duplicate check: librdkafka finds the cluster and the group coordinator
        # in its own threads while the check waits for its describe, and it sends no JoinGroup (or KIP-848
        # heartbeat) before `subscribe`, so the check still runs before this member joins.
        self._consumer = Consumer({**rendered, "logger": self._log})
        if duplicate_check != "off" and self.settings.instance_id:
            try:
                self._check_duplicate(rendered, duplicate_check)
            except BaseException:
                self._consumer.close()
                raise
        self._ownership = Ownership(self.protocol)
        self._stamp = EventStamp(
            self.settings.group_id, self._client_id, self.settings.instance_id, self.protocol
        )
        self._state = ConsumerState.CREATED
        self._started_ms = timestamp_ms()
        self._publisher: ManifestPublisher | None = None
        if manifests:
            topic = manifests if isinstance(manifests, str) else DEFAULT_MANIFEST_TOPIC
            self._publisher = ManifestPublisher(_producer_conf(rendered), self._manifest, topic=topic)
        # The per-message path is the inner consumer's own bound methods: no Python frame of ours.
        self.poll = self._consumer.poll
        self.consume = self._consumer.consume
        self.store_offsets = self._consumer.store_offsets

    # --- pass-through ----------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        return getattr(self._consumer, name)

    def __repr__(self) -> str:
        return (
            f"CoopConsumer(group={self.settings.group_id!r}, protocol={self.protocol!r}, "
            f"instance_id={self.settings.instance_id!r}, state={self._state.value!r})"
        )

    @property
    def owned(self) -> tuple[TopicPartition, ...]:
        return self._ownership.owned

    # --- lifecycle -------------------------------------------------------------------------------
    def subscribe(
        self,
        topics: Sequence[str],
        on_assign: LegacyCallback | None = None,
        on_revoke: LegacyCallback | None = None,
        on_lost: LegacyCallback | None = None,
    ) -> None:
        """Subscribe with kafka-coop's callbacks; confluent-style callbacks are called as observers."""
        self._require_open()
        self._legacy = {"assigned": on_assign, "revoked": on_revoke, "lost": on_lost}
        # Always pass all three: without on_lost, lost partitions arrive through on_revoke (FACTS.md).
        self._consumer.subscribe(
            list(topics), on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )
        self._state = ConsumerState.SUBSCRIBED
        self._emit_lifecycle("started")
        if self._publisher is not None:
            self._publisher.start()

    def commit(self, *args: Any, **kwargs: Any) -> Any:
        self._require_open()
        return self._consumer.commit(*args, **kwargs)

    def close(self, *, commit_timeout_s: float = DEFAULT_CLOSE_COMMIT_TIMEOUT_S) -> None:
        """Commit stored offsets, leave the group (librdkafka revokes through our callbacks), close sinks."""
        if self._state is ConsumerState.CLOSED:
            return
        try:
            if self._state is ConsumerState.SUBSCRIBED:
                _, error, _ = self._commit_stored()
                if error:
                    self._log.warning("Final commit on close failed: %s", error)
            self._consumer.close()
        finally:
            self._state = ConsumerState.CLOSED
            if self._publisher is not None:
                self._publisher.close()
            self._emit_lifecycle("closed")
            if self._sink is not None:
                with contextlib.suppress(Exception):
                    self._sink.close()

    def __enter__(self) -> CoopConsumer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _require_open(self) -> None:
        if self._state is ConsumerState.CLOSED:
            raise RuntimeError("This CoopConsumer is closed; create a new one.")

    # --- rebalance callbacks (called by librdkafka from poll/consume/close) ----------------------
    def _on_assign(self, _consumer: Any, partitions: list[Any]) -> None:
        started = time.perf_counter()
        keys = _keys(partitions)
        error = None
        try:
            if self.protocol == "eager":
                self._consumer.assign(partitions)
            else:
                self._consumer.incremental_assign(partitions)
        except Exception as exc:  # an event, not a crash inside librdkafka
            error = _describe_error(exc)
        self._ownership.apply("assigned", keys)
        error = self._call_hooks("assigned", keys, partitions) or error
        self._emit("assigned", keys, started, error=error)
        if self._publisher is not None:
            self._publisher.publish_now()

    def _on_revoke(self, _consumer: Any, partitions: list[Any]) -> None:
        started = time.perf_counter()
        keys = _keys(partitions)
        error = self._call_hooks("revoked", keys, partitions)
        committed: list[tuple[str, int, int]] | None
        committed, commit_error, evicted = self._commit_stored(only=set(keys))
        try:
            if self.protocol == "eager":
                self._consumer.unassign()
            else:
                self._consumer.incremental_unassign(partitions)
        except Exception as exc:
            commit_error = commit_error or _describe_error(exc)
        kind: EventKind = "revoked"
        if evicted:
            # The broker no longer knows this member (it overran max.poll.interval.ms or its session):
            # librdkafka served a revoke queued before the eviction, but the partitions were already
            # lost, and the refused commit shows nothing was committed for them.
            kind, committed = "lost", None
        self._ownership.apply(kind, keys)
        self._emit(kind, keys, started, committed=committed, error=error or commit_error)

    def _on_lost(self, _consumer: Any, partitions: list[Any]) -> None:
        started = time.perf_counter()
        keys = _keys(partitions)
        error = None
        try:
            if self.protocol == "eager":
                self._consumer.unassign()
            else:
                self._consumer.incremental_unassign(partitions)
        except Exception as exc:
            error = _describe_error(exc)
        self._ownership.apply("lost", keys)
        error = self._call_hooks("lost", keys, partitions) or error
        self._emit("lost", keys, started, error=error)

    # --- helpers ---------------------------------------------------------------------------------
    def _commit_stored(
        self, only: set[TopicPartition] | None = None
    ) -> tuple[list[tuple[str, int, int]], str | None, bool]:
        """Synchronously commit every stored offset; report those of `only` (the revoked partitions).

        Returns (committed, error, evicted): `evicted` is True when the broker refused the commit because
        this member is no longer part of the group's generation.
        """
        try:
            result = self._consumer.commit(asynchronous=False)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            code = err.code() if isinstance(err, KafkaError) else None
            if code == KafkaError._NO_OFFSET:
                return [], None, False  # nothing stored since the last commit: nothing to lose
            return [], _describe_error(exc), code in _EVICTED
        except RuntimeError as exc:  # consumer closed underneath us
            return [], _describe_error(exc), False
        committed = [
            (tp.topic, tp.partition, tp.offset)
            for tp in result or []
            if tp.offset >= 0 and tp.error is None and (only is None or (tp.topic, tp.partition) in only)
        ]
        return committed, None, False

    def _call_hooks(self, kind: str, keys: list[TopicPartition], partitions: list[Any]) -> str | None:
        errors = []
        hook = self._hooks.get(kind)
        legacy = self._legacy.get(kind)
        calls: list[Callable[[], Any]] = []
        if hook is not None:
            calls.append(lambda: hook(keys))
        if legacy is not None:
            calls.append(lambda: legacy(self, partitions))
        for call in calls:
            try:
                call()
            except Exception as exc:
                self._log.exception("on_%s hook raised; the rebalance goes on", kind)
                errors.append(f"on_{kind} hook: {_describe_error(exc)}")
        return "; ".join(errors) or None

    def _member_id(self) -> str:
        try:
            return str(self._consumer.memberid() or "")
        except (RuntimeError, KafkaException):
            return ""

    def _emit(
        self,
        kind: EventKind,
        keys: list[TopicPartition],
        started: float,
        *,
        committed: list[tuple[str, int, int]] | None = None,
        error: str | None = None,
    ) -> None:
        event = self._stamp.make(
            kind,
            member_id=self._member_id(),
            partitions=keys,
            owned=self._ownership.owned,
            callback_ms=(time.perf_counter() - started) * 1000.0,
            committed=committed,
            error=error,
        )
        self._deliver(event)

    def _emit_lifecycle(self, kind: EventKind) -> None:
        self._deliver(
            self._stamp.make(
                kind,
                member_id=self._member_id() if kind != "closed" else "",
                partitions=(),
                owned=self._ownership.owned,
                callback_ms=0.0,
            )
        )

    def _deliver(self, event: RebalanceEvent) -> None:
        if self._sink is None:
            return
        try:
            self._sink.emit(event)
        except Exception:
            self._log.exception("Rebalance event sink failed; the event is dropped, consumption goes on")

    def _manifest(self) -> Manifest | None:
        member_id = self._member_id()
        if not member_id:
            return None
        s = self.settings
        return Manifest(
            group=s.group_id,
            member_id=member_id,
            instance_id=s.instance_id,
            client_id=self._client_id,
            host=local_host(),
            libraries={
                "kafka-coop": __version__,
                "confluent-kafka": confluent_kafka.__version__,
                "librdkafka": confluent_kafka.libversion()[0],
            },
            group_protocol="consumer" if self.protocol == "consumer" else "classic",
            assignors=s.assignor_names,
            rebalance_protocol=self.protocol,
            remote_assignor=s.remote_assignor,
            started_ms=self._started_ms,
            heartbeat_ms=timestamp_ms(),
        )

    def _check_duplicate(self, rendered: Mapping[str, str], policy: DuplicatePolicy) -> None:
        from kafka_coop.admin import ClusterAdmin

        instance_id = self.settings.instance_id
        assert instance_id is not None
        admin = ClusterAdmin(rendered["bootstrap.servers"], _admin_conf(rendered))
        live = admin.describe_group(self.settings.group_id)
        message = check_duplicate(instance_id, live.instance_ids, self.protocol, policy)
        if message:
            self._log.warning(message)


_CONSUMER_ONLY_PREFIXES = (
    "group.",
    "partition.assignment",
    "session.timeout",
    "heartbeat.",
    "enable.auto",
    "auto.",
    "max.poll",
    "fetch.",
    "isolation.",
    "check.crcs",
    "queued.",
    "enable.partition.eof",
    "consume.",
    "coordinator.",
)


def _producer_conf(rendered: Mapping[str, str]) -> dict[str, str]:
    """Connection and security settings only, so the manifest producer talks to the same cluster."""
    return {k: v for k, v in rendered.items() if not k.startswith(_CONSUMER_ONLY_PREFIXES)}


def _admin_conf(rendered: Mapping[str, str]) -> dict[str, str]:
    conf = _producer_conf(rendered)
    conf.pop("bootstrap.servers", None)
    return conf

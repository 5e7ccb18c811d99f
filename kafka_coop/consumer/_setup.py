"""What both drivers build before they create their client, and their manifest: one place for both.

`CoopConsumer` and `CoopAIOConsumer` take the same arguments and make the same decisions from them
(settings, hooks, sink, handler, the offset mode, the conf their client gets). `prepare` does that;
`manifest` and `check_duplicate_id` are the manifest record and the duplicate-id check both publish and
run, and `publisher` the manifest publisher both start.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import confluent_kafka

from kafka_coop._vocab import RebalanceProtocol, connection_conf
from kafka_coop.consumer._client_callbacks import ClientLog
from kafka_coop.consumer._clock import SYSTEM_CLOCK, Clock, Witness, WitnessedClock
from kafka_coop.consumer._freeze import LIBRDKAFKA_MAX_POLL_S, WATCHDOG, freeze_limit_s
from kafka_coop.consumer._handler import RebalanceHandler
from kafka_coop.consumer._listener import Hook, Hooks, RebalanceListener, StartOffsetsHook
from kafka_coop.consumer._refusal import explain as explain_refusal
from kafka_coop.errors import InvalidInput
from kafka_coop.events import EventStamp, RebalanceEvent
from kafka_coop.identity import DuplicatePolicy, check_duplicate
from kafka_coop.manifest import (
    DEFAULT_HEARTBEAT_S,
    DEFAULT_MANIFEST_TOPIC,
    Manifest,
    ManifestPublisher,
    local_host,
    manifest_key,
    read_manifest_keys,
    timestamp_ms,
)
from kafka_coop.settings import CALLBACK_KEYS, ConsumerSettings
from kafka_coop.sinks import EventSink, as_sink

if TYPE_CHECKING:
    from kafka_coop.admin import MemberDescription

LIBRDKAFKA_LOGGER = "kafka_coop.librdkafka"
# kafka-coop owns marks and commits: its client never stores an offset (so nothing is ever committed
# behind kafka-coop's back, e.g. by librdkafka's unassign with a reset member id) and never commits by
# itself. The user's values of these keys keep their meaning as settings of kafka-coop's committer.
OFFSET_STORE_KEY = "enable.auto.offset.store"
AUTO_COMMIT_KEY = "enable.auto.commit"
INTERVAL_KEY = "auto.commit.interval.ms"
CLIENT_OWNS_NOTHING = {OFFSET_STORE_KEY: "false", AUTO_COMMIT_KEY: "false"}
LIBRDKAFKA_INTERVAL_MS = 5000
# The conf callbacks each driver wraps (the rest go to the client as given).
WRAPPED_CALLBACKS = ("logger", "error_cb", "on_commit")


@dataclass
class DriverSetup:
    """Everything a driver needs before it creates its client."""

    settings: ConsumerSettings
    log: logging.Logger
    protocol: RebalanceProtocol
    sink: EventSink | None
    rendered: dict[str, str]
    client_id: str
    handler: RebalanceHandler
    callbacks: dict[str, Any]  # confluent-kafka callbacks from the conf, `logger` and `error_cb` included
    started_ms: int
    marks: bool  # explicit marks (enable.auto.offset.store=false); else drop-in: polled past is done
    auto_commit: bool  # kafka-coop commits every `interval_s` (enable.auto.commit, default true)
    interval_s: float
    freeze_limit_s: float
    max_poll_s: float  # max.poll.interval.ms: past it since the last call, librdkafka evicted this member
    transactional: bool  # the application's producer transactions own the commit
    clock: Clock  # the consumer's one clock (core, freeze guard, handler, fatal rules)
    witness: Witness  # the watchdog it registers with: the process's, or a test's MockedClock
    stamp: EventStamp  # the member's event identity and sequence (kept across a live rebuild)

    def client_conf(self) -> dict[str, Any]:
        """The client's conf: rendered settings, with the client storing and committing nothing, and the
        user's callbacks other than those the driver wraps."""
        rest = {k: v for k, v in self.callbacks.items() if k not in WRAPPED_CALLBACKS}
        return {**self.rendered, **CLIENT_OWNS_NOTHING, **rest}


def prepare(
    conf: Mapping[str, Any] | ConsumerSettings,
    *,
    listener: RebalanceListener | None,
    start_offsets: StartOffsetsHook | None,
    on_assigned: Hook | None,
    on_revoked: Hook | None,
    on_lost: Hook | None,
    events: EventSink | Callable[[RebalanceEvent], Any] | str | None,
    logger: logging.Logger | None,
    default_log: logging.Logger,
    callbacks: Mapping[str, Any] | None = None,
    transactional: bool = False,
    clock: WitnessedClock | None = None,
    stamp: EventStamp | None = None,
) -> DriverSetup:
    """`stamp`: a rebuilt client's member goes on with its predecessor's (one `process`, one `seq`)."""
    callbacks_given = check_callbacks(callbacks or {})
    if isinstance(conf, ConsumerSettings):
        settings = conf
        found: dict[str, Any] = {}
    else:
        plain = dict(conf)
        found = {k: plain.pop(k) for k in sorted(CALLBACK_KEYS) if k in plain}
        settings = ConsumerSettings.from_conf(plain)
    log = logger or default_log
    for warning in settings.warnings:
        log.warning(warning)
    protocol = settings.protocol
    hooks = Hooks.of(
        listener, start_offsets=start_offsets, on_assigned=on_assigned, on_revoked=on_revoked, on_lost=on_lost
    )
    sink = as_sink(events)
    rendered = settings.render()
    client_id = settings.client_id or "rdkafka"  # librdkafka's default
    stamp = stamp or EventStamp(settings.group_id, client_id, settings.instance_id, protocol)
    handler = RebalanceHandler(
        protocol=protocol, stamp=stamp, hooks=hooks, log=log, clock=clock or SYSTEM_CLOCK
    )
    if protocol == "consumer":
        handler.explain_refusal = partial(
            explain_refusal, settings.bootstrap_servers, admin_conf(rendered), settings.group_id
        )
    auto_commit = settings.auto_commit is not False  # librdkafka's default: true
    if transactional and settings.auto_commit:
        raise InvalidInput(
            "transactional=True and enable.auto.commit=true contradict each other: the transaction owns "
            "the commit.",
            hint="Leave enable.auto.commit out (or false) when the producer's transactions commit offsets.",
        )
    interval_ms = settings.auto_commit_interval_ms or LIBRDKAFKA_INTERVAL_MS
    return DriverSetup(
        settings=settings,
        log=log,
        protocol=protocol,
        sink=sink,
        rendered=rendered,
        client_id=client_id,
        handler=handler,
        callbacks={**found, **callbacks_given},
        started_ms=timestamp_ms(),
        marks=settings.auto_offset_store is False,
        auto_commit=auto_commit and not transactional,
        interval_s=interval_ms / 1000.0,
        freeze_limit_s=freeze_limit_s(protocol, settings.session_timeout_ms, settings.max_poll_interval_ms),
        max_poll_s=(settings.max_poll_interval_ms or 0) / 1000.0 or LIBRDKAFKA_MAX_POLL_S,
        transactional=transactional,
        clock=clock or SYSTEM_CLOCK,
        witness=clock or WATCHDOG,
        stamp=stamp,
    )


def check_topics(topics: Any) -> list[str]:
    """`subscribe`'s topic list, refused as confluent-kafka refuses it: a string is not a list."""
    if isinstance(topics, str | bytes) or not all(isinstance(t, str) for t in topics):
        raise TypeError(
            f"subscribe() takes a list of topic names, not {topics!r}: write [{topics!r}]."
            if isinstance(topics, str)
            else f"subscribe() takes a list of topic names (strings), not {topics!r}."
        )
    return list(topics)


def check_callbacks(callbacks: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in callbacks.items():
        if key not in CALLBACK_KEYS:
            raise InvalidInput(
                f"callbacks={{{key!r}: ...}} is not a confluent-kafka callback.",
                hint=f"Use one of {', '.join(sorted(CALLBACK_KEYS))}.",
            )
        if key != "logger" and not callable(value):
            raise InvalidInput(f"callbacks[{key!r}] is not callable.", hint="Pass a function.")
    return dict(callbacks)


def manifest(prepared: DriverSetup, member_id: str) -> Manifest | None:
    """This member's manifest record, or None before it has a member id."""
    if not member_id:
        return None
    s = prepared.settings
    return Manifest(
        group=s.group_id,
        member_id=member_id,
        instance_id=s.instance_id,
        client_id=prepared.client_id,
        host=local_host(),
        libraries={
            "kafka-coop": version("kafka-coop"),
            "confluent-kafka": confluent_kafka.__version__,
            "librdkafka": confluent_kafka.libversion()[0],
        },
        group_protocol="consumer" if prepared.protocol == "consumer" else "classic",
        assignors=s.assignor_names,
        rebalance_protocol=prepared.protocol,
        remote_assignor=s.remote_assignor,
        started_ms=prepared.started_ms,
        heartbeat_ms=timestamp_ms(),
        liveness_s=DEFAULT_HEARTBEAT_S,
    )


def rebuild(
    settings: ConsumerSettings,
    old: DriverSetup,
    hook_args: Mapping[str, Any],
    *,
    default_log: logging.Logger,
    clock: WitnessedClock | None,
) -> DriverSetup:
    """A live reconfiguration's setup: `settings` prepared with everything the member keeps from `old`
    (hooks, sink, logger, callbacks, event stamp, clock, and the process's `started_ms`)."""
    prepared = prepare(
        settings,
        **hook_args,
        events=old.sink,
        logger=old.log,
        default_log=default_log,
        callbacks=old.callbacks,
        transactional=old.transactional,
        stamp=old.stamp,
        clock=clock,
    )
    prepared.started_ms = old.started_ms  # the manifest's `started_ms` is the process's, not the client's
    return prepared


def check_duplicate_id(prepared: DriverSetup, policy: DuplicatePolicy, manifests: bool | str = False) -> None:
    """Warn (or raise, per `policy`) when a live member of the group already holds this instance id.

    `warn` needs evidence that the listed holder runs: with manifests on, the holder's manifest, under
    the listed member id, neither withdrawn (a close tombstones it) nor older than two of its heartbeats.
    """
    from kafka_coop.admin import ClusterAdmin

    instance_id = prepared.settings.instance_id
    assert instance_id is not None
    admin = ClusterAdmin(prepared.settings.bootstrap_servers, admin_conf(prepared.rendered))
    live = admin.describe_group(prepared.settings.group_id)
    running = ""
    if policy == "warn" and manifests and instance_id in live.instance_ids:
        running = _holder_running(prepared, live.members, instance_id, manifests)
    message = check_duplicate(
        instance_id, live.instance_ids, prepared.protocol, policy, holder_running=running
    )
    if message:
        prepared.log.warning(message)


# A running member republishes its manifest within its liveness period (30 s where a manifest promises
# none, kafka-coop's period before liveness records): two missed, and it is not running.
_UNPROMISED_PERIOD_S = 30.0


def _holder_running(
    prepared: DriverSetup, members: Sequence[MemberDescription], instance_id: str, topic: bool | str
) -> str:
    """What shows the listed holder of `instance_id` runs (its live manifest), or '' for no evidence."""
    holders = {m.member_id for m in members if m.instance_id == instance_id}
    latest, _error = read_manifest_keys(
        prepared.rendered["bootstrap.servers"],
        admin_conf(prepared.rendered),
        topic=topic if isinstance(topic, str) else DEFAULT_MANIFEST_TOPIC,
        timeout_s=5.0,
    )
    found = latest.get(manifest_key(prepared.settings.group_id, instance_id, ""))
    if (
        found is None
        or found.member_id not in holders
        or timestamp_ms() - found.heartbeat_ms > 2 * 1000 * (found.liveness_s or _UNPROMISED_PERIOD_S)
    ):
        return ""
    age = max(0, timestamp_ms() - found.heartbeat_ms) / 1000
    return (
        f"its manifest (host {found.host}, member id {found.member_id}) was republished {age:.0f} s ago "
        "and never withdrawn"
    )


def admin_conf(rendered: Mapping[str, str]) -> dict[str, str]:
    conf = connection_conf(rendered)
    conf.pop("bootstrap.servers", None)
    return conf


def publisher(
    prepared: DriverSetup, manifests: bool | str, build: Callable[[], Manifest | None]
) -> ManifestPublisher | None:
    """The manifest publisher `manifests=` asks for (True: the default topic; a name: that topic)."""
    if not manifests:
        return None
    topic = manifests if isinstance(manifests, str) else DEFAULT_MANIFEST_TOPIC
    # Its producer logs through Python logging too: no raw librdkafka lines on stderr.
    conf = {**connection_conf(prepared.rendered), "logger": ClientLog(logging.getLogger(LIBRDKAFKA_LOGGER))}
    return ManifestPublisher(conf, build, topic=topic)

"""What both drivers build before they create their client, and their manifest: one place for both.

`CoopConsumer` and `CoopAIOConsumer` take the same arguments and make the same decisions from them
(settings, hooks, sink, handler, freeze guard, the conf their client gets); they differ in the client
they create and in how they call it. `prepare` does the common part; `manifest` and
`check_duplicate_id` are the manifest record and the duplicate-id check both publish and run, and
`publisher` the manifest publisher both start.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import confluent_kafka

from kafka_coop import __version__
from kafka_coop._vocab import RebalanceProtocol, connection_conf
from kafka_coop.consumer._freeze import FreezeGuard, freeze_limit_s
from kafka_coop.consumer._handler import (
    ClientLog,
    Hook,
    Hooks,
    RebalanceHandler,
    RebalanceListener,
    StartOffsetsHook,
)
from kafka_coop.errors import InvalidInput
from kafka_coop.events import EventStamp, RebalanceEvent
from kafka_coop.identity import DuplicatePolicy, check_duplicate
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC, Manifest, ManifestPublisher, local_host, timestamp_ms
from kafka_coop.settings import CALLBACK_KEYS, ConsumerSettings
from kafka_coop.sinks import EventSink, as_sink

LIBRDKAFKA_LOGGER = "kafka_coop.librdkafka"
# The offset contract: librdkafka stores (and so commits) an offset when it *delivers* a record unless
# told otherwise; kafka-coop commits only what the application marked done.
OFFSET_STORE_KEY = "enable.auto.offset.store"
DEFAULT_OFFSET_STORE = "false"


@dataclass
class Prepared:
    """Everything a driver needs before it creates its client."""

    settings: ConsumerSettings
    log: logging.Logger
    protocol: RebalanceProtocol
    sink: EventSink | None
    rendered: dict[str, str]
    client_id: str
    handler: RebalanceHandler
    guard: FreezeGuard
    callbacks: dict[str, Any]  # confluent-kafka callbacks from the conf, `logger` and `error_cb` included
    started_ms: int

    def client_conf(self) -> dict[str, Any]:
        """The client's conf: rendered settings, kafka-coop's offset-store default, the user's callbacks
        other than `logger` and `error_cb` (each driver wraps those two)."""
        rest = {k: v for k, v in self.callbacks.items() if k not in ("logger", "error_cb")}
        return {OFFSET_STORE_KEY: DEFAULT_OFFSET_STORE, **self.rendered, **rest}


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
) -> Prepared:
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
    client_id = rendered.get("client.id", "rdkafka")
    stamp = EventStamp(settings.group_id, client_id, settings.instance_id, protocol)
    handler = RebalanceHandler(protocol=protocol, stamp=stamp, hooks=hooks, sink=sink, log=log)
    guard = FreezeGuard(
        freeze_limit_s(protocol, settings.session_timeout_ms, settings.max_poll_interval_ms), log
    )
    return Prepared(
        settings=settings,
        log=log,
        protocol=protocol,
        sink=sink,
        rendered=rendered,
        client_id=client_id,
        handler=handler,
        guard=guard,
        callbacks={**found, **callbacks_given},
        started_ms=timestamp_ms(),
    )


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


def manifest(prepared: Prepared, member_id: str) -> Manifest | None:
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
            "kafka-coop": __version__,
            "confluent-kafka": confluent_kafka.__version__,
            "librdkafka": confluent_kafka.libversion()[0],
        },
        group_protocol="consumer" if prepared.protocol == "consumer" else "classic",
        assignors=s.assignor_names,
        rebalance_protocol=prepared.protocol,
        remote_assignor=s.remote_assignor,
        started_ms=prepared.started_ms,
        heartbeat_ms=timestamp_ms(),
    )


def check_duplicate_id(prepared: Prepared, policy: DuplicatePolicy) -> None:
    """Warn (or raise, per `policy`) when a live member of the group already holds this instance id."""
    from kafka_coop.admin import ClusterAdmin

    instance_id = prepared.settings.instance_id
    assert instance_id is not None
    admin = ClusterAdmin(prepared.rendered["bootstrap.servers"], admin_conf(prepared.rendered))
    live = admin.describe_group(prepared.settings.group_id)
    message = check_duplicate(instance_id, live.instance_ids, prepared.protocol, policy)
    if message:
        prepared.log.warning(message)


def admin_conf(rendered: Mapping[str, str]) -> dict[str, str]:
    conf = connection_conf(rendered)
    conf.pop("bootstrap.servers", None)
    return conf


def publisher(
    prepared: Prepared, manifests: bool | str, build: Callable[[], Manifest | None]
) -> ManifestPublisher | None:
    """The manifest publisher `manifests=` asks for (True: the default topic; a name: that topic)."""
    if not manifests:
        return None
    topic = manifests if isinstance(manifests, str) else DEFAULT_MANIFEST_TOPIC
    # Its producer logs through Python logging too: no raw librdkafka lines on stderr.
    conf = {**connection_conf(prepared.rendered), "logger": ClientLog(logging.getLogger(LIBRDKAFKA_LOGGER))}
    return ManifestPublisher(conf, build, topic=topic)

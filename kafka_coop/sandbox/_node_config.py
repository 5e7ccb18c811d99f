"""A sandbox node's broker configuration (pure): the settings a test cluster needs, the listener and
quorum wiring of each node, and the user's overrides, minus the keys the sandbox must own."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping
from typing import Literal

from kafka_coop.errors import InvalidInput

PROXIED_LISTENER = "PROXIED"
Security = Literal["plaintext", "sasl_ssl"]
SECURITY_CHOICES: tuple[Security, ...] = ("plaintext", "sasl_ssl")

# Settings a single-node test cluster needs (docs/protocols.md "Test bed"); user overrides win.
BASE_CONFIG: dict[str, str] = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "log.flush.interval.messages": "9223372036854775807",
    # one node has no follower to tell it is alive: no no-op record on the metadata log every 500 ms
    # (an idle broker's CPU, measured here: 2.0 -> 1.4 s a minute)
    "metadata.max.idle.interval.ms": "0",
}
# A cluster: every internal topic on all three nodes, and acks=all needs two of them in sync, so one
# node down loses nothing and blocks nothing. Three offsets partitions spread the group coordinators.
CLUSTER_CONFIG: dict[str, str] = {
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "background.threads": "2",
    "log.cleaner.threads": "1",
    "num.replica.fetchers": "1",
    # a restarted node takes its leaderships back within 30 s instead of 5 min
    "leader.imbalance.check.interval.seconds": "30",
    # Kafka's default again: the nodes' metadata log keeps its no-op records
    "metadata.max.idle.interval.ms": "500",
}
# Keys the sandbox owns: overriding them would break the listener/quorum wiring.
RESERVED = frozenset(
    {"listeners", "advertised.listeners", "controller.quorum.voters", "log.dirs", "node.id", "process.roles"}
)


def random_cluster_id() -> str:
    """Kafka's Uuid text form: URL-safe base64 of 16 random bytes, unpadded, never starting with '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def parse_overrides(pairs: Mapping[str, str] | list[str] | tuple[str, ...] | None) -> dict[str, str]:
    """Accept {key: value} or ["key=value", ...]; reject keys the sandbox must own."""
    if pairs is None:
        return {}
    items: dict[str, str] = {}
    if isinstance(pairs, Mapping):
        items = {str(k): str(v) for k, v in pairs.items()}
    else:
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                raise InvalidInput(
                    f"Broker override {pair!r} is not of the form key=value.",
                    hint="Pass e.g. --config group.consumer.migration.policy=disabled.",
                )
            items[key.strip()] = value.strip()
    reserved = sorted(set(items) & RESERVED)
    if reserved:
        raise InvalidInput(
            f"Broker setting {reserved[0]} is managed by the sandbox and cannot be overridden.",
            hint="Use --port to move the listener and --dir to move the data.",
        )
    return items


def node_config(
    node_id: int,
    nodes: Mapping[int, tuple[int, int]],
    *,
    data_dir: str,
    security: Security,
    proxied: tuple[int, int] | None = None,
) -> dict[str, str]:
    """The listener/quorum wiring of one node (pure): `nodes` maps node id -> (client, controller) port.

    `proxied` = (listen port, advertised port) adds a PROXIED listener whose advertised address is a
    proxy's: a client bootstrapped there learns only proxy addresses from metadata, so every connection
    it makes, to every broker, goes through the proxy (which is what network faults need).
    """
    client = "PLAINTEXT" if security == "plaintext" else "SASL_SSL"
    controller_protocol = "PLAINTEXT" if security == "plaintext" else "SSL"
    port, controller_port = nodes[node_id]
    listeners = [f"{client}://127.0.0.1:{port}", f"CONTROLLER://127.0.0.1:{controller_port}"]
    advertised = [f"{client}://127.0.0.1:{port}"]
    protocols = [f"{client}:{client}", f"CONTROLLER:{controller_protocol}"]
    if proxied is not None:
        listeners.append(f"{PROXIED_LISTENER}://127.0.0.1:{proxied[0]}")
        advertised.append(f"{PROXIED_LISTENER}://127.0.0.1:{proxied[1]}")
        protocols.append(f"{PROXIED_LISTENER}:{client}")
    config = dict(BASE_CONFIG)
    if len(nodes) > 1:
        config.update(CLUSTER_CONFIG)
    config.update(
        {
            "node.id": str(node_id),
            "inter.broker.listener.name": client,
            "listener.security.protocol.map": ",".join(protocols),
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(advertised),
            "controller.quorum.voters": ",".join(f"{n}@127.0.0.1:{c}" for n, (_, c) in sorted(nodes.items())),
            "log.dirs": data_dir,
        }
    )
    return config

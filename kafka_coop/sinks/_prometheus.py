"""Prometheus metrics from the rebalance event stream (shell; owns prometheus_client).

A `PrometheusSink` is an ordinary event sink: it sees the same `RebalanceEvent`s a JSON-lines file
does, so it works for any consumer that emits them (`CoopConsumer`, `CoopAIOConsumer`, a Java member
writing the same records through a bridge). The metric objects live in one `RebalanceMetrics` per
registry, shared by every sink on it, because Prometheus refuses a second metric of the same name; each
sink keeps the partition count of its own consumer and moves the shared `owned` gauge by the
difference, so several consumers of one group in one process add up instead of overwriting each other.

Names follow the Prometheus conventions: a `kafka_coop_` prefix, base units (seconds), `_total` on
counters, labels for what one may sum over (group, protocol, kind). docs/metrics.md lists them with
example PromQL and alert rules.
"""

from __future__ import annotations

import re
import threading
from typing import Final

try:
    from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, start_http_server
except ImportError as exc:  # the `metrics` extra
    raise ImportError(
        "kafka_coop.sinks.PrometheusSink needs prometheus-client: pip install 'kafka-coop[metrics]'."
    ) from exc

from kafka_coop.events import RebalanceEvent

NAMESPACE: Final = "kafka_coop"
# Callbacks run from microseconds (an empty delta) to the whole revoke work of a service; a commit on
# revoke is one broker round trip, or the request timeout when the coordinator is gone.
DURATION_BUCKETS_S: Final = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
REBALANCE_KINDS: Final = ("assigned", "revoked", "lost")
# The consumer writes a fatal client error (librdkafka `_FATAL`, a fenced static member) into the `lost`
# event it emits as "fatal CODE: message"; a member that met one does not come back by itself. Later
# callbacks of the same member say "after fatal error CODE" and are not counted again.
FATAL_PATTERN: Final = re.compile(r"\bfatal [A-Z_]+:")


def is_fatal(error: str | None) -> bool:
    """Whether an event's error reports a fatal client error (the member has left the group for good)."""
    return error is not None and FATAL_PATTERN.search(error) is not None


class RebalanceMetrics:
    """The metric families of one registry; get sinks from `sink()`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else REGISTRY
        reg = self.registry
        self.events = Counter(
            "rebalance_events",
            "Rebalance and lifecycle events a member emitted, by kind and rebalance protocol.",
            ("group", "protocol", "kind"),
            namespace=NAMESPACE,
            registry=reg,
        )
        self.assigned = Counter(
            "partitions_assigned",
            "Partitions assigned to members (the delta of each assigned callback).",
            ("group", "protocol"),
            namespace=NAMESPACE,
            registry=reg,
        )
        self.revoked = Counter(
            "partitions_revoked",
            "Partitions revoked from members (offsets committed before they left).",
            ("group", "protocol"),
            namespace=NAMESPACE,
            registry=reg,
        )
        self.lost = Counter(
            "partitions_lost",
            "Partitions lost by members (taken away without a chance to commit).",
            ("group", "protocol"),
            namespace=NAMESPACE,
            registry=reg,
        )
        self.owned = Gauge(
            "owned_partitions",
            "Partitions the members in this process own now.",
            ("group",),
            namespace=NAMESPACE,
            registry=reg,
        )
        self.callback_seconds = Histogram(
            "rebalance_callback_duration_seconds",
            "Time spent in a rebalance callback, hooks and commit on revoke included.",
            ("group", "protocol", "kind"),
            namespace=NAMESPACE,
            registry=reg,
            buckets=DURATION_BUCKETS_S,
        )
        self.commit_seconds = Histogram(
            "commit_on_revoke_duration_seconds",
            "Time the synchronous commit of revoked partitions took.",
            ("group", "protocol"),
            namespace=NAMESPACE,
            registry=reg,
            buckets=DURATION_BUCKETS_S,
        )
        self.last_rebalance = Gauge(
            "last_rebalance_timestamp_seconds",
            "Unix time of the last assigned, revoked or lost callback.",
            ("group",),
            namespace=NAMESPACE,
            registry=reg,
        )
        self.callback_errors = Counter(
            "rebalance_callback_errors",
            "Rebalance callbacks that recorded an error (a hook raised, a commit or assign failed).",
            ("group", "kind"),
            namespace=NAMESPACE,
            registry=reg,
        )
        self.subscription_warnings = Counter(
            "subscription_warnings",
            "Members that cannot be assigned what they subscribed to (a missing or unauthorized topic).",
            ("group",),
            namespace=NAMESPACE,
            registry=reg,
        )
        self.fatal_errors = Counter(
            "fatal_errors",
            "Fatal client errors (fenced static member, librdkafka _FATAL): the member left for good.",
            ("group",),
            namespace=NAMESPACE,
            registry=reg,
        )

    def sink(self) -> PrometheusSink:
        return PrometheusSink(self)


_shared: dict[int, RebalanceMetrics] = {}
_shared_lock = threading.Lock()


def metrics_for(registry: CollectorRegistry | None = None) -> RebalanceMetrics:
    """The one `RebalanceMetrics` of `registry` (default: prometheus_client's global registry)."""
    reg = registry if registry is not None else REGISTRY
    with _shared_lock:
        found = _shared.get(id(reg))
        if found is None or found.registry is not reg:
            found = _shared[id(reg)] = RebalanceMetrics(reg)
        return found


class PrometheusSink:
    """An event sink that updates Prometheus metrics; one per consumer, any number per registry.

    `PrometheusSink()` records into prometheus_client's global registry, which `start_http_server`
    (or `serve_metrics`) exposes; pass a `RebalanceMetrics` to use another registry.
    """

    def __init__(self, metrics: RebalanceMetrics | None = None) -> None:
        self.metrics = metrics if metrics is not None else metrics_for()
        self._owned: dict[str, int] = {}  # group -> partitions this consumer holds, as last reported
        self._lock = threading.Lock()

    def emit(self, event: RebalanceEvent) -> None:
        m = self.metrics
        group, protocol, kind = event.group, event.protocol, event.kind
        m.events.labels(group, protocol, kind).inc()
        owned = 0 if kind == "closed" else len(event.owned)
        with self._lock:
            m.owned.labels(group).inc(owned - self._owned.get(group, 0))
            self._owned[group] = owned
        if kind == "warning":
            m.subscription_warnings.labels(group).inc()
        elif event.error is not None:
            m.callback_errors.labels(group, kind).inc()
            if is_fatal(event.error):
                m.fatal_errors.labels(group).inc()
        if kind not in REBALANCE_KINDS:
            return
        counter = {"assigned": m.assigned, "revoked": m.revoked, "lost": m.lost}[kind]
        counter.labels(group, protocol).inc(len(event.partitions))
        m.callback_seconds.labels(group, protocol, kind).observe(event.callback_ms / 1000.0)
        if kind == "revoked" and event.commit_ms is not None:
            m.commit_seconds.labels(group, protocol).observe(event.commit_ms / 1000.0)
        m.last_rebalance.labels(group).set(event.ts_ms / 1000.0)

    def close(self) -> None:
        """Take this consumer's partitions out of the gauge (a `closed` event normally did already)."""
        with self._lock:
            for group, owned in self._owned.items():
                self.metrics.owned.labels(group).dec(owned)
            self._owned.clear()


class MetricsServer:
    """The HTTP endpoint of `serve_metrics`; `close()` stops it."""

    def __init__(self, port: int, addr: str, registry: CollectorRegistry) -> None:
        self._server, self._thread = start_http_server(port, addr=addr, registry=registry)
        self.port = int(self._server.server_address[1])
        self.addr = addr

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)


ALL_INTERFACES: Final = "0.0.0.0"  # noqa: S104  # a scrape target listens where Prometheus can reach it


def serve_metrics(
    port: int, addr: str = ALL_INTERFACES, registry: CollectorRegistry | None = None
) -> MetricsServer:
    """Serve `registry` (default: the global one) at http://ADDR:PORT/metrics; port 0 picks a free one."""
    return MetricsServer(port, addr, registry if registry is not None else REGISTRY)

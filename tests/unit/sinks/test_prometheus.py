"""The Prometheus sink turns rebalance events into the documented metrics (docs/metrics.md)."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kafka_coop.events import EventStamp
from kafka_coop.sinks import PrometheusSink, RebalanceMetrics, is_fatal, metrics_for

GROUP = "orders"


def _stamp(protocol: str = "cooperative") -> EventStamp:
    return EventStamp(GROUP, "svc", "svc-0", protocol)  # type: ignore[arg-type]


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def _sink() -> tuple[PrometheusSink, CollectorRegistry]:
    registry = CollectorRegistry()
    return RebalanceMetrics(registry).sink(), registry


def test_partitions_are_counted_by_kind_from_each_callback_delta() -> None:
    sink, reg = _sink()
    stamp = _stamp()
    sink.emit(stamp.make("assigned", member_id="m", partitions=[("t", 0), ("t", 1)], owned=(), callback_ms=1))
    sink.emit(stamp.make("revoked", member_id="m", partitions=[("t", 1)], owned=(), callback_ms=1))
    sink.emit(stamp.make("lost", member_id="m", partitions=[("t", 0)], owned=(), callback_ms=1))
    labels = {"group": GROUP, "protocol": "cooperative"}
    assert _value(reg, "kafka_coop_partitions_assigned_total", **labels) == 2
    assert _value(reg, "kafka_coop_partitions_revoked_total", **labels) == 1
    assert _value(reg, "kafka_coop_partitions_lost_total", **labels) == 1


def test_events_are_counted_by_kind_and_protocol() -> None:
    sink, reg = _sink()
    eager = _stamp("eager")
    sink.emit(eager.make("started", member_id="", partitions=(), owned=(), callback_ms=0))
    sink.emit(eager.make("assigned", member_id="m", partitions=[("t", 0)], owned=(("t", 0),), callback_ms=1))
    sink.emit(eager.make("assigned", member_id="m", partitions=[("t", 0)], owned=(("t", 0),), callback_ms=1))
    labels = {"group": GROUP, "protocol": "eager"}
    assert _value(reg, "kafka_coop_rebalance_events_total", kind="assigned", **labels) == 2
    assert _value(reg, "kafka_coop_rebalance_events_total", kind="started", **labels) == 1


def test_owned_gauge_follows_the_member_and_drops_to_zero_on_close() -> None:
    sink, reg = _sink()
    stamp = _stamp()
    owned = (("t", 0), ("t", 1), ("t", 2))
    sink.emit(stamp.make("assigned", member_id="m", partitions=owned, owned=owned, callback_ms=1))
    assert _value(reg, "kafka_coop_owned_partitions", group=GROUP) == 3
    sink.emit(stamp.make("revoked", member_id="m", partitions=[("t", 2)], owned=owned[:2], callback_ms=1))
    assert _value(reg, "kafka_coop_owned_partitions", group=GROUP) == 2
    sink.emit(stamp.make("closed", member_id="", partitions=(), owned=owned[:2], callback_ms=0))
    assert _value(reg, "kafka_coop_owned_partitions", group=GROUP) == 0


def test_owned_gauge_adds_up_consumers_of_one_group_sharing_a_registry() -> None:
    registry = CollectorRegistry()
    metrics = RebalanceMetrics(registry)
    first, second = metrics.sink(), metrics.sink()
    first.emit(
        _stamp().make("assigned", member_id="a", partitions=[("t", 0)], owned=(("t", 0),), callback_ms=1)
    )
    both = (("t", 1), ("t", 2))
    second.emit(_stamp().make("assigned", member_id="b", partitions=both, owned=both, callback_ms=1))
    assert _value(registry, "kafka_coop_owned_partitions", group=GROUP) == 3
    second.close()
    assert _value(registry, "kafka_coop_owned_partitions", group=GROUP) == 1


def test_callback_duration_is_observed_in_seconds_per_kind() -> None:
    sink, reg = _sink()
    sink.emit(_stamp().make("assigned", member_id="m", partitions=[("t", 0)], owned=(), callback_ms=30.0))
    labels = {"group": GROUP, "protocol": "cooperative", "kind": "assigned"}
    assert _value(reg, "kafka_coop_rebalance_callback_duration_seconds_count", **labels) == 1
    assert _value(reg, "kafka_coop_rebalance_callback_duration_seconds_sum", **labels) == 0.03
    assert _value(reg, "kafka_coop_rebalance_callback_duration_seconds_bucket", le="0.025", **labels) == 0
    assert _value(reg, "kafka_coop_rebalance_callback_duration_seconds_bucket", le="0.05", **labels) == 1


def test_commit_on_revoke_duration_comes_from_the_revoked_event() -> None:
    sink, reg = _sink()
    stamp = _stamp()
    sink.emit(
        stamp.make(
            "revoked",
            member_id="m",
            partitions=[("t", 0)],
            owned=(),
            callback_ms=9.0,
            committed=[("t", 0, 42)],
            commit_ms=4.0,
        )
    )
    sink.emit(stamp.make("lost", member_id="m", partitions=[("t", 1)], owned=(), callback_ms=1.0))
    labels = {"group": GROUP, "protocol": "cooperative"}
    assert _value(reg, "kafka_coop_commit_on_revoke_duration_seconds_count", **labels) == 1
    assert _value(reg, "kafka_coop_commit_on_revoke_duration_seconds_sum", **labels) == 0.004


def test_last_rebalance_time_is_the_last_rebalance_callback_not_a_lifecycle_event() -> None:
    sink, reg = _sink()
    stamp = _stamp()
    assigned = stamp.make("assigned", member_id="m", partitions=[("t", 0)], owned=(("t", 0),), callback_ms=1)
    sink.emit(assigned)
    closed = stamp.make("closed", member_id="", partitions=(), owned=(), callback_ms=0)
    sink.emit(closed.model_copy(update={"ts_ms": assigned.ts_ms + 60_000}))
    assert _value(reg, "kafka_coop_last_rebalance_timestamp_seconds", group=GROUP) == assigned.ts_ms / 1000


def test_errors_are_counted_and_fatal_ones_apart() -> None:
    sink, reg = _sink()
    stamp = _stamp()
    sink.emit(
        stamp.make(
            "revoked", member_id="m", partitions=[], owned=(), callback_ms=1, error="on_revoked hook: X"
        )
    )
    fenced = "fatal FENCED_INSTANCE_ID: Another member of group 'orders' uses group.instance.id 'svc-0'"
    sink.emit(stamp.make("lost", member_id="m", partitions=[("t", 0)], owned=(), callback_ms=1, error=fenced))
    assert _value(reg, "kafka_coop_rebalance_callback_errors_total", group=GROUP, kind="revoked") == 1
    assert _value(reg, "kafka_coop_rebalance_callback_errors_total", group=GROUP, kind="lost") == 1
    assert _value(reg, "kafka_coop_fatal_errors_total", group=GROUP) == 1


def test_fatal_errors_are_recognised_as_the_consumer_reports_them_and_counted_once() -> None:
    assert is_fatal("fatal _FATAL: The consumer of group 'g' (cooperative) stopped on a fatal error")
    assert is_fatal("on_lost hook: X; fatal FENCED_INSTANCE_ID: Another member of group 'g' uses ...")
    assert not is_fatal("after fatal error FENCED_INSTANCE_ID"), "follow-on callbacks are not a new one"
    assert not is_fatal("commit: REBALANCE_IN_PROGRESS: Broker: Group rebalance in progress")
    assert not is_fatal(None)


def test_exposition_parses_with_prometheus_own_parser_and_follows_naming_rules() -> None:
    sink, reg = _sink()
    event = _stamp().make("assigned", member_id="m", partitions=[("t", 0)], owned=(("t", 0),), callback_ms=2)
    sink.emit(event)
    families = {f.name: f for f in text_string_to_metric_families(generate_latest(reg).decode())}
    assert all(name.startswith("kafka_coop_") for name in families)
    counters = [f for f in families.values() if f.type == "counter"]
    assert counters and all(s.name.endswith(("_total", "_created")) for f in counters for s in f.samples)
    assert families["kafka_coop_rebalance_callback_duration_seconds"].type == "histogram"
    assert families["kafka_coop_owned_partitions"].type == "gauge"


def test_the_default_registry_gets_one_shared_set_of_metrics() -> None:
    registry = CollectorRegistry()
    assert metrics_for(registry) is metrics_for(registry)


def test_events_of_every_kind_and_protocol_are_accepted() -> None:
    sink, reg = _sink()
    for protocol in ("eager", "cooperative", "consumer"):
        stamp = _stamp(protocol)
        for kind in ("started", "assigned", "revoked", "lost", "closed"):
            sink.emit(stamp.make(kind, member_id="m", partitions=(), owned=(), callback_ms=0))  # type: ignore[arg-type]
        labels = {"group": GROUP, "protocol": protocol, "kind": "closed"}
        assert _value(reg, "kafka_coop_rebalance_events_total", **labels) == 1


def test_every_metric_the_docs_name_is_one_the_sink_exports() -> None:
    sink, reg = _sink()
    stamp = _stamp()
    sink.emit(stamp.make("assigned", member_id="m", partitions=[("t", 0)], owned=(), callback_ms=1))
    sink.emit(stamp.make("revoked", member_id="m", partitions=[], owned=(), callback_ms=1, commit_ms=1))
    sink.emit(
        stamp.make("lost", member_id="m", partitions=[], owned=(), callback_ms=1, error="fatal _FATAL: x")
    )
    sink.emit(stamp.make("warning", member_id="m", partitions=[], owned=(), callback_ms=0, error="no topic"))
    families = list(text_string_to_metric_families(generate_latest(reg).decode()))
    exported = {f.name for f in families} | {s.name for f in families for s in f.samples}
    docs = (Path(__file__).parents[3] / "docs" / "metrics.md").read_text()
    named = set(re.findall(r"\bkafka_coop_[a-z_]+", docs))
    assert named, "the docs name metrics"
    assert named <= exported, f"docs name metrics the sink does not export: {sorted(named - exported)}"


def test_a_subscription_warning_is_counted_as_one_and_not_as_a_callback_error() -> None:
    sink, reg = _sink()
    stamp = _stamp()
    sink.emit(stamp.make("warning", member_id="m", partitions=(), owned=(), callback_ms=0, error="no topic"))
    assert _value(reg, "kafka_coop_subscription_warnings_total", group=GROUP) == 1
    assert _value(reg, "kafka_coop_rebalance_callback_errors_total", group=GROUP, kind="warning") == 0

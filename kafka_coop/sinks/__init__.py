"""Where rebalance events go: memory, a callable, a JSON-lines file, a Kafka topic, Prometheus metrics.

Every sink takes the same `RebalanceEvent`s (`EventSink`). The Prometheus names load on first use: they
need the `metrics` extra (prometheus-client), and a service that does not use them never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_coop._lazy import lazy_attributes
from kafka_coop.sinks._kafka import KafkaTopicSink
from kafka_coop.sinks._local import CallableSink, EventSink, JsonlSink, MemorySink, as_sink

if TYPE_CHECKING:
    from kafka_coop.sinks._prometheus import (
        PrometheusSink,
        RebalanceMetrics,
        is_fatal,
        metrics_for,
        serve_metrics,
    )

# name -> the module that defines it, imported on first use (the `metrics` extra)
_LAZY: dict[str, str] = {
    "PrometheusSink": "kafka_coop.sinks._prometheus",
    "RebalanceMetrics": "kafka_coop.sinks._prometheus",
    "is_fatal": "kafka_coop.sinks._prometheus",
    "metrics_for": "kafka_coop.sinks._prometheus",
    "serve_metrics": "kafka_coop.sinks._prometheus",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "CallableSink",
    "EventSink",
    "JsonlSink",
    "KafkaTopicSink",
    "MemorySink",
    "PrometheusSink",
    "RebalanceMetrics",
    "as_sink",
    "is_fatal",
    "metrics_for",
    "serve_metrics",
]

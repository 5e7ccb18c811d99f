"""kafka-coop: safe, visible, measured consumer-group rebalancing for confluent-kafka fleets.

The public names below are resolved on first use (PEP 562), so `import kafka_coop` and the pure modules
(events, settings, planner, analytics) never load confluent_kafka: only touching a consumer or a Kafka
sink does. The guide to the consumers is docs/consumer.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_coop._lazy import lazy_attributes

__version__ = "0.1.0"

# name -> module that defines it, grouped: consumers and their listener, settings and events, sinks, errors.
_LAZY: dict[str, str] = {
    "CoopConsumer": "kafka_coop.consumer",
    "CoopAIOConsumer": "kafka_coop.consumer",
    "RebalanceListener": "kafka_coop.consumer",
    "ConsumerSettings": "kafka_coop.settings",
    "RebalanceEvent": "kafka_coop.events",
    "EventSink": "kafka_coop.sinks",
    "MemorySink": "kafka_coop.sinks",
    "CallableSink": "kafka_coop.sinks",
    "JsonlSink": "kafka_coop.sinks",
    "KafkaTopicSink": "kafka_coop.sinks",
    "KafkaCoopError": "kafka_coop.errors",
    "GateFailed": "kafka_coop.errors",
    "InvalidInput": "kafka_coop.errors",
    "SettingsError": "kafka_coop.errors",
    "ClusterUnavailable": "kafka_coop.errors",
    "ConsumerFailed": "kafka_coop.errors",
    "InstanceIdConflict": "kafka_coop.errors",
}

__all__ = [
    "CallableSink",
    "ClusterUnavailable",
    "ConsumerFailed",
    "ConsumerSettings",
    "CoopAIOConsumer",
    "CoopConsumer",
    "EventSink",
    "GateFailed",
    "InstanceIdConflict",
    "InvalidInput",
    "JsonlSink",
    "KafkaCoopError",
    "KafkaTopicSink",
    "MemorySink",
    "RebalanceEvent",
    "RebalanceListener",
    "SettingsError",
    "__version__",
]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time `__getattr__` imports on demand
    from kafka_coop.consumer import CoopAIOConsumer, CoopConsumer, RebalanceListener
    from kafka_coop.errors import (
        ClusterUnavailable,
        ConsumerFailed,
        GateFailed,
        InstanceIdConflict,
        InvalidInput,
        KafkaCoopError,
        SettingsError,
    )
    from kafka_coop.events import RebalanceEvent
    from kafka_coop.settings import ConsumerSettings
    from kafka_coop.sinks import CallableSink, EventSink, JsonlSink, KafkaTopicSink, MemorySink


__getattr__ = lazy_attributes(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

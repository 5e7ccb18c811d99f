"""The Kafka topic sink: events produced asynchronously, keyed by group and member."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kafka_coop.events import RebalanceEvent

log = logging.getLogger("kafka_coop.sinks")

KAFKA_SINK_FLUSH_S = 5.0


class KafkaTopicSink:
    """Produces events asynchronously to a topic keyed by group/member; `emit` never waits on the broker."""

    def __init__(self, topic: str, producer_conf: Mapping[str, Any]) -> None:
        from confluent_kafka import Producer  # shell dependency, kept out of the import path of the core

        conf = {"linger.ms": 5, "queue.buffering.max.ms": 5, **producer_conf}
        self.topic = topic
        self._producer = Producer(conf)
        self._warned = False

    def _on_delivery(self, err: Any, _msg: Any) -> None:
        if err is not None and not self._warned:
            self._warned = True
            log.warning("Rebalance events could not be written to topic %s: %s", self.topic, err)

    def emit(self, event: RebalanceEvent) -> None:
        key = f"{event.group}/{event.instance_id or event.member_id}"
        try:
            self._producer.produce(
                self.topic, event.model_dump_json().encode(), key.encode(), on_delivery=self._on_delivery
            )
        except BufferError:
            self._on_delivery("local queue full", None)
        self._producer.poll(0)

    def close(self) -> None:
        self._producer.flush(KAFKA_SINK_FLUSH_S)

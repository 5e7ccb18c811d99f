"""Where rebalance events go: a JSON-lines file, a Kafka topic, a callable, or memory.

A sink is called from inside librdkafka's rebalance callback, so it must be quick and must not raise:
the consumer wraps every `emit` and turns a failure into a logged warning.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

from kafka_coop.events import RebalanceEvent

log = logging.getLogger("kafka_coop.sinks")

KAFKA_SINK_FLUSH_S = 5.0


@runtime_checkable
class EventSink(Protocol):
    def emit(self, event: RebalanceEvent) -> None: ...

    def close(self) -> None: ...


class MemorySink:
    """Keeps events in a list; for tests and for in-process analysis."""

    def __init__(self) -> None:
        self.events: list[RebalanceEvent] = []
        self._lock = threading.Lock()

    def emit(self, event: RebalanceEvent) -> None:
        with self._lock:
            self.events.append(event)

    def close(self) -> None:
        return None


class CallableSink:
    def __init__(self, fn: Callable[[RebalanceEvent], Any]) -> None:
        self.fn = fn

    def emit(self, event: RebalanceEvent) -> None:
        self.fn(event)

    def close(self) -> None:
        return None


class JsonlSink:
    """Appends one JSON object per line and flushes per event, so a SIGKILL loses at most a torn line."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] | None = self.path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def emit(self, event: RebalanceEvent) -> None:
        line = event.model_dump_json() + "\n"
        with self._lock:
            if self._fh is None:
                return
            self._fh.write(line)
            self._fh.flush()

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


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


def as_sink(target: EventSink | Callable[[RebalanceEvent], Any] | Path | str | None) -> EventSink | None:
    """Accept a sink, a callable, or a path (a JSON-lines file)."""
    if target is None or isinstance(target, EventSink):
        return target
    if isinstance(target, (str, Path)):
        return JsonlSink(target)
    if callable(target):
        return CallableSink(target)
    raise TypeError(f"events= takes a sink, a callable or a path, not {type(target).__name__}")

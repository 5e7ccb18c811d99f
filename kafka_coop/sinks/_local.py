"""The sink contract, and the sinks that stay in the process: memory, a callable, a JSON-lines file."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

from kafka_coop.events import RebalanceEvent


@runtime_checkable
class EventSink(Protocol):
    """Called from inside librdkafka's rebalance callback, so `emit` must be quick and must not raise
    (the consumer turns a failure into a logged warning)."""

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


def as_sink(target: EventSink | Callable[[RebalanceEvent], Any] | Path | str | None) -> EventSink | None:
    """Accept a sink, a callable, or a path (a JSON-lines file)."""
    if target is None or isinstance(target, EventSink):
        return target
    if isinstance(target, (str, Path)):
        return JsonlSink(target)
    if callable(target):
        return CallableSink(target)
    raise TypeError(f"events= takes a sink, a callable or a path, not {type(target).__name__}")

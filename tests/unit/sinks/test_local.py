"""Event sinks keep every event, in order, in the documented JSON-lines form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_coop.events import EventStamp, RebalanceEvent
from kafka_coop.sinks import CallableSink, JsonlSink, MemorySink, as_sink


def _events(n: int) -> list[RebalanceEvent]:
    stamp = EventStamp("g", "c", "pod-0", "cooperative")
    return [
        stamp.make("assigned", member_id="m", partitions=[("t", i)], owned=(("t", i),), callback_ms=0.5)
        for i in range(n)
    ]


def test_jsonl_sink_appends_one_flushed_line_per_event(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    sink = JsonlSink(path)
    first, second = _events(2)
    sink.emit(first)
    assert json.loads(path.read_text())["seq"] == 0, "visible before close: flushed per event"
    sink.emit(second)
    sink.close()
    assert [RebalanceEvent.model_validate_json(line) for line in path.read_text().splitlines()] == [
        first,
        second,
    ]


def test_jsonl_sink_appends_to_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    for event in _events(2):
        sink = JsonlSink(path)
        sink.emit(event)
        sink.close()
    assert len(path.read_text().splitlines()) == 2


def test_memory_and_callable_sinks_see_the_same_events() -> None:
    memory, seen = MemorySink(), []
    callable_sink = CallableSink(seen.append)
    for event in _events(3):
        memory.emit(event)
        callable_sink.emit(event)
    assert memory.events == seen


def test_as_sink_accepts_paths_callables_and_sinks(tmp_path: Path) -> None:
    assert isinstance(as_sink(tmp_path / "x.jsonl"), JsonlSink)
    assert isinstance(as_sink(print), CallableSink)
    memory = MemorySink()
    assert as_sink(memory) is memory
    with pytest.raises(TypeError, match="events= takes"):
        as_sink(42)  # type: ignore[arg-type]

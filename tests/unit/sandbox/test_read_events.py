"""The test bed's event reader is as strict as the report's: only a torn last line may be skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_coop.events import RebalanceEvent
from kafka_coop.sandbox.testing import MemberProcessError, read_events

EVENT = RebalanceEvent(
    ts_ms=1,
    seq=0,
    group="g",
    member_id="m",
    instance_id=None,
    client_id="c",
    protocol="cooperative",
    kind="assigned",
    partitions=(("t", 0),),
    owned=(("t", 0),),
    callback_ms=0.5,
).model_dump_json()


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.events.jsonl"
    path.write_text(text)
    return path


def test_complete_events_are_read_and_a_torn_last_line_from_a_kill_is_skipped(tmp_path: Path) -> None:
    path = _write(tmp_path, f"{EVENT}\n{EVENT}\n{EVENT[:25]}")
    assert [e["kind"] for e in read_events(path)] == ["assigned", "assigned"]


def test_an_unparsable_line_before_the_last_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, f"{EVENT}\nnot json\n{EVENT}\n")
    with pytest.raises(MemberProcessError, match=r"m\.events\.jsonl line 2"):
        read_events(path)


def test_a_line_that_is_json_but_not_an_event_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, f'{EVENT}\n{{"kind": "assigned"}}\n')
    with pytest.raises(MemberProcessError, match="line 2"):
        read_events(path)


def test_a_missing_file_has_no_events(tmp_path: Path) -> None:
    assert read_events(tmp_path / "none.jsonl") == []

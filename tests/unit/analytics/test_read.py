"""Reading event lines and phase files: every refused line is reported with its file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_coop.analytics import PhaseWindow, load_phases, read_event_lines
from kafka_coop.errors import InvalidInput
from tests.unit.analytics.test_engine import EAGER, ev


def line(event: dict[str, object]) -> str:
    return json.dumps(event) + "\n"


BAD_LINES = {
    "invalid JSON": '{"v": 1, "ts_ms": 12,\n',
    "missing field": json.dumps({k: v for k, v in ev("a", 9, 9, "started").items() if k != "ts_ms"}) + "\n",
    "wrong type": line({**ev("a", 9, 9, "started"), "ts_ms": "9"}),
    "unknown kind": line({**ev("a", 9, 9, "started"), "kind": "exploded"}),
    "unknown field": line({**ev("a", 9, 9, "started"), "colour": "red"}),
    "not an object": "[1, 2, 3]\n",
    "bad partition": line({**ev("a", 9, 9, "assigned"), "partitions": [["t", "zero"]]}),
}


def test_malformed_lines_are_counted_with_file_and_line_and_good_lines_still_count(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    good, bad = [line(e) for e in EAGER], list(BAD_LINES.values())
    # good, bad, good, bad, ... (6 good, 7 bad), then blank lines: not events, not errors
    lines = [x for pair in zip(good, bad[: len(good)], strict=True) for x in pair] + bad[len(good) :]
    path.write_text("".join(lines) + "\n   \n")
    events, malformed = read_event_lines([path])
    assert len(events) == len(EAGER)
    assert [(m.path, m.line) for m in malformed] == [(str(path), n) for n in (2, 4, 6, 8, 10, 12, 13)]
    reasons = dict(zip(BAD_LINES, (m.reason for m in malformed), strict=True))
    assert reasons["invalid JSON"] == "invalid JSON"
    assert reasons["missing field"].startswith("ts_ms:")
    assert reasons["wrong type"].startswith("ts_ms:")
    assert reasons["unknown kind"].startswith("kind:")
    assert reasons["unknown field"].startswith("colour:")
    assert reasons["bad partition"].startswith("partitions.0.1:")


def test_a_torn_last_line_is_reported_not_dropped(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    path.write_text(line(EAGER[0]) + line(EAGER[1])[:40])
    events, [torn] = read_event_lines([path])
    assert len(events) == 1
    assert (torn.path, torn.line, torn.reason) == (str(path), 2, "invalid JSON")


def test_directories_and_globs_are_expanded_in_order_and_hidden_files_skipped(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "2.jsonl").write_text(line(EAGER[1]))
    (tmp_path / "d" / "1.jsonl").write_text(line(EAGER[0]))
    (tmp_path / "d" / ".partial.tmp").write_text("garbage\n")
    (tmp_path / "x.jsonl").write_text(line(EAGER[2]))
    events, malformed = read_event_lines([tmp_path / "d", str(tmp_path / "x*.jsonl")])
    assert [e["seq"] for e in events] == [0, 1, 0]
    assert malformed == []


@pytest.mark.parametrize("source", ["missing.jsonl", "nothing-*.jsonl"])
def test_a_missing_source_is_invalid_input_naming_it(tmp_path: Path, source: str) -> None:
    with pytest.raises(InvalidInput, match=source.replace("*", r"\*")):
        read_event_lines([tmp_path / source])


def test_phases_file_as_list_or_object(tmp_path: Path) -> None:
    phases = [{"name": "one", "start_ms": 0, "end_ms": 10}, {"name": "two", "start_ms": 10, "end_ms": 20}]
    (tmp_path / "list.json").write_text(json.dumps(phases))
    (tmp_path / "obj.json").write_text(json.dumps({"phases": phases}))
    expected = [
        PhaseWindow(name="one", start_ms=0, end_ms=10),
        PhaseWindow(name="two", start_ms=10, end_ms=20),
    ]
    assert load_phases(tmp_path / "list.json") == expected
    assert load_phases(tmp_path / "obj.json") == expected


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not valid JSON"),
        ('{"stages": []}', "must hold a list of phases"),
        ('[{"name": "a", "start_ms": "0", "end_ms": 5}]', "phase 0 field 'start_ms'"),
        ('[{"name": "a", "start_ms": 0}]', "phase 0 field 'end_ms'"),
        ('[{"name": "a", "start_ms": 9, "end_ms": 5}]', "end_ms .5. is before start_ms"),
        (
            '[{"name": "a", "start_ms": 0, "end_ms": 5}, {"name": "a", "start_ms": 5, "end_ms": 9}]',
            "used twice",
        ),
    ],
)
def test_bad_phases_file_names_the_file_and_the_field(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "phases.json"
    path.write_text(content)
    with pytest.raises(InvalidInput, match=message) as caught:
        load_phases(path)
    assert str(path) in caught.value.message


def test_missing_phases_file_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="does not exist"):
        load_phases(tmp_path / "nope.json")


def test_a_line_of_a_newer_event_version_is_refused_as_that_version_whatever_else_it_holds(
    tmp_path: Path,
) -> None:
    """The report applies the pipeline's `v` rule: a fleet upgraded ahead of its reader shows up as
    one reason, not as the schema errors of whatever the newer version changed."""
    path = tmp_path / "a.jsonl"
    newer = {**ev("a", 9, 9, "assigned"), "v": 2, "kind": "resized", "extra": [1]}
    older = {**ev("a", 9, 9, "assigned"), "v": 0}
    path.write_text(line(newer) + line(older) + line(EAGER[0]))
    events, malformed = read_event_lines([path])
    assert (len(events), [m.reason for m in malformed]) == (
        1,
        ["unsupported version 2", "v: Input should be 1"],
    )

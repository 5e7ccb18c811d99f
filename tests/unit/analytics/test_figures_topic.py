"""The compacted topic's records: one key per group and per partition, the latest figures as value."""

from __future__ import annotations

import json

from kafka_coop.analytics._figures_topic import CurrentFigures


def window(group: str, start: int, end: int, events: int) -> dict[str, object]:
    return {"kind": "window", "group": group, "ts": start, "window_end": end, "events": events}


def partition(group: str, number: int, version: int, owner: str | None) -> dict[str, object]:
    return {
        "kind": "partition",
        "group": group,
        "topic": "t",
        "partition": number,
        "version": version,
        "ts": version,
        "owner": owner,
        "since": None if owner else 5,
    }


def test_each_key_holds_the_latest_window_of_its_group_and_the_latest_state_of_its_partition() -> None:
    current = CurrentFigures()
    current.take([window("g", 0, 60, 3), partition("g", 0, 2, "a"), window("h", 0, 60, 1)])
    current.take([window("g", 60, 120, 5), partition("g", 0, 1, "stale"), partition("g", 1, 3, None)])
    records = {tuple(json.loads(k)): json.loads(v) for k, v in current.records().items()}
    assert set(records) == {("g",), ("h",), ("g", "t", 0), ("g", "t", 1)}
    assert (records[("g",)]["window_start"], records[("g",)]["events"]) == (60, 5)
    assert records[("g", "t", 0)]["owner"] == "a"
    assert (records[("g", "t", 1)]["owner"], records[("g", "t", 1)]["unowned_since"]) == (None, 5)

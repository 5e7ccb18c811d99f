"""Pure parts of fast inspection: reading manifests to the end, the lag window option, the member
table, and the snapshot's JSON form with binary userData."""

from __future__ import annotations

import json

import click
import pytest
from rich.text import Text

from kafka_coop.cli.describe import aligned_table
from kafka_coop.cli.verify import LagWindow
from kafka_coop.inspection import GroupSnapshot, MemberSnapshot, ReadToEnd
from kafka_coop.protocol import ConsumerProtocolSubscription
from tests.unit.builders import group_snapshot, member_snapshot


def test_read_to_end_stops_at_the_high_watermark_of_every_partition() -> None:
    progress = ReadToEnd({0: (0, 3), 1: (5, 7)})
    assert progress.remaining == {0, 1} and not progress.done
    progress.record(0, 1)
    progress.record(1, 6)  # offset 6 is high-1: partition 1 is read
    assert progress.remaining == {0}
    progress.record(0, 2)
    assert progress.done


def test_read_to_end_skips_empty_partitions_and_takes_end_of_partition_as_done() -> None:
    progress = ReadToEnd({0: (4, 4), 1: (0, 10), 2: (0, 0)})
    assert progress.remaining == {1}
    progress.record(1, 7)  # compaction may have removed offsets 8 and 9
    assert not progress.done
    progress.end_of_partition(1)
    assert progress.done


def test_read_to_end_ignores_unknown_partitions_and_missing_offsets() -> None:
    progress = ReadToEnd({0: (0, 2)})
    progress.record(3, 100)
    progress.record(None, 1)
    progress.record(0, None)
    progress.end_of_partition(None)
    assert progress.remaining == {0}
    progress.record(0, 5)  # past the watermark seen at the start (a newer record): done too
    assert progress.done
    assert ReadToEnd({}).done


@pytest.mark.parametrize(
    ("given", "expected"),
    [("auto", None), ("AUTO", None), ("0", 0.0), ("2.5", 2.5), (1.0, 1.0), (None, None)],
)
def test_lag_window_takes_auto_or_seconds(given: object, expected: float | None) -> None:
    assert LagWindow().convert(given, None, None) == expected


@pytest.mark.parametrize("given", ["-1", "soon", ""])
def test_lag_window_refuses_anything_else(given: str) -> None:
    with pytest.raises(click.BadParameter):
        LagWindow().convert(given, None, None)


def test_aligned_table_pads_columns_to_their_widest_cell_and_keeps_styles() -> None:
    rows = [[Text("a"), Text("long-value", style="bold")], [Text("bbbb"), Text("x")]]
    table = aligned_table(("k", "value"), rows)
    lines = table.plain.splitlines()
    assert lines == [
        "k     value",
        "────  ──────────",
        "a     long-value",
        "bbbb  x",
    ]
    assert any(span.style == "bold" for span in table.spans)


def _member_with_user_data(user_data: bytes | None) -> MemberSnapshot:
    return member_snapshot(
        family="java",
        protocol="cooperative",
        assignors=("cooperative-sticky",),
        assignment=(("t", 0),),
        subscription=ConsumerProtocolSubscription(
            version=3, topics=("t",), user_data=user_data, owned_partitions=(("t", 0),), generation_id=7
        ),
    )


@pytest.mark.parametrize("user_data", [b"\x00\x00\x00\x07", b"\xff\xfe", b"", None])
def test_member_json_carries_binary_user_data_as_base64_and_reads_back(user_data: bytes | None) -> None:
    member = _member_with_user_data(user_data)
    text = member.model_dump_json()
    data = json.loads(text)
    if user_data:
        assert isinstance(data["subscription"]["user_data"], str)
    assert MemberSnapshot.model_validate(data) == member
    assert MemberSnapshot.model_validate_json(text) == member
    assert member.model_dump()["subscription"]["user_data"] == user_data  # python mode keeps bytes


def test_snapshot_json_keeps_its_published_names_and_reads_back() -> None:
    """describe's JSON (schema v1) says group_id, type and assignor; the model says group, group_type and
    selected_assignor, and reads its own JSON back."""
    snap = group_snapshot(_member_with_user_data(None), group="orders", selected_assignor="range")
    data = json.loads(snap.model_dump_json(by_alias=True))
    assert (data["group_id"], data["type"], data["assignor"]) == ("orders", "classic", "range")
    assert GroupSnapshot.model_validate(data) == snap

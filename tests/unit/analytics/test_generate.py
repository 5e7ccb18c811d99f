"""The synthetic stream generator: valid, reproducible, and it exercises every case the report counts."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

from kafka_coop.analytics import generate_events, read_event_lines, summarize, unavailability, write_jsonl
from kafka_coop.analytics._intervals import member_name
from kafka_coop.analytics._read import validate_line


def test_every_generated_event_is_a_valid_rebalance_event_and_the_count_is_exact() -> None:
    events = list(generate_events(3000, members=9, partitions=6, seed=3))
    assert len(events) == 3000
    assert all(not isinstance(validate_line(json.dumps(e)), str) for e in events)


def test_same_seed_same_stream_other_seed_other_stream() -> None:
    assert list(generate_events(500, seed=1)) == list(generate_events(500, seed=1))
    assert list(generate_events(500, seed=1)) != list(generate_events(500, seed=2))


def test_streams_hold_every_kind_protocol_and_killed_members() -> None:
    events = list(generate_events(5000, members=12, partitions=8, seed=5))
    assert set(Counter(e["kind"] for e in events)) == {"assigned", "revoked", "lost", "started", "closed"}
    assert {e["protocol"] for e in events} == {"eager", "cooperative", "consumer"}
    causes = Counter(i.cause for i in unavailability(events))
    assert causes["vanished"] > 0 and causes["lost"] > 0 and causes["revoked"] > 0


def test_eager_revokes_everything_and_cooperative_members_keep_partitions() -> None:
    events = list(generate_events(5000, members=12, partitions=8, seed=6))
    eager_revokes = [e for e in events if e["protocol"] == "eager" and e["kind"] == "revoked"]
    coop_revokes = [e for e in events if e["protocol"] == "cooperative" and e["kind"] == "revoked"]
    assert all(e["owned"] == [] for e in eager_revokes)
    assert any(e["owned"] for e in coop_revokes), "some cooperative member keeps partitions while revoking"


def test_lines_interleave_members_out_of_time_order_but_each_member_is_in_order() -> None:
    events = list(generate_events(3000, seed=7))
    assert any(a["ts_ms"] > b["ts_ms"] for a, b in itertools.pairwise(events))
    last: dict[str, tuple[int, int]] = {}
    for e in events:
        name = member_name(e)
        if e["kind"] != "started":  # a restarted process begins at seq 0 again
            assert (e["ts_ms"], e["seq"]) >= last.get(name, (0, -1))
        last[name] = (e["ts_ms"], e["seq"])


def test_sharded_files_are_one_stream_whose_figures_are_the_shard_times_the_file_count(
    tmp_path: Path,
) -> None:
    paths = write_jsonl(tmp_path, 4000, files=4, seed=9, members=6, partitions=4)
    assert [p.name for p in paths] == [f"events-{i:05d}.jsonl" for i in range(4)]
    events, malformed = read_event_lines([tmp_path])
    assert (len(events), malformed) == (4000, [])
    whole = summarize(events)
    shard = summarize(read_event_lines([paths[0]])[0])
    assert whole.partition_unavailable_ms_total == 4 * shard.partition_unavailable_ms_total
    assert whole.pause_ms_total == 4 * shard.pause_ms_total
    assert len(whole.members) == 4 * len(shard.members)


def test_an_uneven_count_cuts_the_last_file_short(tmp_path: Path) -> None:
    paths = write_jsonl(tmp_path, 1001, files=3, seed=1)
    assert [len(p.read_text().splitlines()) for p in paths] == [334, 334, 333]

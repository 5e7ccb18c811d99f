"""The whole-array core each Spark task runs (`_columnar`) against the reference loop, without Spark.

The two are written independently; here they must agree exactly on the hand-written streams, on
generated fleets and on arbitrary valid streams (hypothesis: random kinds, duplicate partitions in one
delta, equal timestamps, groups sharing topics, members sharing names, closes without revokes), and
records from disjoint sets of groups must merge into the summary of the whole (what the Spark driver
does with its tasks' records).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_coop.analytics import PhaseWindow, Summary, generate_events, pauses, summarize, unavailability
from kafka_coop.analytics._columnar import (
    KINDS,
    PROTOCOLS,
    analyse,
    merge_deltas,
    pack_deltas,
    span_deltas,
    summary_of,
    table_from_events,
    unpack_deltas,
)
from kafka_coop.analytics._timeline import deltas
from tests.unit.analytics.test_engine import STREAMS

PHASES = [
    PhaseWindow(name="early", start_ms=0, end_ms=12),
    PhaseWindow(name="late", start_ms=7, end_ms=1200),
]


def columnar(events: list[dict[str, Any]], phases: list[PhaseWindow] | None = None) -> Summary:
    return summary_of(analyse(table_from_events(events), phases or []).records, phases)


@pytest.mark.parametrize("name", sorted(STREAMS))
@pytest.mark.parametrize("phases", [None, PHASES], ids=["whole", "phases"])
def test_hand_written_streams_give_the_reference_summary(name: str, phases: list[PhaseWindow] | None) -> None:
    assert columnar(STREAMS[name], phases) == summarize(STREAMS[name], phases)


@pytest.mark.parametrize("seed", range(6))
def test_generated_fleets_give_the_reference_summary(seed: int) -> None:
    events = list(generate_events(2500, members=7, partitions=5, seed=seed))
    assert columnar(events) == summarize(events)


def test_the_tables_hold_the_reference_intervals_and_pauses() -> None:
    events = list(generate_events(1500, members=6, partitions=4, seed=3))
    analysis = analyse(table_from_events(events))
    got = sorted(
        (
            r["group"],
            r["topic"],
            r["partition"],
            r["start_ms"],
            r["end_ms"],
            r["from_member"],
            r["to_member"],
            r["cause"],
        )
        for r in analysis.intervals.to_pylist()
    )
    want = sorted(
        (i.group, i.topic, i.partition, i.start_ms, i.end_ms, i.from_member, i.to_member, i.cause)
        for i in unavailability(events)
    )
    assert got == want
    got_pauses = sorted(tuple(r.values()) for r in analysis.pauses.to_pylist())
    assert got_pauses == sorted((p.group, p.member, p.start_ms, p.end_ms, p.cause) for p in pauses(events))


def test_records_of_disjoint_groups_merge_into_the_summary_of_all() -> None:
    events = [
        *generate_events(800, members=5, partitions=4, seed=1, prefix="x-"),
        *generate_events(800, members=5, partitions=4, seed=2, prefix="y-"),
    ]
    halves = [[e for e in events if e["group"].startswith(p)] for p in ("x-", "y-")]
    records = [r for half in halves for r in analyse(table_from_events(half), PHASES).records]
    assert summary_of(reversed(records), PHASES) == summarize(events, PHASES)


def test_no_events_give_no_records_and_an_empty_summary() -> None:
    analysis = analyse(table_from_events([]))
    assert (analysis.records, analysis.intervals.num_rows, analysis.pauses.num_rows) == ([], 0, 0)
    assert summary_of([], None, malformed=3) == summarize([]).model_copy(update={"malformed": 3})


@st.composite
def streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Any valid events over tiny alphabets, so that ties and collisions are common."""
    groups = draw(st.lists(st.sampled_from(["g", "h"]), min_size=1, max_size=2, unique=True))
    names = ["a", "b", "c"]
    pair = st.tuples(st.sampled_from(["t", "u"]), st.integers(0, 2)).map(list)
    out = []
    for _ in range(draw(st.integers(0, 60))):
        name = draw(st.sampled_from(names))
        incarnation = draw(st.integers(0, 1))
        out.append(
            {
                "v": 1,
                "ts_ms": draw(st.integers(0, 25)),
                "seq": draw(st.integers(0, 6)),
                "group": draw(st.sampled_from(groups)),
                "member_id": f"{name}-{incarnation}",
                "instance_id": name if draw(st.booleans()) else None,
                "client_id": draw(st.sampled_from([name, ""])),
                "protocol": draw(st.sampled_from(PROTOCOLS)),
                "kind": draw(st.sampled_from(KINDS)),
                "partitions": draw(st.lists(pair, max_size=3)),
                "owned": draw(st.lists(pair, max_size=2)),
                "callback_ms": draw(st.sampled_from([0.0, 0.0005, 1.25, 7.0])),
                "committed": None,
                "error": None,
            }
        )
    return out


@settings(max_examples=200, deadline=None)
@given(events=streams(), phased=st.booleans())
def test_any_valid_stream_gives_the_reference_summary(events: list[dict[str, Any]], phased: bool) -> None:
    phases = PHASES if phased else None
    assert columnar(events, phases) == summarize(events, phases)


spans_strategy = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 60)),
    max_size=40,
)


@given(parts=st.lists(spans_strategy, max_size=5))
@settings(max_examples=200, deadline=None)
def test_span_deltas_of_parts_merge_into_the_reference_deltas_of_all_spans(
    parts: list[list[tuple[int, int]]],
) -> None:
    """Each Spark task reduces its own spans; the driver's sum is `_timeline.deltas` of them all."""
    reduced = [
        span_deltas(np.array([s for s, _ in p], np.int64), np.array([e for _, e in p], np.int64))
        for p in parts
    ]
    packed = [unpack_deltas(pack_deltas(ts, d)) for ts, d in reduced]
    ts, d = merge_deltas(packed)
    assert list(zip(ts.tolist(), d.tolist(), strict=True)) == deltas(span for p in parts for span in p)

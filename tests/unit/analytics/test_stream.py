"""The live pipeline's per-group step (`_stream`) and its read-back (`_figures`), without Spark.

The pipeline must give the batch report's figures: the hand-written streams with known answers and
generated fleets, fed in one batch or event by event out of order, through the state's dump and load
between batches (what a checkpoint does), read back into a Summary, equal `summarize`. Then the
untidy parts: duplicates, late and future events, refused records, and what windows and state rows say.
"""

from __future__ import annotations

import datetime
import json
import pickle
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from kafka_coop.analytics import PhaseWindow, generate_events, pauses, summarize, unavailability
from kafka_coop.analytics._figures import Range, latest_state, marker_phases, outcome_from_rows, rows_table
from kafka_coop.analytics._markers import PhaseMarker
from kafka_coop.analytics._stream import GroupStream, StreamConfig, percentile
from tests.unit.analytics.jvm_replay import StepReplay
from tests.unit.analytics.stream_feed import Feed, JvmStep, Rows, Step, columns, concat, raw_rows
from tests.unit.analytics.test_engine import COOPERATIVE, EAGER, KILLED, LOST, STREAMS, ev, prefixed

ALL = [e for name, events in STREAMS.items() for e in prefixed(events, f"{name}/")]
LAST = max(int(e["ts_ms"]) for e in ALL)


NewFeed = Callable[..., Feed]


@pytest.fixture(params=["python", pytest.param("jvm", marks=pytest.mark.spark)])
def new_feed(request: pytest.FixtureRequest) -> NewFeed:
    """Feeds of the Python step (the reference) or of the JVM's: each test below specifies both."""
    if request.param == "python":
        return Feed
    replay: StepReplay = request.getfixturevalue("step_replay")
    return lambda config=None: Feed(config, step=JvmStep(replay))


def summary_of(feed: Feed, **kwargs: Any) -> Any:
    return outcome_from_rows(rows_table(feed.rows), **kwargs).summary


def test_known_answer_streams_in_one_batch_give_the_reference_summary(new_feed: NewFeed) -> None:
    feed = new_feed()
    feed.events(LAST + 10_000, ALL)
    feed.flush(LAST)
    assert summary_of(feed) == summarize(ALL)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_events_arriving_one_by_one_out_of_order_within_the_watermark_give_the_reference_summary(
    seed: int, new_feed: NewFeed
) -> None:
    """Each event arrives in a batch of its own, up to 400 ms after its time and in any order across
    members; the 2 s watermark holds them until their order is final."""
    rng = random.Random(seed)
    arrivals = sorted(((int(e["ts_ms"]) + rng.randrange(0, 400), n, e) for n, e in enumerate(ALL)))
    feed = new_feed(StreamConfig(watermark_ms=2_000, window_ms=1_000))
    for at, n, event in arrivals:
        feed.events(at, [event], offset=n)
    feed.flush(LAST)
    assert summary_of(feed) == summarize(ALL)
    assert not feed.dead()


@pytest.mark.parametrize("seed", [4, 5])
def test_generated_fleets_streamed_through_checkpointed_state_give_the_reference_summary_and_spans(
    seed: int, new_feed: NewFeed
) -> None:
    events = list(generate_events(3000, members=7, partitions=5, seed=seed))
    start = int(events[0]["ts_ms"])
    feed = new_feed(StreamConfig(watermark_ms=5_000, window_ms=60_000))
    batch: list[dict[str, Any]] = []
    clock = start
    for event in sorted(events, key=lambda e: int(e["ts_ms"])):
        while int(event["ts_ms"]) >= clock:
            feed.events(clock, batch)
            batch, clock = [], clock + 5_000
        batch.append(event)
    feed.events(clock, batch)
    feed.flush(max(int(e["ts_ms"]) for e in events))

    assert summary_of(feed) == summarize(events)
    got = sorted(
        (r["group"], r["topic"], r["partition"], r["start_ms"], r["end_ms"], r["from_member"], r["to_member"])
        for r in feed.rows
        if r["kind"] == "interval"
    )
    assert got == sorted(
        (i.group, i.topic, i.partition, i.start_ms, i.end_ms, i.from_member, i.to_member)
        for i in unavailability(events)
    )
    got_pauses = sorted(
        (r["group"], r["member"], r["start_ms"], r["end_ms"], r["cause"])
        for r in feed.rows
        if r["kind"] == "pause"
    )
    assert got_pauses == sorted((p.group, p.member, p.start_ms, p.end_ms, p.cause) for p in pauses(events))


def test_a_back_fill_spread_over_several_micro_batches_loses_nothing(new_feed: NewFeed) -> None:
    """A day-old fleet's events read now, a slice per 5 s batch (what maxOffsetsPerTrigger does to a
    backlog): the watermark runs on the events' time, so none is late and the figures are the report's."""
    events = sorted(generate_events(2000, members=5, partitions=6, seed=9), key=lambda e: int(e["ts_ms"]))
    now = int(events[-1]["ts_ms"]) + 86_400_000
    feed = new_feed(StreamConfig(watermark_ms=2_000, window_ms=60_000))
    for n, start in enumerate(range(0, len(events), 250)):
        feed.events(now + 5_000 * n, events[start : start + 250], offset=start)
    feed.flush(now + 60_000)
    assert not feed.dead()
    assert summary_of(feed) == summarize(events)


def test_a_back_fill_read_from_several_partitions_loses_nothing(new_feed: NewFeed) -> None:
    """Members' events sit in different Kafka partitions (the sink keys by member), one with twice the
    other's events; each bounded batch reads the same share of each partition's backlog (as Spark's
    maxOffsetsPerTrigger does), so within a batch one partition ends ahead of the other in event time.
    The group's clock is its slowest active partition's: the other's older events are not late."""
    events = sorted(generate_events(3000, members=6, partitions=6, seed=12), key=lambda e: int(e["ts_ms"]))
    members = sorted({str(e["client_id"]) for e in events})
    by_partition: dict[int, list[dict[str, Any]]] = {0: [], 1: []}
    for event in events:
        by_partition[int(members.index(str(event["client_id"])) % 3 == 0)].append(event)
    now = int(events[-1]["ts_ms"]) + 86_400_000
    feed = new_feed(StreamConfig(watermark_ms=2_000, window_ms=60_000))
    slices = 7
    for n in range(slices):
        shares = {
            p: part[n * len(part) // slices : (n + 1) * len(part) // slices]
            for p, part in by_partition.items()
        }
        feed.partitions(now + 5_000 * n, shares, offset=n * 1_000)
    feed.flush(now + 40_000)
    assert not feed.dead()
    assert summary_of(feed) == summarize(events)


@pytest.mark.parametrize("stream", [EAGER, COOPERATIVE, LOST])
def test_windows_are_the_reference_phases_of_the_same_bounds(
    stream: list[dict[str, Any]], new_feed: NewFeed
) -> None:
    feed = new_feed(StreamConfig(watermark_ms=100, window_ms=500))
    feed.events(100_000, stream)
    feed.flush(100_000)
    windows = sorted((r for r in feed.rows if r["kind"] == "window"), key=lambda r: r["ts"])
    phases = [PhaseWindow(name=str(r["ts"]), start_ms=r["ts"], end_ms=r["window_end"]) for r in windows]
    expected = summarize(stream, phases).phases
    assert [
        (r["events"], r["rebalances"], r["revoked_partitions"], r["pause_ms"], r["unavailable_ms"])
        for r in windows
    ] == [
        (p.events, p.rebalances, p.revoked_partitions, p.pause_ms, p.partition_unavailable_ms)
        for p in expected
    ]
    assert sum(r["pause_ms"] for r in windows) == summarize(stream).pause_ms_total


def test_an_open_windows_figures_are_written_with_the_batch_that_brings_its_events(new_feed: NewFeed) -> None:
    """A live view without waiting for the watermark: `window_open` rows count every event taken, as
    of the group's latest event, newer versions superseding older, and the final `window` row agrees."""
    feed = new_feed(StreamConfig(watermark_ms=5_000, window_ms=10_000))
    first = feed.events(1_200, EAGER[:4])
    assert not [r for r in first if r["kind"] == "window"], "nothing is final yet"
    [early] = [r for r in first if r["kind"] == "window_open"]
    assert (early["ts"], early["window_end"], early["events"], early["last_ts"]) == (0, 10_000, 4, 1_100)
    assert (early["members_paused"], early["pause_ms"]) == (2, 100 + 100), "a until 100, b since 1,000"
    second = feed.events(1_500, EAGER[4:], offset=4)
    [late] = [r for r in second if r["kind"] == "window_open"]
    assert late["version"] > early["version"] and (late["events"], late["last_ts"]) == (6, 1_450)
    feed.flush(1_500)
    [final] = [r for r in feed.rows if r["kind"] == "window"]
    figures = ("events", "rebalances", "revoked_partitions", "members_paused", "pause_ms", "unavailable_ms")
    assert [final[f] for f in figures] == [late[f] for f in figures]


def test_a_vanished_owner_counts_in_intervals_but_not_in_windows_closed_before_it_was_known(
    new_feed: NewFeed,
) -> None:
    """pod-a is SIGKILLed after 50 ms; its partitions move at 10,050. Windows emitted before then could
    not know; the intervals (and the report) count the gap from pod-a's last event."""
    feed = new_feed(StreamConfig(watermark_ms=100, window_ms=1_000, idle_ms=200))
    feed.live(KILLED[:3])
    feed.batch(10_200)  # idle since 5,060: the group's clock runs on to 10,040, past 10,000
    feed.events(10_300, KILLED[3:], offset=3)
    feed.flush(20_000)
    assert not feed.dead()
    windows = {r["ts"]: r for r in feed.rows if r["kind"] == "window"}
    assert [r["unavailable_ms"] for r in windows.values() if r["window_end"] <= 10_000] == [0, 0, 0]
    assert (windows[6_000]["window_end"], windows[6_000]["members_paused"]) == (10_000, 1), (
        "b waits for partitions from 5,000: one row for the quiet stretch"
    )
    assert windows[10_000]["unavailable_ms"] == 2 * 50, "the part inside the window still open"
    assert summary_of(feed) == summarize(KILLED), "the report counts all 20,000 ms"


def test_an_open_pause_and_an_unowned_partition_show_in_the_window_before_they_end(new_feed: NewFeed) -> None:
    """a's eager revoke at 1,100 pauses it and releases t-0..t-3; the window [1,000, 1,200) closes
    before the assignments at 1,400: it counts both up to its end."""
    feed = new_feed(StreamConfig(watermark_ms=50, window_ms=200))
    for event in EAGER:
        feed.events(int(event["ts_ms"]) + 60, [event])
    assert not feed.dead()
    window = next(r for r in feed.rows if r["kind"] == "window" and r["ts"] == 1_000)
    assert (window["members_paused"], window["pause_ms"]) == (2, 100 + 200), "b since 1,000, a since 1,100"
    assert (window["unavailable_ms"], window["unowned"]) == (4 * 100, 4)
    assert (window["pause_ms_p50"], window["pause_ms_max"]) == (100, 200)


class StepsWithoutRows:
    """A feed's step, counting the steps a group took with no rows (woken by its timeout)."""

    def __init__(self, step: Step) -> None:
        self.step, self.count = step, 0

    def advance(
        self, group: str | None, state: bytes | None, rows: Rows, now: int, config: StreamConfig
    ) -> tuple[Any, bytes | None, int | None]:
        self.count += not rows["ts"]
        return self.step.advance(group, state, rows, now, config)

    def wakeup(self, state: bytes, config: StreamConfig, after: int) -> int | None:
        return self.step.wakeup(state, config, after)


def test_an_idle_group_with_an_open_pause_wakes_once_per_window_not_on_every_trigger(
    new_feed: NewFeed,
) -> None:
    """a's revoke at 1,100 leaves it paused and t-0..t-3 unowned, then nothing arrives. The group needs a
    step when its source falls quiet and when each window can close: a handful over 4 s of 1,000 ms
    windows, not one on each of the 400 triggers (each a state load and write for nothing)."""
    feed = new_feed(StreamConfig(watermark_ms=100, window_ms=1_000, idle_ms=200))
    feed.events(1_160, EAGER[:4])
    feed.step = woken = StepsWithoutRows(feed.step)
    for now in range(1_170, 5_170, 10):
        feed.batch(now)
    assert max(r["ts"] for r in feed.rows if r["kind"] == "window") == 4_000, "windows closed while idle"
    assert woken.count <= 8, f"woken {woken.count} times in 400 triggers"


def test_the_state_of_a_partition_says_owner_unowned_since_and_last_hand_over(new_feed: NewFeed) -> None:
    feed = new_feed(StreamConfig(watermark_ms=50, window_ms=1_000, idle_ms=100))
    feed.live(EAGER[:4])  # up to a's revoke at 1,100
    feed.batch(1_300)  # idle since 1,160: the clock runs on to 1,190, a watermark past the revoke
    released = {r["partition"]: r for r in latest_state(rows_table(feed.rows), "partition")}
    assert released[2]["owner"] is None and (released[2]["since"], released[2]["from_member"]) == (1_100, "a")
    feed.live(EAGER[4:])
    feed.batch(1_700)  # idle: the assignments are final
    state = {r["partition"]: r for r in latest_state(rows_table(feed.rows), "partition")}
    assert (state[2]["owner"], state[2]["since"]) == ("b", None)
    assert (state[2]["handover_ms"], state[2]["handover_from"], state[2]["handover_to"]) == (1_450, "a", "b")
    members = {r["member"]: r["since"] for r in latest_state(rows_table(feed.rows), "member")}
    assert members == {"a": None, "b": None}


def test_a_duplicate_within_the_watermark_is_dropped_to_the_dead_letters(new_feed: NewFeed) -> None:
    """The same event again (a producer retry, a log shipped twice), in the same batch and in a later
    one: counted once."""
    feed = new_feed(StreamConfig(watermark_ms=1_000, window_ms=1_000))
    feed.events(1_200, EAGER[:3] + EAGER[1:2])
    feed.events(1_900, EAGER[3:] + EAGER[2:3])
    feed.flush(2_000)
    dead = [r for r in feed.rows if r["kind"] == "deadletter"]
    assert [(r["reason"], r["member"], r["seq"]) for r in dead] == [
        ("duplicate", "a", 1),
        ("duplicate", "b", 0),
    ]
    assert summary_of(feed) == summarize(EAGER)


def test_a_restarted_member_starting_its_seq_again_is_not_a_duplicate(new_feed: NewFeed) -> None:
    stream = [
        ev("a", 0, 0, "started"),
        ev("a", 1, 100, "assigned", (0,), (0,)),
        ev("a", 0, 5_000, "started"),  # a new process: seq from 0, a new time
        ev("a", 1, 5_200, "assigned", (0,), (0,)),
    ]
    feed = new_feed(StreamConfig(watermark_ms=100, window_ms=1_000))
    for event in stream:
        feed.events(int(event["ts_ms"]) + 50, [event])
    feed.flush(6_000)
    assert not feed.dead()
    assert summary_of(feed) == summarize(stream)


def test_a_late_event_goes_to_the_dead_letters_and_changes_no_figure(new_feed: NewFeed) -> None:
    feed = new_feed(StreamConfig(watermark_ms=100, window_ms=1_000))
    feed.events(2_000, EAGER)
    late = ev("c", 0, 1_200, "started")  # the group's clock is at 1,450: a watermark past it
    feed.events(3_000, [late], offset=50)
    feed.flush(3_000)
    [dead] = [r for r in feed.rows if r["kind"] == "deadletter"]
    assert (dead["reason"], dead["member"], dead["event_ts"], dead["source"], dead["offset"]) == (
        "late",
        "c",
        1_200,
        "kafka://events/0",
        50,
    )
    assert summary_of(feed) == summarize(EAGER)


def test_an_event_stamped_far_ahead_of_the_clock_is_refused_not_held_forever() -> None:
    """Python only: it looks into the state (the differential test below sends the JVM such events)."""
    feed = Feed(StreamConfig(watermark_ms=100, window_ms=1_000, max_future_ms=60_000))
    feed.events(1_000, [ev("a", 0, 900, "started"), ev("a", 1, 10**9, "assigned", (0,), (0,))])
    [dead] = [r for r in feed.rows if r["kind"] == "deadletter"]
    assert dead["reason"] == "future"
    assert not GroupStream.load(feed.state["g"], feed.config).pending[1:], "nothing waits for year 1970+11d"


def test_events_and_markers_stamped_before_1970_are_refused_and_the_rest_counted(new_feed: NewFeed) -> None:
    """A clock reset or a hand-made event can say ts_ms -2**63+5, which the schema allows (Int64): its
    window would start before the earliest 64-bit time (the JVM's step looped on such windows until its
    heap ran out). Such events and markers are dead letters `before 1970`; the stream around them is
    counted as without them."""
    feed = new_feed(StreamConfig(watermark_ms=100, window_ms=1_000, idle_ms=200))
    early = -(2**63) + 5
    feed.batch(1_000, {"g": raw_rows([marker(early, 0)], marker=True)})
    feed.events(1_010, [ev("z", 0, early, "assigned", (0,), (0,)), ev("z", 1, -1, "revoked", (0,), ())])
    for event in EAGER:
        feed.events(int(event["ts_ms"]) + 2_000, [event])
    feed.flush(LAST + 2_000)
    assert [r["reason"] for r in feed.dead()] == ["before 1970"] * 3
    assert summary_of(feed) == summarize(EAGER)


def test_refused_records_go_to_the_dead_letters_with_place_reason_and_bytes(new_feed: NewFeed) -> None:
    feed = new_feed()
    rows = raw_rows([b'{"v": 1, "ts_ms": "soon"}', b"{not json"], marker=False, reason="invalid JSON", kts=7)
    feed.batch(10_000, {None: rows})
    dead = [r for r in feed.rows if r["kind"] == "deadletter"]
    assert [(r["source"], r["offset"], r["reason"], r["raw"]) for r in dead] == [
        ("kafka://events/0", 0, "invalid JSON", b'{"v": 1, "ts_ms": "soon"}'),
        ("kafka://events/0", 1, "invalid JSON", b"{not json"),
    ]
    outcome = outcome_from_rows(rows_table(feed.rows))
    assert outcome.summary.malformed == 2
    assert [(m.path, m.line) for m in outcome.malformed] == [("kafka://events/0", 0), ("kafka://events/0", 1)]
    assert None not in feed.state, "the refused records' lane keeps no state"


def marker(ts: int, passed: int, phases: int = 2, group: str = "g") -> bytes:
    found = PhaseMarker(ts_ms=ts, group=group, migration="eager-to-cooperative", phase=passed, phases=phases)
    return found.model_dump_json().encode()


def test_phase_markers_label_windows_and_give_the_reference_phases(new_feed: NewFeed) -> None:
    """Gates pass at 1,000 (phase 0: phase 1 begins) and 1,300 (phase 1 done: phase 2 begins); the
    report's phases from the markers are the batch report's phases of the same bounds."""
    feed = new_feed(StreamConfig(watermark_ms=50, window_ms=100))
    markers = raw_rows([marker(1_000, 0), marker(1_300, 1)], marker=True)
    feed.batch(2_000, {"g": concat(columns(EAGER), markers)})
    feed.flush(2_000)
    table = rows_table(feed.rows)
    windows = {r["ts"]: r["phase"] for r in feed.rows if r["kind"] == "window"}
    assert (windows[100], windows[1_100], windows[1_400]) == (
        None,
        "eager-to-cooperative 1/2",
        "eager-to-cooperative 2/2",
    )
    labelled = marker_phases(table, end_ms=1_451)
    assert [(w.name, w.start_ms, w.end_ms) for w, _ in labelled] == [
        ("g: eager-to-cooperative 1/2", 1_000, 1_300),
        ("g: eager-to-cooperative 2/2", 1_300, 1_451),
    ]
    got = outcome_from_rows(table, labelled=labelled).summary.phases
    assert got == summarize(EAGER, [w for w, _ in labelled]).phases


def test_a_malformed_marker_is_a_dead_letter_with_its_reason(new_feed: NewFeed) -> None:
    feed = new_feed()
    feed.batch(10_000, {"g": raw_rows([b'{"v": 1, "group": "g"}'], marker=True)})
    [dead] = [r for r in feed.rows if r["kind"] == "deadletter"]
    assert dead["reason"].startswith("marker ts_ms:")


def test_a_range_clips_spans_to_the_millisecond_and_counts_windows_where_their_first_callback_falls(
    new_feed: NewFeed,
) -> None:
    feed = new_feed(StreamConfig(watermark_ms=50, window_ms=1_000))
    feed.events(10_000, EAGER)
    feed.flush(10_000)
    summary = outcome_from_rows(rows_table(feed.rows), span=Range(1_200, 2_000)).summary
    # t-0/t-1 unowned 1,100-1,400 and t-2/t-3 1,100-1,450, from 1,200: 2*200 + 2*250
    assert summary.partition_unavailable_ms_total == 900
    assert summary.pause_ms_total == 200 + 250, "a 1,100-1,400 and b 1,000-1,450 from 1,200"
    assert summary.events == 0, "a's callbacks in [1,000, 2,000) begin at 1,100, b's at 1,000"
    later = outcome_from_rows(rows_table(feed.rows), span=Range(1_000, 2_000)).summary
    assert later.events == 4


def test_state_from_a_checkpoint_may_name_no_class() -> None:
    with pytest.raises(pickle.UnpicklingError):
        GroupStream.load(pickle.dumps((1, datetime.date(2026, 11, 25))), StreamConfig())


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [([], 0.5, 0), ([7], 0.95, 7), ([1, 2, 3, 4], 0.5, 2), (list(range(1, 21)), 0.95, 19)],
)
def test_percentiles_are_nearest_rank(values: list[int], q: float, expected: int) -> None:
    assert percentile(values, q) == expected


# --- the JVM step against the Python step ----------------------------------------------------------------
Record = tuple[int, str | None, Rows]  # arrival (batch clock), lane (group), its one input row


def untidy_records(seed: int) -> list[Record]:
    """A generated fleet as the shell would hand it over, untidily: members' events in three partitions
    (the sink keys by member), arriving up to 1.5 s after their time and so out of order across members;
    some late, some twice (a producer retry, soon or too late), a few stamped hours ahead; idle gaps
    between stretches of activity; phase markers, valid, late and malformed; records the decoder refused,
    with and without a group."""
    rng = random.Random(seed)
    events = sorted(
        generate_events(
            rng.randrange(1_500, 2_500),
            members=rng.randrange(3, 9),
            partitions=rng.randrange(2, 7),
            seed=seed,
            prefix=f"s{seed}-",
        ),
        key=lambda e: int(e["ts_ms"]),
    )
    # the fleet's quiet spells shortened to at most 2 s, then a few long gaps: time order is kept
    clock, last, gaps = int(events[0]["ts_ms"]), int(events[0]["ts_ms"]), 0
    for event in events:
        step = min(int(event["ts_ms"]) - last, 2_000)
        if rng.random() < 0.003:
            step, gaps = step + rng.randrange(20_000, 120_000), gaps + 1
        last, clock = int(event["ts_ms"]), clock + step
        event["ts_ms"] = clock
    members = sorted({str(e["client_id"]) for e in events})
    groups = sorted({str(e["group"]) for e in events})
    # (arrival, lane, partition of the events topic or None for the markers topic, row maker)
    out: list[tuple[int, str | None, int | None, Callable[[int, int], Rows]]] = []

    def event_row(event: dict[str, Any]) -> Callable[[int, int], Rows]:
        return lambda offset, partition: columns([event], first_offset=offset, partition=partition)

    def raw_row(raw: bytes, at: int, reason: str | None = None) -> Callable[[int, int], Rows]:
        marker = reason is None
        return lambda offset, partition: raw_rows(
            [raw], marker=marker, reason=reason, kts=at, partition=partition, first_offset=offset
        )

    for event in events:
        ts, group = int(event["ts_ms"]), str(event["group"])
        part = members.index(str(event["client_id"])) % 3
        late = rng.random() < 0.02
        at = ts + (rng.randrange(3_000, 30_000) if late else rng.randrange(0, 1_500))
        out.append((at, group, part, event_row(event)))
        if rng.random() < 0.03:
            out.append((ts + rng.randrange(0, 6_000), group, part, event_row(event)))
        if rng.random() < 0.003:
            ahead = {**event, "ts_ms": ts + rng.choice([7_200_000, 10**10]), "seq": 10**6}
            out.append((at, group, part, event_row(ahead)))
    start, end = int(events[0]["ts_ms"]), int(events[-1]["ts_ms"])
    for group in groups:
        times = sorted(rng.randrange(start, end) for _ in range(rng.randrange(1, 4)))
        for passed, ts in enumerate(times):
            found = PhaseMarker(
                ts_ms=ts, group=group, migration="eager-to-cooperative", phase=passed, phases=3
            )
            at = ts + (rng.randrange(5_000, 20_000) if rng.random() < 0.2 else rng.randrange(0, 1_500))
            out.append((at, group, None, raw_row(found.model_dump_json().encode(), at)))
        at = rng.randrange(start, end)
        incomplete = json.dumps({"v": 1, "group": group, "ts_ms": at}).encode()
        out.append((at, group, None, raw_row(incomplete, at)))
        refused = b'{"v": 1, "group": "%s", "seq": -1}' % group.encode()
        out.append((at, group, rng.randrange(3), raw_row(refused, at, "seq: below 0")))
    for _ in range(5):
        at = rng.randrange(start, end)
        out.append((at, None, None, raw_row(b"{not json", at)))
        out.append((at, None, rng.randrange(3), raw_row(b"{oops", at, "invalid JSON")))
        out.append((at, None, rng.randrange(3), raw_row(b'{"v": 7, "ts_ms": 1}', at, "ts_ms: missing")))
    out.sort(key=lambda r: r[0])
    offsets: dict[int | None, int] = {}
    records: list[Record] = []
    for at, lane, partition, make in out:
        offset = offsets[partition] = offsets.get(partition, -1) + 1
        records.append((at, lane, make(offset, partition or 0)))
    assert gaps, "some idle gaps"
    return records


def differences(python: list[dict[str, Any]], jvm: list[dict[str, Any]]) -> str:
    """What one side wrote and the other did not; rows of the same kind, group and ts paired field by
    field."""
    extra_py = Counter(map(repr_row, python)) - Counter(map(repr_row, jvm))
    extra_jvm = Counter(map(repr_row, jvm)) - Counter(map(repr_row, python))
    py_rows = [r for r in python if extra_py[repr_row(r)]]
    jvm_rows = [r for r in jvm if extra_jvm[repr_row(r)]]
    lines = []
    for row in py_rows:
        place = (row["kind"], row["group"], row["ts"])
        twin = next((j for j in jvm_rows if (j["kind"], j["group"], j["ts"]) == place), None)
        if twin is None:
            lines.append(f"only python: {row}")
            continue
        jvm_rows.remove(twin)
        fields = {f: (row.get(f), twin.get(f)) for f in sorted(row | twin) if row.get(f) != twin.get(f)}
        lines.append(f"{row['kind']} {row['group']} ts={row['ts']}: field: (python, jvm) {fields}")
    lines.extend(f"only jvm: {row}" for row in jvm_rows)
    return "\n".join(lines[:20])


@pytest.mark.spark
@pytest.mark.parametrize("seed", range(10))
def test_jvm_step_equals_python_step_on_generated_untidy_streams(seed: int, step_replay: StepReplay) -> None:
    """The JVM's step is the Python step rule for rule: fed the same untidy stream in the same random
    micro-batches (empty ones too, so idle clocks and wakeups run), every batch writes the same rows
    (versions included) and leaves every group the same wakeup, which its saved state gives again."""
    rng = random.Random(1_000 + seed)
    config = StreamConfig(watermark_ms=2_000, window_ms=rng.choice([5_000, 10_000, 60_000]), idle_ms=5_000)
    python, jvm = Feed(config), Feed(config, step=JvmStep(step_replay))

    def batch(clock: int, rows: dict[str | None, Rows] | None = None) -> None:
        want, got = python.batch(clock, rows), jvm.batch(clock, rows)
        assert sorted(map(repr_row, got)) == sorted(map(repr_row, want)), (
            f"batch at {clock}:\n{differences(want, got)}"
        )
        assert jvm.wakeups == python.wakeups, f"wakeups after the batch at {clock}"

    records = untidy_records(seed)
    clock, n = records[0][0], 0
    while n < len(records):
        lanes: dict[str | None, list[Rows]] = {}
        while n < len(records) and records[n][0] <= clock:
            lanes.setdefault(records[n][1], []).append(records[n][2])
            n += 1
        batch(clock, {lane: concat(*rows) for lane, rows in lanes.items()})
        clock += rng.randrange(200, 2_500) if rng.random() < 0.8 else rng.randrange(2_500, 15_000)
    for _ in range(3):
        clock += config.idle_ms + config.window_ms
        batch(clock)
    assert set(jvm.state) == set(python.state)
    assert (
        {g: jvm.wakeup(g) for g in jvm.state} == {g: python.wakeup(g) for g in python.state} == jvm.wakeups
    ), "the saved states' wakeups: the ones their steps reported"
    kinds = Counter(r["kind"] for r in python.rows)
    reasons = Counter(r["reason"] for r in python.dead())
    assert kinds["window"] and kinds["phase"] and kinds["interval"], kinds
    assert reasons["late"] and reasons["duplicate"] and reasons["future"], reasons


def repr_row(row: dict[str, Any]) -> str:
    return repr(sorted(row.items()))

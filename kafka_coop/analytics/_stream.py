"""The live pipeline's step for one consumer group, pure: the rows of one micro-batch in, output rows out.

Spark calls `GroupStream.advance` once per group and micro-batch (`_pipeline`), with the group's state
in between; everything the figures depend on is here, so it is tested without Spark. The rules, which
docs/pipeline.md documents for users:

* **Watermark, on event time.** A group's clock is the latest `ts_ms` each source partition has
  brought it, at the slowest partition still active (see `_clock`); its frontier is the clock less
  `watermark_ms`. An event is applied once the frontier passes it; until then it waits, so events of
  one group that arrive out of order are applied in the report's order (`ts_ms`, member, `seq`,
  `member_id`) by the report's own state machine (`_ledger.Ledger`). An event older than the frontier
  when it arrives is **late**: it goes to the dead letters, never into a figure. A back-fill of old
  events read over many micro-batches is therefore applied in full: the clock is the events' time,
  not the job's. One stamped more than `max_future_ms` ahead of the batch's time is refused (a wrong
  clock would otherwise hold it forever). An idle group's clock runs on at the batch clock's pace (the
  batch times are in Spark's offset log, so a replay sees the same).
* **Duplicates**: the same event twice (member, `member_id`, `seq`, `ts_ms`), e.g. a producer retry
  or a log shipped again, is dropped while its key is remembered: until the frontier is a watermark
  past it. A restarted member starting its `seq` at 0 again is not a duplicate: its events have new
  times (and member ids). Later copies are late.
* **Windows** of `window_ms` (event time) are emitted once the frontier passes their end, with the
  state as it was at the end: callbacks counted where their `ts_ms` falls, pauses and unavailable
  partitions clipped to the window, the ones still open counted up to its end (a live view: a member
  paused now shows). A stretch of windows in which nothing happened but something stayed open is one
  row spanning them; windows with nothing at all are not written. An owner that vanished (SIGKILL) is
  known only when its partitions move: that interval is in `interval` rows and the report, but not in
  windows emitted before it was known.
* **State rows**: each batch writes the state of every partition and member it touched, as of the
  frontier (owner, unowned since, last hand-over; paused since), numbered so readers take the latest.
* **Phases**: a phase marker (`_markers`) is applied in event order like an event; callbacks are
  counted per phase, windows carry the phase running at their end.
"""

from __future__ import annotations

import io
import pickle
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kafka_coop.analytics._ledger import IntervalTuple, Ledger, PauseTuple
from kafka_coop.analytics._markers import parse_marker, phase_label
from kafka_coop.analytics._versions import refusal
from kafka_coop.events import PartitionKey

STATE_FORMAT: Final = 2  # bump when the pickled state changes shape (the checkpoint records it)

# Codes, as the decoder (java/EventDecoder.java) and `_columnar.KINDS` / `PROTOCOLS` number them.
KIND_NAMES: Final = ("assigned", "revoked", "lost", "started", "closed", "warning", "reconfigured")
PROTOCOL_NAMES: Final = ("eager", "cooperative", "consumer")
ASSIGNED, REVOKED, LOST = 0, 1, 2

# What advance() reads from each input row (the Spark shell builds these columns).
INPUT_FIELDS: Final = (
    ("marker", "boolean"),  # a record of the markers topic (its `raw` is the marker JSON)
    ("reason", "string"),  # the decoder's refusal; None for an event
    ("member", "string"),
    ("member_id", "string"),
    ("ts", "long"),
    ("seq", "long"),
    ("kind", "byte"),
    ("protocol", "byte"),
    ("topic", "string"),
    ("topics", "string"),  # every pair's topic joined by TOPICS_SEP when the delta names several
    ("parts", "binary"),
    ("n_owned", "int"),
    ("cb_us", "long"),
    ("partition", "int"),  # the record's place: partition and offset in its topic
    ("offset", "long"),
    ("kts", "long"),  # the record's Kafka timestamp (ms)
    ("raw", "binary"),  # the record's value: refused records and markers only
)

# Every output row has every column (one Parquet table); `kind` says which ones mean something.
OUTPUT_FIELDS: Final = (
    ("kind", "string"),  # window | window_open | callbacks | interval | pause | partition | member | phase
    # | deadletter
    ("group", "string"),
    ("date", "string"),  # UTC date of `ts` (the Spark shell adds it; a partition column)
    ("ts", "long"),  # window start | span end | state as of | marker time | record timestamp
    ("version", "long"),  # partition/member state: per group, increasing; the latest row wins
    ("window_end", "long"),
    ("phase", "string"),
    ("member", "string"),
    ("protocol", "string"),
    ("events", "long"),
    ("rebalances", "long"),
    ("revoked", "long"),
    ("lost", "long"),
    ("revoked_partitions", "long"),
    ("lost_partitions", "long"),
    ("callback_us_total", "long"),
    ("callback_us_max", "long"),
    ("first_ts", "long"),
    ("last_ts", "long"),
    ("members_paused", "long"),
    ("pause_ms", "long"),
    ("pause_ms_p50", "long"),
    ("pause_ms_p95", "long"),
    ("pause_ms_max", "long"),
    ("unavailable_ms", "long"),
    ("unowned", "long"),
    ("topic", "string"),
    ("partition", "long"),
    ("start_ms", "long"),
    ("end_ms", "long"),
    ("from_member", "string"),
    ("to_member", "string"),
    ("cause", "string"),
    ("owner", "string"),
    ("since", "long"),
    ("handover_ms", "long"),
    ("handover_from", "string"),
    ("handover_to", "string"),
    ("migration", "string"),
    ("phase_n", "long"),
    ("phases", "long"),
    ("source", "string"),
    ("offset", "long"),
    ("reason", "string"),
    ("raw", "binary"),
    ("seq", "long"),
    ("event_ts", "long"),
)
OUTPUT_COLUMNS: Final = tuple(name for name, _ in OUTPUT_FIELDS)

WINDOW_FIELDS: Final = (
    "ts",
    "window_end",
    "phase",
    "events",
    "rebalances",
    "revoked_partitions",
    "lost",
    "lost_partitions",
    "members_paused",
    "pause_ms",
    "pause_ms_p50",
    "pause_ms_p95",
    "pause_ms_max",
    "unavailable_ms",
    "unowned",
)
# The columns each kind of row fills, in the order its tuples hold them (`kind` and `group` are added).
KIND_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "window": WINDOW_FIELDS,
    "callbacks": (
        "ts",
        "window_end",
        "phase",
        "member",
        "protocol",
        "events",
        "rebalances",
        "revoked",
        "lost",
        "revoked_partitions",
        "lost_partitions",
        "callback_us_total",
        "callback_us_max",
        "first_ts",
        "last_ts",
    ),
    # the ledger's own tuples, whose first value is the group
    "interval": ("group", "topic", "partition", "start_ms", "end_ms", "from_member", "to_member", "cause"),
    "pause": ("group", "member", "start_ms", "end_ms", "cause"),
    "partition": (
        "ts",
        "version",
        "topic",
        "partition",
        "owner",
        "since",
        "from_member",
        "cause",
        "handover_ms",
        "handover_from",
        "handover_to",
    ),
    "member": ("ts", "version", "member", "since", "cause"),
    # a window not final yet, as of its group's latest event (`last_ts`): superseded by higher versions,
    # then by the window's own `window` row
    "window_open": (*WINDOW_FIELDS, "version", "last_ts"),
    "phase": ("ts", "phase", "migration", "phase_n", "phases"),
    "deadletter": ("ts", "source", "offset", "reason", "raw", "member", "seq", "event_ts"),
}
# interval and pause rows are dated by their end: `ts` is a copy of `end_ms`
TS_FROM_END: Final = frozenset({"interval", "pause"})

TOPICS_SEP: Final = "\x00"  # cannot occur in a topic name
LATE: Final = "late"
DUPLICATE: Final = "duplicate"
FUTURE: Final = "future"
# before the epoch: a clock reset or a hand-made time; near the earliest 64-bit time its window's start
# would not fit in one (Parquet's, the JVM's)
BEFORE_1970: Final = "before 1970"
MAX_RAW_KEPT: Final = 64 * 1024  # a refused record's bytes kept in the dead letters, at most

# A pending event: the order key (ts, 1, member, seq, member_id), then kind, protocol, delta, owns, cb_us.
# A pending marker: (ts, 0, "", 0, "", migration, passed, phases): before events of the same ts.
Pending = tuple[Any, ...]


@dataclass(frozen=True)
class StreamConfig:
    watermark_ms: int = 2_000
    window_ms: int = 60_000
    max_future_ms: int = 3_600_000
    idle_ms: int = 10_000  # a group with no rows for this long (processing time) is idle: see `advance`
    live: bool = True  # write `window_open` rows: the open window's figures every batch
    topic: str = "events"  # the events topic and the markers topic: where dead letters say they were
    markers_topic: str = "_kafka_coop_rollout"


def percentile(sorted_values: Sequence[int], q: float) -> int:
    """Nearest rank: the smallest value with at least q of the values at or below it (0 if none)."""
    if not sorted_values:
        return 0
    rank = max(1, -(-int(q * 100) * len(sorted_values) // 100))
    return int(sorted_values[min(rank, len(sorted_values)) - 1])


def unpack_parts(packed: bytes) -> list[int]:
    values = array("q")
    values.frombytes(packed)  # little-endian int64s (every platform Spark runs on is little-endian)
    return values.tolist()


class Output:
    """One step's rows, kept per kind as tuples in `KIND_FIELDS` order (cheap to make, turned into
    columns once per step by `columns`)."""

    __slots__ = ("by_kind", "group")

    def __init__(self, group: str | None) -> None:
        self.group = group
        self.by_kind: dict[str, list[tuple[Any, ...]]] = {kind: [] for kind in KIND_FIELDS}

    def __len__(self) -> int:
        return sum(len(rows) for rows in self.by_kind.values())

    def dicts(self) -> list[dict[str, Any]]:
        """Every row as a dict of its kind's columns, with `kind`, `group` and `ts`."""
        out: list[dict[str, Any]] = []
        for kind, rows in self.by_kind.items():
            fields = KIND_FIELDS[kind]
            for row in rows:
                item = {"kind": kind, "group": self.group, **dict(zip(fields, row, strict=True))}
                if kind in TS_FROM_END:
                    item["ts"] = item["end_ms"]
                out.append(item)
        return out

    def columns(self) -> dict[str, list[Any]]:
        """Every OUTPUT column except `date`, as lists of equal length (None where a kind has none)."""
        total = len(self)
        out: dict[str, list[Any]] = {name: [] for name in OUTPUT_COLUMNS if name != "date"}
        for kind, rows in self.by_kind.items():
            if not rows:
                continue
            n = len(rows)
            fields = KIND_FIELDS[kind]
            values = dict(zip(fields, zip(*rows, strict=True), strict=True))
            if kind in TS_FROM_END:
                values["ts"] = values["end_ms"]
            for name, column in out.items():
                given = values.get(name)
                if given is not None:
                    column.extend(given)
                elif name == "kind":
                    column.extend([kind] * n)
                elif name == "group":
                    column.extend([self.group] * n)
                else:
                    column.extend([None] * n)
        assert all(len(c) == total for c in out.values())
        return out


class _Window:
    """Figures of one window not yet emitted."""

    __slots__ = ("callbacks", "paused", "unavailable_ms")

    def __init__(self) -> None:
        self.paused: dict[str, int] = {}  # member -> closed pause ms inside the window
        self.unavailable_ms = 0  # closed intervals inside the window
        # (phase, member, protocol code) -> [events, rebalances, revoked, lost, revoked_p, lost_p, cb_sum,
        #                                     cb_max, first_ts, last_ts]
        self.callbacks: dict[tuple[str | None, str, int], list[int]] = {}


class GroupStream:
    """One group's live state; `advance` per micro-batch, `dump`/`load` between them."""

    def __init__(self, group: str | None, config: StreamConfig) -> None:
        self.group = group
        self.config = config
        self.frontier: int | None = None  # every event before it is applied; later ones wait
        self.max_ts: int | None = None  # the group's event-time clock: its latest event (or marker) taken
        self.arrived_ms: int | None = None  # the batch time that last brought it an event
        # per source partition (events topic: its number; markers topic: -1 - its number): the latest
        # event time it brought this group, and the batch time it did
        self.sources: dict[int, list[int]] = {}
        self.ledger = Ledger()
        self.pending: list[Pending] = []
        self.seen: dict[tuple[str, str, int, int], None] = {}  # dedup keys
        self.windows: dict[int, _Window] = {}
        self.next_window: int | None = None  # start of the first window not emitted yet
        self.handover: dict[PartitionKey, tuple[int, str, str]] = {}  # last interval: end, from, to
        self.phase: str | None = None
        self.version = 0
        self._out = Output(group)
        self._dirty_parts: set[PartitionKey] = set()
        self._dirty_members: set[str] = set()

    # --- persistence ----------------------------------------------------------------------------
    def dump(self) -> bytes:
        """The state as bytes of builtins only (see `load`)."""
        windows = {start: (w.paused, w.unavailable_ms, w.callbacks) for start, w in self.windows.items()}
        ledger = self.ledger
        state = (
            STATE_FORMAT,
            self.group,
            self.frontier,
            ledger.owner,
            ledger.released,
            ledger.last_seen,
            ledger.paused,
            self.pending,
            list(self.seen),
            windows,
            self.next_window,
            self.handover,
            self.phase,
            self.version,
            self.max_ts,
            self.arrived_ms,
            self.sources,
        )
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def load(cls, blob: bytes, config: StreamConfig) -> GroupStream:
        state = _BuiltinsOnly(io.BytesIO(blob)).load()
        if state[0] != STATE_FORMAT:
            raise ValueError(f"group state format {state[0]} is not {STATE_FORMAT}")
        (
            _,
            group,
            frontier,
            owner,
            released,
            last_seen,
            paused,
            pending,
            seen,
            windows,
            next_window,
            handover,
            phase,
            version,
            max_ts,
            arrived_ms,
            sources,
        ) = state
        stream = cls(group, config)
        stream.frontier = frontier
        stream.ledger.owner, stream.ledger.released = owner, released
        stream.ledger.last_seen, stream.ledger.paused = last_seen, paused
        stream.pending, stream.seen = pending, dict.fromkeys(seen)
        for start, (paused_ms, unavailable, callbacks) in windows.items():
            window = stream.windows[start] = _Window()
            window.paused, window.unavailable_ms, window.callbacks = paused_ms, unavailable, callbacks
        stream.next_window, stream.handover = next_window, handover
        stream.phase, stream.version = phase, version
        stream.max_ts, stream.arrived_ms, stream.sources = max_ts, arrived_ms, sources
        return stream

    # --- the step -------------------------------------------------------------------------------
    def advance(self, rows: Mapping[str, Sequence[Any]], batch_time_ms: int) -> Output:
        """Take this batch's rows (columns of INPUT_FIELDS), apply what the clock made final, and
        return the rows to write."""
        self._out = out = Output(self.group)
        clock_before = self.max_ts
        self._take(rows, batch_time_ms)
        changed = self.max_ts != clock_before
        frontier = self._clock(batch_time_ms)
        if frontier is not None and (self.frontier is None or frontier > self.frontier):
            changed = True
            self._apply_until(frontier)
            self.frontier = frontier
            horizon = frontier - self.config.watermark_ms
            if self.seen:
                self.seen = {key: None for key in self.seen if key[3] >= horizon}
        if self.frontier is not None:
            self._close_windows(self.frontier)
        self._emit_state()
        if changed and self.config.live:
            self._emit_open()
        return out

    def _clock(self, batch_time_ms: int) -> int | None:
        """The frontier this batch reaches, on event time: the group's clock less the watermark.

        The clock is the slowest of the source partitions that brought the group an event within
        `idle_ms` (batch time) of their latest event time: a back-fill read from several partitions at
        different paces makes nothing late that the slowest one has not passed (Kafka orders records
        within a partition only). With no partition active the group is idle: its clock runs on from
        its latest event at the batch clock's pace, so its last events are applied and its windows
        close without a later event. An idle clock only adds the seconds the job waited, never a
        back-fill's hours."""
        if self.max_ts is None or self.arrived_ms is None:
            return None
        idle_ms = self.config.idle_ms
        active = [latest for latest, at in self.sources.values() if batch_time_ms - at < idle_ms]
        clock = min(active) if active else self.max_ts + batch_time_ms - self.arrived_ms
        return clock - self.config.watermark_ms

    def next_wakeup_ms(self, after: int) -> int | None:
        """The batch time at which the group needs a step without new rows (a source partition falls
        idle, or the idle clock makes its first pending event final, or its next window closable),
        for a group last stepped at `after`: a partition that fell idle by then needs no step for it.
        None: only new rows matter."""
        if self.pending:
            due = int(min(p[0] for p in self.pending)) + 1
        elif self.next_window is not None and (self.windows or self.ledger.paused or self.ledger.released):
            due = self.next_window + self.config.window_ms
        else:
            return None
        if self.max_ts is None or self.arrived_ms is None:
            return None
        idle_ms = self.config.idle_ms
        stepped = max(self.arrived_ms, after)  # a partition quiet by then needs no step
        quiet = [at + idle_ms for _, at in self.sources.values() if at + idle_ms > stepped]
        waited = max(idle_ms, due + self.config.watermark_ms - self.max_ts)
        return min([*quiet, self.arrived_ms + waited])

    # --- taking rows ------------------------------------------------------------------------------
    def _take(self, rows: Mapping[str, Sequence[Any]], now: int) -> None:
        n = len(rows["ts"])
        if not n:
            return
        marker, reason = rows["marker"], rows["reason"]
        member, member_id, ts, seq = rows["member"], rows["member_id"], rows["ts"], rows["seq"]
        kind, protocol, topic, topics = rows["kind"], rows["protocol"], rows["topic"], rows["topics"]
        parts, n_owned, cb_us = rows["parts"], rows["n_owned"], rows["cb_us"]
        frontier = self.frontier
        future = now + self.config.max_future_ms
        seen, pending = self.seen, self.pending
        for i in range(n):
            if marker[i]:
                self._take_marker(rows, i, now)
                continue
            if reason[i] is not None:
                self._dead(rows, i, refusal(str(reason[i]), rows["raw"][i]), raw=True)
                continue
            t = int(ts[i])
            key = (member[i], member_id[i], int(seq[i]), t)
            if key in seen:
                self._dead(rows, i, DUPLICATE)
                continue
            if frontier is not None and t < frontier:
                self._dead(rows, i, LATE)
                continue
            if t > future:
                self._dead(rows, i, FUTURE)
                continue
            if t < 0:
                self._dead(rows, i, BEFORE_1970)
                continue
            seen[key] = None
            self._arrived(int(rows["partition"][i]), t, now)
            numbers = unpack_parts(parts[i])
            listed = topics[i]
            if listed:
                delta = tuple(zip(listed.split(TOPICS_SEP), numbers, strict=True))
            else:
                first = topic[i]
                delta = tuple([(first, p) for p in numbers])
            owns = n_owned[i] > 0
            pending.append(
                (t, 1, key[0], key[2], key[1], int(kind[i]), int(protocol[i]), delta, owns, int(cb_us[i]))
            )

    def _arrived(self, source: int, ts: int, now: int) -> None:
        if self.max_ts is None or ts > self.max_ts:
            self.max_ts = ts
        self.arrived_ms = now
        seen = self.sources.get(source)
        if seen is None:
            self.sources[source] = [ts, now]
        else:
            seen[0] = max(seen[0], ts)
            seen[1] = now

    def _take_marker(self, rows: Mapping[str, Sequence[Any]], i: int, now: int) -> None:
        raw = rows["raw"][i]
        found = parse_marker(bytes(raw) if raw is not None else b"")
        if isinstance(found, str):
            self._dead(rows, i, found, raw=True)
            return
        if self.frontier is not None and found.ts_ms < self.frontier:
            self._dead(rows, i, LATE, raw=True)
            return
        if found.ts_ms > now + self.config.max_future_ms:
            self._dead(rows, i, FUTURE, raw=True)
            return
        if found.ts_ms < 0:
            self._dead(rows, i, BEFORE_1970, raw=True)
            return
        self._arrived(-1 - int(rows["partition"][i]), found.ts_ms, now)
        self.pending.append((found.ts_ms, 0, "", 0, "", found.migration, found.phase, found.phases))

    def _dead(self, rows: Mapping[str, Sequence[Any]], i: int, reason: str, *, raw: bool = False) -> None:
        kts = rows["kts"][i]
        value = rows["raw"][i] if raw else None
        marker = bool(rows["marker"][i])
        decoded = rows["reason"][i] is None and not marker
        topic = self.config.markers_topic if marker else self.config.topic
        self._out.by_kind["deadletter"].append(
            (
                int(kts) if kts is not None else 0,
                f"kafka://{topic}/{rows['partition'][i]}",
                int(rows["offset"][i]),
                reason,
                bytes(value[:MAX_RAW_KEPT]) if value is not None else None,
                rows["member"][i] if decoded else None,
                rows["seq"][i] if decoded else None,
                rows["ts"][i] if decoded else None,
            )
        )

    # --- applying events in order ------------------------------------------------------------------
    def _apply_until(self, frontier: int) -> None:
        pending = self.pending
        if not pending:
            return
        pending.sort()
        ready = 0
        for item in pending:
            if item[0] >= frontier:
                break
            ready += 1
        if not ready:
            return
        group = self.group or ""
        apply, window_ms = self.ledger.apply, self.config.window_ms
        dirty_parts, dirty_members = self._dirty_parts, self._dirty_members
        out_intervals, out_pauses = self._out.by_kind["interval"], self._out.by_kind["pause"]
        if self.next_window is None:
            first = pending[0][0]
            self.next_window = first - first % window_ms
        window_start = -1
        callbacks: dict[tuple[str | None, str, int], list[int]] | None = None
        for item in pending[:ready]:
            t = item[0]
            start = t - t % window_ms
            if start != window_start:
                if t >= self.next_window + window_ms:
                    self._close_windows(t)
                window_start, callbacks = start, None
            if item[1] == 0:
                self._apply_marker(item)
                continue
            if callbacks is None:
                callbacks = self._window(start).callbacks
            _, _, member, _, _, kind, protocol, delta, owns, cb = item
            intervals, pause, released, opened = apply(group, member, t, KIND_NAMES[kind], delta, owns)
            key = (self.phase, member, protocol)
            acc = callbacks.get(key)
            if acc is None:
                callbacks[key] = acc = [0, 0, 0, 0, 0, 0, 0, 0, t, t]
            acc[0] += 1
            if kind == ASSIGNED:
                acc[1] += 1
            elif kind == REVOKED:
                acc[2] += 1
                acc[4] += len(delta)
            elif kind == LOST:
                acc[3] += 1
                acc[5] += len(delta)
            acc[6] += cb
            acc[7] = max(acc[7], cb)
            acc[9] = t
            if delta:
                dirty_parts.update(delta)
            if released:
                dirty_parts.update([(p[1], p[2]) for p in released])
            if intervals:
                out_intervals.extend(intervals)
                self._clip_intervals(intervals)
            if pause is not None:
                out_pauses.append(pause)
                self._clip_pause(pause)
                dirty_members.add(member)
            elif opened:
                dirty_members.add(member)
        del pending[:ready]

    def _apply_marker(self, item: Pending) -> None:
        t, _, _, _, _, migration, passed, phases = item
        self.phase = phase_label(migration, passed, phases)
        self._out.by_kind["phase"].append((t, self.phase, migration, passed, phases))

    def _window(self, start: int) -> _Window:
        window = self.windows.get(start)
        if window is None:
            window = self.windows[start] = _Window()
        return window

    def _clip_intervals(self, intervals: Sequence[IntervalTuple]) -> None:
        """Closed intervals into the windows not emitted yet (the part before was counted as open
        when those windows were emitted), and as the last hand-over of their partition."""
        window_ms, first = self.config.window_ms, self.next_window
        assert first is not None
        handover = self.handover
        for _, topic, number, since, end, source, target, _ in intervals:
            handover[(topic, number)] = (end, source, target)
            start = since if since > first else first
            while start < end:
                window_start = start - start % window_ms
                stop = min(end, window_start + window_ms)
                self._window(window_start).unavailable_ms += stop - start
                start = stop

    def _clip_pause(self, pause: PauseTuple) -> None:
        window_ms, first = self.config.window_ms, self.next_window
        assert first is not None
        _, member, since, end, _ = pause
        start = since if since > first else first
        while start < end:
            window_start = start - start % window_ms
            stop = min(end, window_start + window_ms)
            paused = self._window(window_start).paused
            paused[member] = paused.get(member, 0) + stop - start
            start = stop

    # --- windows and state rows --------------------------------------------------------------------
    def _close_windows(self, until: int) -> None:
        """Emit every window that ends at or before `until` (all events before it are applied)."""
        window_ms = self.config.window_ms
        ledger = self.ledger
        while self.next_window is not None and self.next_window + window_ms <= until:
            start = self.next_window
            window = self.windows.pop(start, None)
            if window is not None:
                self._emit_window(start, start + window_ms, window)
                self.next_window = start + window_ms
                continue
            # Nothing counted up to the next window that holds something (or the frontier's window).
            quiet_until = min(min(self.windows, default=until), until - until % window_ms)
            quiet_until = max(quiet_until, start + window_ms)
            if ledger.paused or ledger.released:
                # only what stays open: one row for the whole stretch (a pipeline started after a week
                # of downtime writes one row, not one per window)
                self._emit_window(start, quiet_until, _Window())
            self.next_window = quiet_until

    def _emit_open(self) -> None:
        """`window_open` rows: the windows not final yet, as if every event taken so far were applied
        (on a copy of the state: the real one waits for the watermark), open pauses and unowned
        partitions counted up to the group's latest event. A later batch's rows supersede them (higher
        `version`), and the window's `window` row once it is final."""
        ledger = self.ledger
        if self.max_ts is None or not (self.pending or self.windows or ledger.paused or ledger.released):
            return
        upto = self.max_ts
        probe = GroupStream.load(self.dump(), self.config)
        probe._out = Output(self.group)
        probe._apply_until(upto + 1)
        probe._close_windows(upto)
        start = probe.next_window
        if start is not None and start <= upto:
            window = probe.windows.pop(start, None)
            if window is not None or probe.ledger.paused or probe.ledger.released:
                probe._emit_window(start, start + self.config.window_ms, window or _Window(), open_until=upto)
        rows = self._out.by_kind["window_open"]
        for row in probe._out.by_kind["window"]:
            self.version += 1
            rows.append((*row, self.version, upto))

    def _emit_window(self, start: int, end: int, window: _Window, open_until: int | None = None) -> None:
        ledger = self.ledger
        paused = dict(window.paused)
        upto = end if open_until is None else open_until
        for (_, member), (since, _) in ledger.paused.items():
            paused[member] = paused.get(member, 0) + max(0, upto - max(since, start))
        unavailable = window.unavailable_ms
        for since, _, _ in ledger.released.values():
            unavailable += max(0, upto - max(since, start))
        values = sorted(v for v in paused.values() if v > 0)
        events = rebalances = revoked_partitions = lost = lost_partitions = 0
        for acc in window.callbacks.values():
            events += acc[0]
            rebalances += acc[1]
            lost += acc[3]
            revoked_partitions += acc[4]
            lost_partitions += acc[5]
        self._out.by_kind["window"].append(
            (
                start,
                end,
                self.phase,
                events,
                rebalances,
                revoked_partitions,
                lost,
                lost_partitions,
                len(values),
                sum(values),
                percentile(values, 0.5),
                percentile(values, 0.95),
                values[-1] if values else 0,
                unavailable,
                len(ledger.released),
            )
        )
        rows = self._out.by_kind["callbacks"]
        for (phase, member, protocol), acc in window.callbacks.items():
            rows.append((start, end, phase, member, PROTOCOL_NAMES[protocol], *acc))

    def _emit_state(self) -> None:
        if not self._dirty_parts and not self._dirty_members:
            return
        as_of = self.frontier if self.frontier is not None else 0
        ledger, group = self.ledger, self.group or ""
        rows = self._out.by_kind["partition"]
        for topic, number in sorted(self._dirty_parts):
            part = (group, topic, number)
            self.version += 1
            gap = ledger.released.get(part)
            handover = self.handover.get((topic, number))
            rows.append(
                (
                    as_of,
                    self.version,
                    topic,
                    number,
                    ledger.owner.get(part),
                    *(gap if gap else (None, None, None)),
                    *(handover if handover else (None, None, None)),
                )
            )
        members = self._out.by_kind["member"]
        for member in sorted(self._dirty_members):
            self.version += 1
            paused = ledger.paused.get((group, member))
            members.append((as_of, self.version, member, *(paused if paused else (None, None))))
        self._dirty_parts = set()
        self._dirty_members = set()


class _BuiltinsOnly(pickle.Unpickler):
    """State is dicts, lists, tuples, strings, numbers and None: a checkpoint can name no class."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"group state may not name {module}.{name}")

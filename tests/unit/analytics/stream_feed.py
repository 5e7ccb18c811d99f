"""Feeding the per-group step the way the Spark shell does, for tests: events as the decoder's columns,
one stream per group, batches at given clock times, the state dumped and loaded between them.

The step is `_stream.GroupStream` (`PythonStep`, the reference) or the JVM's `GroupStep` (`JvmStep`):
the same feed, the same rows as `Output.dicts()` gives, so one specification judges both.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from kafka_coop.analytics._columnar import decode_event
from kafka_coop.analytics._stream import (
    INPUT_FIELDS,
    KIND_FIELDS,
    OUTPUT_COLUMNS,
    TOPICS_SEP,
    TS_FROM_END,
    GroupStream,
    StreamConfig,
)
from tests.unit.analytics.jvm_replay import StepReplay

Rows = dict[str, list[Any]]


def columns(events: Sequence[Mapping[str, Any]], *, first_offset: int = 0, partition: int = 0) -> Rows:
    """Input columns for valid events (records of `partition`, consecutive offsets), as the shell
    makes them from the decoder's."""
    out: Rows = {name: [] for name, _ in INPUT_FIELDS}
    for n, event in enumerate(events):
        decoded = decode_event(event)
        for name, _ in INPUT_FIELDS:
            out[name].append(decoded.get(name))
        out["topics"][-1] = TOPICS_SEP.join(decoded["topics"]) or None
        out["marker"][-1] = False
        out["reason"][-1] = None
        out["partition"][-1] = partition
        out["offset"][-1] = first_offset + n
        out["kts"][-1] = int(event["ts_ms"])
        out["raw"][-1] = None
    return out


def raw_rows(
    values: Sequence[bytes],
    *,
    marker: bool,
    reason: str | None = None,
    kts: int = 0,
    partition: int = 0,
    first_offset: int = 0,
) -> Rows:
    """Records the decoder refused (`reason`) or marker records (`marker`), as the shell hands them on."""
    out: Rows = {name: [None] * len(values) for name, _ in INPUT_FIELDS}
    out["marker"] = [marker] * len(values)
    out["reason"] = [reason] * len(values)
    out["raw"] = list(values)
    out["partition"] = [partition] * len(values)
    out["offset"] = list(range(first_offset, first_offset + len(values)))
    out["kts"] = [kts] * len(values)
    return out


def concat(*parts: Rows) -> Rows:
    out: Rows = {name: [] for name, _ in INPUT_FIELDS}
    for part in parts:
        for name in out:
            out[name].extend(part[name])
    return out


Dicts = list[dict[str, Any]]


class Step(Protocol):
    """One group's step as the shell runs it: from its dumped state (None: a new group) to its rows,
    its state dumped again and its wakeup (both None for the null group's lane, which keeps no state)."""

    def advance(
        self, group: str | None, state: bytes | None, rows: Rows, now: int, config: StreamConfig
    ) -> tuple[Dicts, bytes | None, int | None]: ...

    def wakeup(self, state: bytes, config: StreamConfig, after: int) -> int | None: ...


class PythonStep:
    """`GroupStream`, the reference."""

    def advance(
        self, group: str | None, state: bytes | None, rows: Rows, now: int, config: StreamConfig
    ) -> tuple[Dicts, bytes | None, int | None]:
        stream = GroupStream.load(state, config) if state is not None else GroupStream(group, config)
        out = stream.advance(rows, now).dicts()
        if group is None:
            return out, None, None
        return out, stream.dump(), stream.next_wakeup_ms(now)

    def wakeup(self, state: bytes, config: StreamConfig, after: int) -> int | None:
        return GroupStream.load(state, config).next_wakeup_ms(after)


class JvmStep:
    """The JVM's `GroupStep`, through a `StepReplay` process; its rows turned into the dicts
    `Output.dicts()` makes (only the kind's columns: every other one must be null, as `Output.columns`
    leaves it), kind by kind in `KIND_FIELDS` order as `dicts()` lists them."""

    def __init__(self, replay: StepReplay) -> None:
        self.replay = replay

    def advance(
        self, group: str | None, state: bytes | None, rows: Rows, now: int, config: StreamConfig
    ) -> tuple[Dicts, bytes | None, int | None]:
        out, state, wakeup = self.replay.advance(group, state, rows, now, config)
        dicts = [jvm_row_dict(row) for row in out]
        order = list(KIND_FIELDS)
        dicts.sort(key=lambda r: order.index(r["kind"]))
        return dicts, state, wakeup

    def wakeup(self, state: bytes, config: StreamConfig, after: int) -> int | None:
        return self.replay.wakeup(state, config, after)


def jvm_row_dict(values: Sequence[Any]) -> dict[str, Any]:
    """One output row (OUTPUT_FIELDS order) as `Output.dicts()` has it; AssertionError for a row with a
    value in a column its kind does not fill (dicts() would hide it, the Parquet table would not)."""
    row = dict(zip(OUTPUT_COLUMNS, values, strict=True))
    kind = row["kind"]
    assert kind in KIND_FIELDS, f"unknown kind {kind!r} in {row}"
    filled = {"kind", "group", *KIND_FIELDS[kind], *(("ts",) if kind in TS_FROM_END else ())}
    stray = {name: value for name, value in row.items() if name not in filled and value is not None}
    assert not stray, f"a {kind} row fills columns it has not: {stray}"
    return {name: row[name] for name in ("kind", "group", *KIND_FIELDS[kind], "ts") if name in filled}


class Feed:
    """Streams of several groups, advanced batch by batch through dump/load (as a checkpoint would)."""

    def __init__(self, config: StreamConfig | None = None, *, step: Step | None = None) -> None:
        self.config = config or StreamConfig()
        self.step: Step = step or PythonStep()
        self.state: dict[str | None, bytes] = {}
        self.rows: list[dict[str, Any]] = []
        # each group's wakeup as its last step reported it (what the shell sets its timeout from)
        self.wakeups: dict[str | None, int | None] = {}
        self.stepped: dict[str | None, int] = {}  # each group's last step: its batch's clock

    def batch(self, now: int, rows_by_group: Mapping[str | None, Rows] | None = None) -> list[dict[str, Any]]:
        """One micro-batch at clock `now`: groups with rows, then groups whose wakeup has come."""
        out: list[dict[str, Any]] = []
        given = dict(rows_by_group or {})
        for group in sorted(set(given) | set(self.state), key=str):
            state = self.state.get(group)
            rows = given.get(group)
            if rows is None:
                wakeup = self.wakeup(group)
                if wakeup is None or wakeup > now:
                    continue
                rows = {name: [] for name, _ in INPUT_FIELDS}
            got, state, wakeup = self.step.advance(group, state, rows, now, self.config)
            assert (state is None) == (group is None), "the null group's lane, and only it, keeps no state"
            out.extend(got)
            if state is not None:
                self.state[group] = state
                self.wakeups[group] = wakeup
                self.stepped[group] = now
        self.rows.extend(out)
        return out

    def wakeup(self, group: str | None) -> int | None:
        """When the group's saved state asks for a step without new rows (None: only new rows)."""
        return self.step.wakeup(self.state[group], self.config, self.stepped[group])

    def events(
        self, now: int, events: Iterable[Mapping[str, Any]], offset: int = 0, partition: int = 0
    ) -> list[dict[str, Any]]:
        by_group: dict[str | None, list[Mapping[str, Any]]] = defaultdict(list)
        for event in events:
            by_group[str(event["group"])].append(event)
        return self.batch(
            now, {g: columns(evs, first_offset=offset, partition=partition) for g, evs in by_group.items()}
        )

    def partitions(
        self, now: int, parts: Mapping[int, Sequence[Mapping[str, Any]]], offset: int = 0
    ) -> list[dict[str, Any]]:
        """One batch of events read from several partitions (`parts`: partition -> its events)."""
        by_group: dict[str | None, list[Rows]] = defaultdict(list)
        for partition, events in parts.items():
            groups = sorted({str(e["group"]) for e in events})
            for group in groups:
                mine = [e for e in events if str(e["group"]) == group]
                by_group[group].append(columns(mine, first_offset=offset, partition=partition))
        return self.batch(now, {g: concat(*rows) for g, rows in by_group.items()})

    def live(self, events: Sequence[Mapping[str, Any]], *, delay_ms: int = 60, tick_ms: int = 100) -> None:
        """A live stream: each event in a batch `delay_ms` after its time, empty batches every `tick_ms`
        in between (the job's trigger), so an idle group's clock runs on."""
        clock: int | None = None
        for n, event in enumerate(events):
            at = int(event["ts_ms"]) + delay_ms
            while clock is not None and clock + tick_ms < at:
                clock += tick_ms
                self.batch(clock)
            self.events(at, [event], offset=n)
            clock = at

    def dead(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["kind"] == "deadletter"]

    def flush(self, after_ms: int) -> list[dict[str, Any]]:
        """A batch far enough past `after_ms` (the last rows' batch time) that every group is idle, so
        everything is applied and every window closed."""
        config = self.config
        return self.batch(after_ms + config.idle_ms + config.watermark_ms + 2 * config.window_ms + 1)

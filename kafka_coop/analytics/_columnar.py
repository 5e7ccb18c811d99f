"""The report's definitions as whole-array operations: the core each Spark task runs on its share of
the groups, written independently of the reference loop (`_intervals`, `_summary`) so that each checks
the other in tests. How the reference's sequential state becomes array operations:
docs/design/analytics.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, get_args

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from kafka_coop._vocab import RebalanceProtocol
from kafka_coop.analytics._intervals import member_name
from kafka_coop.analytics._model import (
    MemberStat,
    PartitionStat,
    PhaseStat,
    PhaseWindow,
    ProtocolStat,
    Summary,
)
from kafka_coop.analytics._summary import callback_micros, default_phases, member_stat
from kafka_coop.events import EventKind

# Codes are indices into these, in the order the event schema defines them.
KINDS: Final[tuple[str, ...]] = get_args(EventKind)
PROTOCOLS: Final[tuple[str, ...]] = get_args(RebalanceProtocol)
ASSIGNED, REVOKED, LOST, STARTED, CLOSED = range(5)

Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

EVENT_SCHEMA: Final = pa.schema(
    [
        ("group", pa.string()),
        ("member", pa.string()),  # instance_id or client_id or member_id
        ("member_id", pa.string()),
        ("ts", pa.int64()),
        ("seq", pa.int64()),
        ("kind", pa.int8()),  # index into KINDS
        ("protocol", pa.int8()),  # index into PROTOCOLS
        # the delta: its first pair's topic; every pair's topic only when they name several topics (else
        # empty); every pair's partition as little-endian int64s. Packed because lists cost most in the Spark
        # job (converted, shuffled and handed to Arrow element by element) and a delta has one topic.
        ("topic", pa.string()),
        ("topics", pa.list_(pa.string())),
        ("parts", pa.binary()),
        ("n_owned", pa.int32()),
        ("cb_us", pa.int64()),  # callback_ms as whole microseconds, half-up
    ]
)
EVENT_COLUMNS: Final = tuple(EVENT_SCHEMA.names)

INTERVAL_SCHEMA: Final = pa.schema(
    [
        ("group", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int64()),
        ("start_ms", pa.int64()),
        ("end_ms", pa.int64()),
        ("from_member", pa.string()),
        ("to_member", pa.string()),
        ("cause", pa.string()),
    ]
)
PAUSE_SCHEMA: Final = pa.schema(
    [
        ("group", pa.string()),
        ("member", pa.string()),
        ("start_ms", pa.int64()),
        ("end_ms", pa.int64()),
        ("cause", pa.string()),
    ]
)

# Partial records, one flat shape for every kind (Spark returns them as rows of RECORD_SCHEMA).
RECORD_SCHEMA: Final = pa.schema(
    [
        ("rec", pa.string()),  # head | member | partition | protocol | phase | malformed | deltas
        ("group", pa.string()),
        ("name", pa.string()),  # member name, protocol name or phase index (as text)
        ("topic", pa.string()),
        ("partition", pa.int64()),
        ("events", pa.int64()),
        ("malformed", pa.int64()),
        ("first_ts", pa.int64()),
        ("last_ts", pa.int64()),
        ("pause_ms", pa.int64()),
        ("pauses", pa.int64()),
        ("rebalances", pa.int64()),
        ("revoked", pa.int64()),
        ("lost", pa.int64()),
        ("revoked_partitions", pa.int64()),
        ("lost_partitions", pa.int64()),
        ("members", pa.int64()),
        ("callback_us_total", pa.int64()),
        ("callback_us_max", pa.int64()),
        ("unavailable_ms", pa.int64()),
        ("intervals", pa.int64()),
        ("path", pa.string()),
        ("pid", pa.int64()),
        ("row", pa.int64()),
        ("line", pa.int64()),
        ("reason", pa.string()),
        ("blob", pa.binary()),  # deltas: `pack_deltas` of one series (`name`: unowned | paused)
    ]
)
Record = dict[str, Any]


@dataclass
class Analysis:
    """One call's results: tables to write and partial records to merge (`summary_of`)."""

    intervals: pa.Table
    pauses: pa.Table
    records: list[Record] = field(default_factory=list)


# --- building the input ---------------------------------------------------------------------------------
def decode_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """What the decoder makes of one valid event (the reference's definitions of member and callback)."""
    parts = event.get("partitions") or ()
    topics = [str(t) for t, _ in parts]
    return {
        "group": str(event["group"]),
        "member": member_name(event),
        "member_id": str(event["member_id"]),
        "ts": int(event["ts_ms"]),
        "seq": int(event["seq"]),
        "kind": KINDS.index(event["kind"]),
        "protocol": PROTOCOLS.index(event["protocol"]),
        "topic": topics[0] if topics else None,
        "topics": topics if len(set(topics)) > 1 else [],
        "parts": pack_ints([int(p) for _, p in parts]),
        "n_owned": len(event.get("owned") or ()),
        "cb_us": callback_micros(event["callback_ms"]),
    }


def pack_ints(values: Sequence[int]) -> bytes:
    """Little-endian int64s, as the decoder packs a delta's partitions."""
    return np.asarray(values, dtype="<i8").tobytes()


def _delta_pairs(table: pa.Table, take: pa.Array) -> tuple[Ints, Ints, Ints, Ints, list[str]]:
    """The delta pairs of the events `take` picks, in that order: per event its pair count, per pair
    its event (position in `take`), partition and topic code (ranked as `_ranked`), and the topics."""
    parts = table["parts"].take(take).combine_chunks()
    width = 8 if pa.types.is_large_binary(parts.type) else 4  # Spark may send large_binary
    offsets = np.frombuffer(
        parts.buffers()[1],
        dtype=np.int64 if width == 8 else np.int32,
        count=len(parts) + 1,
        offset=width * parts.offset,
    )
    lengths = np.diff(offsets).astype(np.int64) // 8
    data = parts.buffers()[2]
    pnum = np.frombuffer(data, dtype="<i8", count=int(offsets[-1] - offsets[0]) // 8, offset=int(offsets[0]))
    pnum = pnum.astype(np.int64)
    ev = np.repeat(np.arange(len(parts), dtype=np.int64), lengths)
    if not len(ev):
        return lengths, ev, pnum, np.zeros(0, dtype=np.int64), []
    first = table["topic"].take(take).combine_chunks()
    several = table["topics"].take(take).combine_chunks()
    listed = pc.list_flatten(several)
    codes, names = _ranked(pa.concat_arrays([first.fill_null(""), listed]))
    tcode = codes[: len(first)][ev]
    if len(listed):
        listed_events = pc.greater(pc.list_value_length(several), 0).to_numpy(zero_copy_only=False)
        tcode[listed_events[ev]] = codes[len(first) :]
    return lengths, ev, pnum, tcode, names


def table_from_events(events: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Decoded events as the table `analyse` takes (tests and small inputs; Spark decodes in the JVM)."""
    return pa.Table.from_pylist([decode_event(e) for e in events], schema=EVENT_SCHEMA)


# --- helpers ----------------------------------------------------------------------------------------------
def _ranked(column: pa.ChunkedArray | pa.Array) -> tuple[Ints, list[str]]:
    """Codes whose order is the strings' order (UTF-8 byte order = code point order, as Python sorts),
    and the distinct strings in that order."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    encoded = array.dictionary_encode()
    order = pc.sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    codes = rank[encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)]
    return codes, encoded.dictionary.take(pa.array(order)).to_pylist()


def _ints(column: pa.ChunkedArray) -> Ints:
    values: Ints = np.asarray(column.to_numpy(), dtype=np.int64)
    return values


def _strings(codes: Ints, names: Sequence[str]) -> pa.Array:
    """Codes as a dictionary-encoded string column (Parquet and Spark read it as strings)."""
    return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(names, pa.string()))


def _starts(*keys: Ints) -> Bools:
    """True where a run of equal key tuples begins (rows sorted by those keys)."""
    out = np.ones(len(keys[0]), dtype=bool)
    out[1:] = False
    for key in keys:
        out[1:] |= key[1:] != key[:-1]
    return out


def _event_order(table: pa.Table, g: Ints, m: Ints, ts: Ints, seq: Ints) -> Ints:
    """Positions in `(group, ts_ms, member, seq, member_id)` order. member_id is ranked only when two
    events really tie on the rest (rare: it costs a dictionary of every member_id)."""
    order = np.lexsort((seq, m, ts, g))
    if not _starts(g[order], ts[order], m[order], seq[order]).all():
        mid, _ = _ranked(table["member_id"])
        order = np.lexsort((mid, seq, m, ts, g))
    return order


def _stable_order(codes: Ints) -> Ints:
    """Positions sorted by code, ties in position order (radix sort when the codes fit 16 bits)."""
    if len(codes) and int(codes.max()) < 2**16:
        return np.argsort(codes.astype(np.uint16), kind="stable")
    return np.argsort(codes, kind="stable")


def _partition_order(group: Ints, topic: Ints, partition: Ints, n_groups: int, n_topics: int) -> Ints:
    """Partition rows (given in rank order) sorted by (group, topic, partition), rank order kept: one
    stable sort of a combined key when it fits 63 bits, else a lexsort."""
    if not len(partition):
        return np.zeros(0, dtype=np.int64)
    low, high = int(partition.min()), int(partition.max())
    span = high - low + 1
    if n_groups * n_topics * span < 2**62:
        key = (group * n_topics + topic) * span + (partition - low)
        return np.argsort(key, kind="stable")
    return np.lexsort((np.arange(len(partition)), partition, topic, group))


def _clip_sum(start: Ints, end: Ints, window: PhaseWindow) -> int:
    return int(np.maximum(0, np.minimum(end, window.end_ms) - np.maximum(start, window.start_ms)).sum())


# --- the analysis ------------------------------------------------------------------------------------------
def analyse(table: pa.Table, windows: Sequence[PhaseWindow] = ()) -> Analysis:
    """Intervals, pauses and partial records for decoded events whose groups are all here."""
    n = table.num_rows
    if n == 0:
        return Analysis(INTERVAL_SCHEMA.empty_table(), PAUSE_SCHEMA.empty_table(), [])
    g, group_names = _ranked(table["group"])
    m, member_names = _ranked(table["member"])
    ts_in, seq = _ints(table["ts"]), _ints(table["seq"])
    order = _event_order(table, g, m, ts_in, seq)
    g, m = g[order], m[order]
    ts = ts_in[order]
    kind = _ints(table["kind"])[order]
    protocol = _ints(table["protocol"])[order]
    n_owned = _ints(table["n_owned"])[order]
    cb_us = _ints(table["cb_us"])[order]

    # members: (group, name) -> dense id, ids in (group, name) order
    member_keys, mem = np.unique(g * len(member_names) + m, return_inverse=True)
    mem = mem.astype(np.int64)
    mem_group, mem_name = member_keys // len(member_names), member_keys % len(member_names)
    by_member = _stable_order(mem)  # rows by member, then rank
    by_member_keys = mem * n + np.arange(n, dtype=np.int64)
    member_keys_sorted = by_member_keys[by_member]

    # partition rows: every [topic, partition] of every event, sorted by (group, topic, partition, rank)
    lengths, ev, pnum, tcode, topic_names = _delta_pairs(table, pa.array(order))  # ev: ascending rank
    pg = g[ev]
    rows = _partition_order(pg, tcode, pnum, len(group_names), len(topic_names))
    pg, tcode, pnum, ev = pg[rows], tcode[rows], pnum[rows], ev[rows]
    new_part = _starts(pg, tcode, pnum)
    part_of_row = np.cumsum(new_part) - 1
    part_group, part_topic, part_num = pg[new_part], tcode[new_part], pnum[new_part]

    iv = _intervals(ev, part_of_row, kind, mem, ts, by_member_keys, member_keys_sorted)
    pause = _pauses(by_member, mem, kind, n_owned, ts)

    intervals = pa.table(
        {
            "group": _strings(part_group[iv.part], group_names),
            "topic": _strings(part_topic[iv.part], topic_names),
            "partition": pa.array(part_num[iv.part], pa.int64()),
            "start_ms": pa.array(iv.start, pa.int64()),
            "end_ms": pa.array(iv.end, pa.int64()),
            "from_member": _strings(mem_name[iv.source], member_names),
            "to_member": _strings(mem_name[iv.target], member_names),
            "cause": _strings(iv.cause, INTERVAL_CAUSES),
        }
    )
    pauses = pa.table(
        {
            "group": _strings(mem_group[pause.member], group_names),
            "member": _strings(mem_name[pause.member], member_names),
            "start_ms": pa.array(pause.start, pa.int64()),
            "end_ms": pa.array(pause.end, pa.int64()),
            "cause": _strings(pause.cause, KINDS),
        }
    )

    vanished = iv.cause == INTERVAL_CAUSES.index("vanished")
    records: list[Record] = [
        {
            "rec": "head",
            "events": n,
            "first_ts": int(ts.min()),
            "last_ts": int(ts.max()),
            "intervals": int(vanished.sum()),  # a head's intervals and unavailable_ms: the vanished ones
            "unavailable_ms": int((iv.end[vanished] - iv.start[vanished]).sum()),
        }
    ]
    n_members = len(member_keys)
    is_a, is_r, is_l = kind == ASSIGNED, kind == REVOKED, kind == LOST
    counts = {
        "events": np.bincount(mem, minlength=n_members),
        "rebalances": np.bincount(mem[is_a], minlength=n_members),
        "revoked_partitions": np.bincount(mem[is_r], weights=lengths[is_r], minlength=n_members),
        "lost_partitions": np.bincount(mem[is_l], weights=lengths[is_l], minlength=n_members),
        "callback_us_total": np.bincount(mem, weights=cb_us, minlength=n_members),
        "pause_ms": np.bincount(pause.member, weights=pause.end - pause.start, minlength=n_members),
        "pauses": np.bincount(pause.member, minlength=n_members),
    }
    member_starts = np.flatnonzero(_starts(mem[by_member]))
    cb_max = np.maximum.reduceat(cb_us[by_member], member_starts)
    for i in range(n_members):
        record: Record = {
            "rec": "member",
            "group": group_names[mem_group[i]],
            "name": member_names[mem_name[i]],
        }
        record.update({k: round(float(v[i])) for k, v in counts.items()})
        record["callback_us_max"] = int(cb_max[i])
        records.append(record)

    n_parts = len(part_group)
    part_ms = np.bincount(iv.part, weights=iv.end - iv.start, minlength=n_parts)
    part_n = np.bincount(iv.part, minlength=n_parts)
    records.extend(
        {
            "rec": "partition",
            "group": group_names[part_group[i]],
            "topic": topic_names[part_topic[i]],
            "partition": int(part_num[i]),
            "unavailable_ms": round(float(part_ms[i])),
            "intervals": int(part_n[i]),
        }
        for i in range(n_parts)
    )

    rebalance_kind = kind <= LOST
    for code in np.unique(protocol):
        mine = protocol == code
        records.append(
            {
                "rec": "protocol",
                "name": PROTOCOLS[int(code)],
                "members": len(np.unique(mem[mine])),
                "events": int((mine & rebalance_kind).sum()),
                "rebalances": int((mine & is_a).sum()),
                "revoked": int((mine & is_r).sum()),
                "lost": int((mine & is_l).sum()),
                "revoked_partitions": int(lengths[mine & is_r].sum()),
                "lost_partitions": int(lengths[mine & is_l].sum()),
            }
        )

    for index, window in enumerate(windows):
        inside = (ts >= window.start_ms) & (ts < window.end_ms)
        records.append(
            {
                "rec": "phase",
                "name": str(index),
                "events": int(inside.sum()),
                "rebalances": int((inside & is_a).sum()),
                "revoked_partitions": int(lengths[inside & is_r].sum()),
                "unavailable_ms": _clip_sum(iv.start, iv.end, window),
                "pause_ms": _clip_sum(pause.start, pause.end, window),
            }
        )
    return Analysis(intervals, pauses, records)


INTERVAL_CAUSES: Final = ("revoked", "lost", "vanished")


@dataclass(frozen=True)
class _Gaps:
    part: Ints  # partition index
    source: Ints  # member id of the old owner
    target: Ints  # member id of the new owner
    start: Ints
    end: Ints
    cause: Ints  # index into INTERVAL_CAUSES


@dataclass(frozen=True)
class _Pauses:
    member: Ints  # member id
    start: Ints
    end: Ints
    cause: Ints  # index into KINDS


def _intervals(
    ev: Ints,
    part_of_row: Ints,
    kind: Ints,
    mem: Ints,
    ts: Ints,
    by_member_keys: Ints,
    member_keys_sorted: Ints,
) -> _Gaps:
    """Unavailability intervals from partition rows sorted by (partition, rank) (module docstring)."""
    n = len(kind)
    keep = kind[ev] <= LOST  # assigned / revoked / lost rows; started/closed partitions only count as seen
    ev, part = ev[keep], part_of_row[keep]
    count = len(ev)
    if count == 0:
        empty = np.zeros(0, dtype=np.int64)
        return _Gaps(empty, empty, empty, empty, empty, empty)
    index = np.arange(count, dtype=np.int64)
    first_row = np.maximum.accumulate(np.where(_starts(part), index, 0))
    is_a = kind[ev] == ASSIGNED
    last_a = np.maximum.accumulate(np.where(is_a, index, -1))
    last_a[last_a < first_row] = -1  # no assignment yet in this partition
    member = mem[ev]
    owner = np.where(last_a >= 0, member[np.maximum(last_a, 0)], -1)
    release_rows = np.flatnonzero(~is_a & (last_a >= 0) & (member == owner))
    release_seg = last_a[release_rows]
    first_release = _starts(release_seg)
    release_of = np.full(count, -1, dtype=np.int64)  # assigned row -> its segment's first release row
    release_of[release_seg[first_release]] = release_rows[first_release]

    assigned = np.flatnonzero(is_a)
    following = np.full(len(assigned), -1, dtype=np.int64)
    following[:-1] = assigned[1:]
    has_next = following >= 0
    has_next[has_next] = part[following[has_next]] == part[assigned[has_next]]
    seg, nxt = assigned[has_next], following[has_next]
    owner_of, taker, seg_event, next_event = member[seg], member[nxt], ev[seg], ev[nxt]
    release_row = release_of[seg]
    release_event = np.where(release_row >= 0, ev[np.maximum(release_row, 0)], n)

    # the owner's first `closed` after its assignment, before the next assignment and any release
    closed_keys = np.sort(by_member_keys[kind == CLOSED])
    closed_event = np.full(len(seg), n, dtype=np.int64)
    if len(closed_keys):
        at = np.searchsorted(closed_keys, owner_of * n + seg_event, side="right")
        found = closed_keys[np.minimum(at, len(closed_keys) - 1)]
        ok = (at < len(closed_keys)) & (found // n == owner_of)
        closed_event[ok] = found[ok] - owner_of[ok] * n
    by_close = (closed_event < next_event) & (closed_event < release_event)
    released = by_close | (release_row >= 0)
    start_event = np.minimum(np.where(by_close, closed_event, release_event), n - 1)
    start = ts[start_event]
    cause = np.where(~by_close & (kind[start_event] == LOST), 1, 0)

    # no release and a new owner: the old owner vanished; count from its last event before the taker's
    vanished = ~released & (owner_of != taker)
    if vanished.any():
        base = owner_of[vanished] * n
        at = np.searchsorted(member_keys_sorted, base + next_event[vanished], side="left") - 1
        start[vanished] = ts[member_keys_sorted[at] - base]
        cause[vanished] = 2
    out = released | vanished
    return _Gaps(
        part=part[seg][out],
        source=owner_of[out],
        target=taker[out],
        start=start[out],
        end=ts[next_event][out],
        cause=cause[out],
    )


def _pauses(by_member: Ints, mem: Ints, kind: Ints, n_owned: Ints, ts: Ints) -> _Pauses:
    """Pauses per member (module docstring); `cause` indexes KINDS."""
    k, owned, who, when = kind[by_member], n_owned[by_member], mem[by_member], ts[by_member]
    is_end = (k == ASSIGNED) & (owned > 0)
    is_start = (k == STARTED) | (((k == REVOKED) | (k == LOST)) & (owned == 0))
    ends_before = np.cumsum(is_end) - is_end
    first_of_member = np.maximum.accumulate(np.where(_starts(who), np.arange(len(who)), 0))
    ends_before = ends_before - ends_before[first_of_member]
    key = who * (len(who) + 1) + ends_before  # nondecreasing along the rows
    start_rows = np.flatnonzero(is_start)
    first = _starts(key[start_rows])
    start_rows, start_keys = start_rows[first], key[start_rows][first]
    end_rows = np.flatnonzero(is_end)
    at = np.searchsorted(start_keys, key[end_rows])
    ok = at < len(start_keys)
    ok[ok] = start_keys[at[ok]] == key[end_rows[ok]]
    begin, finish = start_rows[at[ok]], end_rows[ok]
    return _Pauses(member=who[finish], start=when[begin], end=when[finish], cause=k[begin])


# --- merging partial records into the summary ----------------------------------------------------------
def summary_of(
    records: Iterable[Mapping[str, Any]], windows: Sequence[PhaseWindow] | None, malformed: int = 0
) -> Summary:
    """The Summary from every call's records (in any order); `windows` None means the one phase `all`.
    Refused lines are `malformed` plus what head records count."""
    events, first, last = 0, None, None
    vanished, vanished_ms = 0, 0
    members: list[MemberStat] = []
    partitions: list[PartitionStat] = []
    protocols: dict[str, dict[str, int]] = {}
    phases: dict[int, dict[str, int]] = {}
    for r in records:
        rec = r["rec"]
        if rec == "head":
            events += int(r.get("events") or 0)
            malformed += int(r.get("malformed") or 0)
            vanished += int(r.get("intervals") or 0)
            vanished_ms += int(r.get("unavailable_ms") or 0)
            if r.get("first_ts") is not None:
                first = r["first_ts"] if first is None else min(first, r["first_ts"])
                last = r["last_ts"] if last is None else max(last, r["last_ts"])
        elif rec == "member":
            members.append(member_stat(r["group"], r["name"], r))
        elif rec == "partition":
            partitions.append(
                PartitionStat(
                    group=r["group"],
                    topic=r["topic"],
                    partition=r["partition"],
                    unavailable_ms=r["unavailable_ms"],
                    intervals=r["intervals"],
                )
            )
        elif rec == "protocol":
            row = protocols.setdefault(r["name"], dict.fromkeys(ProtocolStat.model_fields, 0))
            for key in row:
                row[key] += int(r[key])
        elif rec == "phase":
            acc = phases.setdefault(int(r["name"]), {})
            for key in ("events", "rebalances", "revoked_partitions", "unavailable_ms", "pause_ms"):
                acc[key] = acc.get(key, 0) + int(r[key])
    members.sort(key=lambda s: (s.group, s.name))
    partitions.sort(key=lambda s: (s.group, s.topic, s.partition))
    unavailable = sum(p.unavailable_ms for p in partitions)
    paused = sum(s.pause_ms for s in members)
    if windows is None:  # the whole stream: every figure falls inside [first, last + 1)
        windows = default_phases(first, last)
        phases = {
            0: {
                "events": events,
                "rebalances": sum(p["rebalances"] for p in protocols.values()),
                "revoked_partitions": sum(p["revoked_partitions"] for p in protocols.values()),
                "unavailable_ms": unavailable,
                "pause_ms": paused,
            }
        }
    return Summary(
        events=events,
        malformed=malformed,
        first_ts_ms=first,
        last_ts_ms=last,
        intervals=sum(p.intervals for p in partitions),
        partition_unavailable_ms_total=unavailable,
        vanished_intervals=vanished,
        vanished_unavailable_ms=vanished_ms,
        pauses=sum(s.pauses for s in members),
        pause_ms_total=paused,
        partitions=partitions,
        members=members,
        rebalances={name: ProtocolStat(**protocols[name]) for name in sorted(protocols)},
        phases=[
            PhaseStat(
                name=w.name,
                start_ms=w.start_ms,
                end_ms=w.end_ms,
                events=phases.get(i, {}).get("events", 0),
                partition_unavailable_ms=phases.get(i, {}).get("unavailable_ms", 0),
                pause_ms=phases.get(i, {}).get("pause_ms", 0),
                rebalances=phases.get(i, {}).get("rebalances", 0),
                revoked_partitions=phases.get(i, {}).get("revoked_partitions", 0),
            )
            for i, w in enumerate(windows)
        ],
    )


# --- the plot series ----------------------------------------------------------------------------------
def span_deltas(start: Ints, end: Ints) -> tuple[Ints, Ints]:
    """`_timeline.deltas` as whole arrays: +1 at each start, -1 at each end (spans with end > start),
    summed per timestamp, zero sums dropped, in time order. Sums of several calls' results merge the
    same way (`merge_deltas`), so each Spark task reduces its own spans and the driver only adds."""
    keep = end > start
    ts = np.concatenate([start[keep], end[keep]])
    d = np.concatenate([np.ones(int(keep.sum()), np.int64), -np.ones(int(keep.sum()), np.int64)])
    return _summed(ts, d)


def merge_deltas(parts: Iterable[tuple[Ints, Ints]]) -> tuple[Ints, Ints]:
    """Several `span_deltas` results as one (the deltas of all their spans together)."""
    pairs = list(parts)
    if not pairs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return _summed(np.concatenate([ts for ts, _ in pairs]), np.concatenate([d for _, d in pairs]))


def _summed(ts: Ints, d: Ints) -> tuple[Ints, Ints]:
    if not len(ts):
        return ts.astype(np.int64), d.astype(np.int64)
    order = np.argsort(ts, kind="stable")
    ts, d = ts[order], d[order]
    starts = np.flatnonzero(np.concatenate([[True], ts[1:] != ts[:-1]]))
    moments, sums = ts[starts], np.add.reduceat(d, starts)
    nonzero = sums != 0
    return moments[nonzero], sums[nonzero]


def pack_deltas(ts: Ints, d: Ints) -> bytes:
    """Deltas as bytes for a record's `blob` (little-endian int64 moments, then int64 sums)."""
    return np.concatenate([ts, d]).astype("<i8").tobytes()


def unpack_deltas(blob: bytes) -> tuple[Ints, Ints]:
    values = np.frombuffer(blob, dtype="<i8").astype(np.int64)
    half = len(values) // 2
    return values[:half], values[half:]

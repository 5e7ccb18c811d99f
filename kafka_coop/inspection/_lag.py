"""Burrow's lag evaluation (pure): committed offsets sampled over a window -> a status per partition,
each with its evidence (the window, the samples, the first and last committed offset and lag, the
owner), so verify-group can fail a stalled group and say why.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from kafka_coop.events import PartitionKey
from kafka_coop.inspection._model import GroupSnapshot

# Facts this module relies on. The rules are Burrow's (linkedin/Burrow, core/internal/evaluator/
# caching.go, `calculatePartitionStatus`), applied in its order to the samples of one partition:
# 1. lag now within the allowed lag -> OK;
# 2. STOPPED: nobody committed during the whole window and the consumer was not caught up at any
#    sample -> the group has stopped consuming this partition;
# 3. REWIND: the committed offset went backwards and did not come back to where it was;
# 4. if the lag was above the allowed lag at every sample: STALLED when the committed offset never
#    moved, WARNING when it moved but the lag never went down;
# 5. else OK.
# One difference, because of what Kafka lets a client see: Burrow reads every commit, with its time,
# from `__consumer_offsets`; the admin API (OffsetFetch) returns only the committed offset. So a window
# here is the time kafka-coop sampled over, and "nobody committed" is read from the group: an offset that
# did not move while no member owns the partition is STOPPED (no one can commit it), one that did not
# move while a member owns it is STALLED (the member is there and not advancing).
# The group's status is its worst partition's, in Burrow's order OK < WARNING < STOPPED < STALLED < REWIND.
# A second difference: Burrow's window is the last 10 commits, ours may be shorter than one commit
# interval (members commit every auto.commit.interval.ms, 5 s by default). An offset that did not move
# over such a window says nothing, so with `judge_after_s` STOPPED and STALLED need a window that long,
# and are NOT_JUDGED (below WARNING: a window too short for a verdict is not one) before it.

LagStatus = Literal["OK", "NOT_JUDGED", "WARNING", "STOPPED", "STALLED", "REWIND"]
LAG_RANK: Final[dict[str, int]] = {
    "OK": 0,
    "NOT_JUDGED": 1,
    "WARNING": 2,
    "STOPPED": 3,
    "STALLED": 4,
    "REWIND": 5,
}
LAG_MAX_SAMPLES = 10  # Burrow's default window: the last 10 offsets of each partition


class OffsetSample(BaseModel):
    """One read of a partition: when, the group's committed offset, the log end offset."""

    model_config = ConfigDict(frozen=True)

    ts_ms: int
    committed: int
    end: int

    @property
    def lag(self) -> int:
        return max(0, self.end - self.committed)


class PartitionLagStatus(BaseModel):
    """One partition's status over a window, with its evidence."""

    model_config = ConfigDict(frozen=True)

    topic: str
    partition: int
    status: LagStatus
    window_s: float
    samples: int
    committed_first: int
    committed_last: int
    lag_first: int
    lag_last: int
    owned: bool | None  # None: ownership not known (then an unmoving offset counts as STALLED)
    evidence: str


class GroupLagStatus(BaseModel):
    """The group's status (its worst partition's) and every partition's."""

    model_config = ConfigDict(frozen=True)

    status: LagStatus
    window_s: float
    partitions: tuple[PartitionLagStatus, ...]

    def worst(self, n: int = 8) -> tuple[PartitionLagStatus, ...]:
        ranked = sorted(
            self.partitions, key=lambda p: (-LAG_RANK[p.status], -p.lag_last, p.topic, p.partition)
        )
        return tuple(p for p in ranked if p.status != "OK")[:n]


def _rewound(offsets: Sequence[int]) -> int | None:
    """Index of the first backwards step not recovered later (Burrow's checkIfOffsetsRewind + Recovered)."""
    for i in range(1, len(offsets)):
        if offsets[i] < offsets[i - 1]:
            before = offsets[i - 1]
            return None if any(o >= before for o in offsets[i:]) else i
    return None


def evaluate_partition(
    topic: str,
    partition: int,
    samples: Sequence[OffsetSample],
    *,
    owned: bool | None = None,
    allowed_lag: int = 0,
    judge_after_s: float = 0.0,
) -> PartitionLagStatus:
    """The status of one partition over its samples (oldest first; at least one). An offset that did
    not move is STOPPED or STALLED only over a window of at least `judge_after_s`, else NOT_JUDGED."""
    if not samples:
        raise ValueError("a partition needs at least one sample")
    ordered = sorted(samples, key=lambda s: s.ts_ms)
    first, last = ordered[0], ordered[-1]
    window_s = round((last.ts_ms - first.ts_ms) / 1000.0, 3)
    offsets = [s.committed for s in ordered]
    lags = [s.lag for s in ordered]
    moved = len(set(offsets)) > 1
    where = f"over {window_s:g} s ({len(ordered)} samples)"
    span = f"committed {first.committed} -> {last.committed}, lag {lags[0]} -> {lags[-1]}"
    status: LagStatus
    if last.lag <= allowed_lag:
        status, why = "OK", f"caught up {where}: {span}"
    elif len(ordered) < 2:
        status, why = "OK", f"one sample, no trend: lag {last.lag}"
    elif not moved and min(lags) > allowed_lag and window_s < judge_after_s:
        status, why = (
            "NOT_JUDGED",
            f"its offset did not move {where}, too short a window to judge (members commit every "
            f"5 s by default; {judge_after_s:g} s judges it): {span}",
        )
    elif not moved and owned is False and min(lags) > allowed_lag:
        status, why = "STOPPED", f"no member owns it and its offset did not move {where}: {span}"
    elif (at := _rewound(offsets)) is not None:
        status, why = (
            "REWIND",
            f"committed offset went back {offsets[at - 1]} -> {offsets[at]} {where}: {span}",
        )
    elif min(lags) > allowed_lag and not moved:
        owner = "its owner is not committing" if owned else "the offset did not move"
        status, why = "STALLED", f"{owner} {where} while lag stayed {lags[-1]}: {span}"
    elif min(lags) > allowed_lag and all(b >= a for a, b in itertools.pairwise(lags)):
        status, why = "WARNING", f"offsets move but lag never fell {where}: {span}"
    else:
        status, why = "OK", f"lag fell {where}: {span}"
    return PartitionLagStatus(
        topic=topic,
        partition=partition,
        status=status,
        window_s=window_s,
        samples=len(ordered),
        committed_first=first.committed,
        committed_last=last.committed,
        lag_first=lags[0],
        lag_last=lags[-1],
        owned=owned,
        evidence=why,
    )


def evaluate_group(
    series: Mapping[PartitionKey, Sequence[OffsetSample]],
    *,
    owned: Iterable[PartitionKey] | None = None,
    allowed_lag: int = 0,
    judge_after_s: float = 0.0,
) -> GroupLagStatus:
    """Every partition's status and the group's (its worst partition's). `owned`: the partitions some
    member of the group holds now (None when not known); `judge_after_s`: see `evaluate_partition`."""
    owners = None if owned is None else set(owned)
    parts = tuple(
        evaluate_partition(
            topic,
            part,
            samples,
            owned=None if owners is None else (topic, part) in owners,
            allowed_lag=allowed_lag,
            judge_after_s=judge_after_s,
        )
        for (topic, part), samples in sorted(series.items())
        if samples
    )
    status: LagStatus = max((p.status for p in parts), key=LAG_RANK.__getitem__, default="OK")
    window = max((p.window_s for p in parts), default=0.0)
    return GroupLagStatus(status=status, window_s=window, partitions=parts)


def lag_series(snapshots: Sequence[GroupSnapshot]) -> dict[PartitionKey, list[OffsetSample]]:
    """Each partition's (time, committed, end) samples over the snapshots, oldest first, the last
    LAG_MAX_SAMPLES of each."""
    series: dict[PartitionKey, list[OffsetSample]] = {}
    for snap in sorted(snapshots, key=lambda s: s.taken_ms):
        for p in snap.lag:
            if p.committed is not None:
                series.setdefault((p.topic, p.partition), []).append(
                    OffsetSample(ts_ms=snap.taken_ms, committed=p.committed, end=p.end_offset)
                )
    return {key: samples[-LAG_MAX_SAMPLES:] for key, samples in series.items()}

"""Step series for the plot: how many partitions are unowned (and members paused) at each moment.

Both engines reduce their intervals to `(ts_ms, delta)` pairs (+1 at a start, -1 at an end, summed per
timestamp); this module turns them into levels and thins long series to a plotting budget while
keeping every peak (a bucket reports its highest level, then the level it ends at).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

LevelChange = tuple[int, int]  # (ts_ms, level from this moment on)
MAX_POINTS = 20_000


def deltas(spans: Iterable[tuple[int, int]]) -> list[LevelChange]:
    """`(start_ms, end_ms)` spans as summed +1/-1 changes per timestamp, in time order."""
    out: dict[int, int] = defaultdict(int)
    for start, end in spans:
        if end > start:
            out[start] += 1
            out[end] -= 1
    return sorted((ts, d) for ts, d in out.items() if d)


def levels(changes: Iterable[LevelChange], max_points: int = MAX_POINTS) -> list[LevelChange]:
    """Running level after each change; thinned to about `max_points` steps, peaks kept."""
    steps: list[LevelChange] = []
    level = 0
    for ts, delta in sorted(changes):
        level += delta
        steps.append((ts, level))
    if len(steps) <= max_points:
        return steps
    first, last = steps[0][0], steps[-1][0]
    width = max(1, (last - first) // (max_points // 2) + 1)
    thinned: list[LevelChange] = []
    bucket_of = None
    peak: LevelChange | None = None
    closing: LevelChange | None = None
    for ts, lv in steps:
        bucket = (ts - first) // width
        if bucket != bucket_of:
            if peak is not None and closing is not None:
                thinned.extend([peak] if peak == closing else [peak, closing])
            bucket_of, peak, closing = bucket, (ts, lv), (ts, lv)
        else:
            if peak is None or lv > peak[1]:
                peak = (ts, lv)
            closing = (ts, lv)
    if peak is not None and closing is not None:
        thinned.extend([peak] if peak == closing else [peak, closing])
    return thinned

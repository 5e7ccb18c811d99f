"""Sampling a group's committed offsets over a window (shell) for the pure evaluation in kafka_coop.lag.

Each sample is one OffsetFetch plus one ListOffsets (latest) for the partitions the group committed;
the owned partitions are read once at the end, from the group's members' assignments, because Burrow's
STOPPED needs to know whether anyone could be committing.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kafka_coop.admin import ClusterAdmin
from kafka_coop.events import now_ms
from kafka_coop.lag import GroupLag, OffsetSample, PartitionKey, evaluate_group


class LagSampler:
    """Collects samples of one group; `evaluate()` judges them."""

    def __init__(self, admin: ClusterAdmin, group: str, *, timeout_s: float = 10.0) -> None:
        self.admin = admin
        self.group = group
        self.timeout_s = timeout_s
        self.series: dict[PartitionKey, list[OffsetSample]] = {}

    def sample(self) -> None:
        ts = now_ms()
        for p in self.admin.offsets(self.group, timeout_s=self.timeout_s):
            if p.committed is not None and p.end is not None:
                self.series.setdefault((p.topic, p.partition), []).append(
                    OffsetSample(ts_ms=ts, committed=p.committed, end=p.end)
                )

    def sample_over(
        self, window_s: float, interval_s: float, *, on_sample: Callable[[int], None] | None = None
    ) -> None:
        """Sample now and every `interval_s` until `window_s` has passed since the first sample."""
        start = time.monotonic()
        n = 0
        while True:
            self.sample()
            n += 1
            if on_sample is not None:
                on_sample(n)
            left = window_s - (time.monotonic() - start)
            if left <= 0:
                return
            time.sleep(min(interval_s, left))

    def owned(self) -> set[PartitionKey]:
        live = self.admin.describe_group(self.group, timeout_s=self.timeout_s)
        return {tp for m in live.members for tp in m.assignment}

    def evaluate(self, *, allowed_lag: int = 0) -> GroupLag:
        return evaluate_group(self.series, owned=self.owned(), allowed_lag=allowed_lag)

"""Record logs: what each member processed, so a rollout can be checked for 0 lost records.

Both member kinds write one line per processed record: `client topic partition offset produced_ms
processed_ms`. A record processed twice (after a rebalance without a commit) is a duplicate, not a
loss; a produced offset nobody processed is a loss.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from pydantic import BaseModel


class RecordAudit(BaseModel):
    produced: int
    processed: int  # distinct (partition, offset) pairs
    duplicates: int  # extra deliveries of an already processed record
    lost: int  # produced offsets nobody processed
    lost_examples: list[tuple[str, int, int]] = []


def read_processed(paths: Iterable[Path]) -> Counter[tuple[str, int, int]]:
    """(topic, partition, offset) -> times processed, over all members' record logs."""
    seen: Counter[tuple[str, int, int]] = Counter()
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text(errors="replace").splitlines():
            parts = line.split()
            if len(parts) < 4:
                continue  # a torn last line from a kill
            with contextlib.suppress(ValueError):
                seen[(parts[1], int(parts[2]), int(parts[3]))] += 1
    return seen


def audit(topic: str, acked: Mapping[int, int], processed: Counter[tuple[str, int, int]]) -> RecordAudit:
    """Compare what the producer got acknowledged (offsets 0..n-1 per partition of a fresh topic)."""
    lost: list[tuple[str, int, int]] = []
    for partition, count in sorted(acked.items()):
        lost.extend((topic, partition, o) for o in range(count) if processed[(topic, partition, o)] == 0)
    ours = {k: v for k, v in processed.items() if k[0] == topic}
    return RecordAudit(
        produced=sum(acked.values()),
        processed=len(ours),
        duplicates=sum(v - 1 for v in ours.values() if v > 1),
        lost=len(lost),
        lost_examples=lost[:10],
    )


def audit_when_drained(
    topic: str,
    acked: Mapping[int, int],
    logs: Callable[[], Iterable[Path]],
    *,
    timeout_s: float = 30.0,
    interval_s: float = 0.5,
) -> RecordAudit:
    """Audit once the members caught up with what was produced (or the timeout ran out, then as is)."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = audit(topic, acked, read_processed(logs()))
        if result.lost == 0 or time.monotonic() > deadline:
            return result
        time.sleep(interval_s)

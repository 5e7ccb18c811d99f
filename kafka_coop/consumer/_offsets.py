"""What may be committed: kafka-coop's own record of what the application has finished, per partition.

Pure (no client): the drivers feed it what they handed out and what the application marked, and ask
it for one partition's commit. Two rules, one per mode (docs/consumer.md, "The offset contract"):

- **Drop-in** ("what the application polled past is done", the Java consumer's rule): the commit offset
  is the client's position (the offset after the last record handed out), except that records the
  application still holds (the batch of its last `poll`/`consume`, until it calls again or commits)
  are not done (`commit_offset`).
- **Explicit marks** (`mark_done`, `store_offsets`): the commit offset is the lowest record handed out
  and not marked done (Confluent Parallel Consumer's rule), or, when every record handed out is done,
  the offset after the highest one registered here (`Ledger.commit_point`). The client's position is
  never read: a record a `poll` on another thread has taken but not registered yet is never passed.
  Nothing is committed for a partition with no mark since it was assigned. Contiguity is over the
  records handed out, never over integers: compaction and transaction markers leave offsets that are
  never delivered, and a gap must not stall the commit.

Marks come from any thread or task, in any order, and cost one `deque.append` (atomic under the GIL,
no lock, no client call); they are folded in by the thread that commits, before it commits.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from kafka_coop.events import PartitionKey

# A range mark from `store_offsets(offsets=[...])`: every record of the partition below `offset` is done,
# and the metadata to commit with it (confluent-kafka commits a stored offset's metadata).
RangeMark = tuple[str, int, int, str | None]


class Progress:
    """One partition's records handed out under explicit marks: which are still unfinished, and the
    highest one registered (with its leader epoch)."""

    __slots__ = ("below", "high", "high_epoch", "inflight", "marked", "metadata", "order", "ordered")

    def __init__(self) -> None:
        self.inflight: dict[int, int | None] = {}  # offset -> the record's leader epoch
        self.order: deque[int] = deque()  # offsets in the order they were handed out
        self.ordered = True  # False after a record came out below an earlier one (a seek back)
        self.below = -1  # a range mark: every record below it is done
        self.metadata: str | None = None  # the last range mark's metadata (for that offset only)
        self.high = -1  # the offset after the highest record registered as handed out
        self.high_epoch: int | None = None
        self.marked = False  # a record was marked done (or a range mark made) since it was assigned

    def handed_out(self, offset: int, epoch: int | None) -> None:
        if self.order and offset <= self.order[-1]:
            self.ordered = False
        self.order.append(offset)
        self.inflight[offset] = epoch
        if offset >= self.high:
            self.high, self.high_epoch = offset + 1, epoch

    def done(self, offset: int) -> None:
        self.inflight.pop(offset, None)
        self.marked = True

    def done_below(self, offset: int, metadata: str | None = None) -> None:
        if offset >= self.below:
            self.below, self.metadata = offset, metadata
        self.marked = True

    def lowest_unfinished(self) -> tuple[int, int | None] | None:
        """The lowest record handed out and not done, with its leader epoch, or None."""
        below, inflight, order = self.below, self.inflight, self.order
        if not self.ordered:  # rare: rebuild in offset order
            live = sorted(o for o in inflight if o >= below)
            self.inflight, self.order, self.ordered = {o: inflight[o] for o in live}, deque(live), True
            return (live[0], self.inflight[live[0]]) if live else None
        while order and (order[0] not in inflight or order[0] < below):
            inflight.pop(order.popleft(), None)
        return (order[0], inflight[order[0]]) if order else None


class Ledger:
    """Explicit marks of one consumer: what was handed out (by the polling side) and what is done (by
    anyone), folded into per-partition `Progress` on demand by the committing thread."""

    def __init__(self) -> None:
        # A message, or a list of messages (a `consume` batch): appended as they are handed out.
        self.handed: deque[Any] = deque()
        # A message marked done, or a RangeMark: appended by any thread or task.
        self.marks: deque[Any] = deque()
        self.parts: dict[PartitionKey, Progress] = {}
        # The last record of each partition done in hand-out order (the sequential loop's fast path:
        # no `Progress` bookkeeping, only this store), for the offset after the highest record done.
        self.last_done: dict[PartitionKey, Any] = {}
        # Partitions an eager rebalance revoked, kept until the assignment that ends it: one assigned
        # again takes its records back (a mark of one handed out before still counts, as confluent
        # accepts a store for a partition assigned again; one not marked is still unfinished).
        self.retired: dict[PartitionKey, tuple[Progress | None, Any]] = {}

    def fold(self) -> None:
        """Take in what was handed out and what was marked (a mark is always for a record handed out
        before it: the application cannot mark what it was not given).

        Marks that come in the order their records were handed out (the sequential loop: poll, process,
        mark) are matched by identity and dropped together: a record done in order needs no bookkeeping,
        only the partition's last such record is kept. Anything else goes through `Progress`."""
        handed, marks, parts, last_done = self.handed, self.marks, self.parts, self.last_done
        while marks:
            mark = marks[0]
            if type(mark) is tuple:  # a range mark: applies whenever its records are taken in
                marks.popleft()
                progress = parts.get((mark[0], mark[1]))
                if progress is None:  # nothing handed out yet: the offset is committed as given
                    progress = parts[(mark[0], mark[1])] = Progress()
                progress.done_below(mark[2], mark[3] if len(mark) > 3 else None)
                continue
            if handed:
                item = handed[0]
                if item is mark:
                    handed.popleft()
                    marks.popleft()
                    last_done[(mark.topic(), mark.partition())] = mark
                    continue
                if type(item) is list and item and item[0] is mark and self._take_in_order(item):
                    handed.popleft()
                    continue
            progress = parts.get((mark.topic(), mark.partition()))
            if progress is not None and mark.offset() in progress.inflight:
                marks.popleft()
                progress.done(mark.offset())
            elif handed:  # its record is further on: take in what comes before it first
                self._take_in(handed.popleft())
            else:  # a partition no longer owned, or a record never handed out
                marks.popleft()
        while handed:
            self._take_in(handed.popleft())

    def _take_in(self, item: Any) -> None:
        parts = self.parts
        for msg in item if type(item) is list else (item,):
            if msg.error() is not None:
                continue
            key = (msg.topic(), msg.partition())
            progress = parts.get(key)
            if progress is None:
                progress = parts[key] = Progress()
            progress.handed_out(msg.offset(), msg.leader_epoch())

    def _take_in_order(self, batch: list[Any]) -> bool:
        """Pop the marks of `batch`'s records if they come first and in its order; else leave them.
        (Other threads append meanwhile: the deque is only ever popped and pushed back at its left.)"""
        marks = self.marks
        if len(marks) < len(batch):
            return False
        taken = []
        for record in batch:
            mark = marks.popleft()
            taken.append(mark)
            if mark is not record:
                marks.extendleft(reversed(taken))
                return False
        last_done = self.last_done
        for record in batch:
            if record.error() is None:
                last_done[(record.topic(), record.partition())] = record
        return True

    def lowest_unfinished(self, key: PartitionKey) -> int | None:
        progress = self.parts.get(key)
        lowest = None if progress is None else progress.lowest_unfinished()
        return None if lowest is None else lowest[0]

    def range_mark(self, key: PartitionKey) -> int:
        progress = self.parts.get(key)
        return -1 if progress is None else progress.below

    def handed_high(self, key: PartitionKey) -> int:
        """The offset after the highest record of `key` registered as handed out (fold first), or -1."""
        progress, last = self.parts.get(key), self.last_done.get(key)
        high = -1 if last is None else last.offset() + 1
        return high if progress is None else max(high, progress.high)

    def commit_point(self, key: PartitionKey) -> tuple[int, int | None, str | None] | None:
        """The explicit-marks commit of one partition (fold first): (offset, leader epoch, metadata), or
        None when nothing was marked since it was assigned (as librdkafka commits nothing unstored).

        The offset is the lowest record handed out and not done; when every record handed out is done,
        the offset after the highest one registered (records a call took but nobody registered yet are
        never passed: the client's position is not read). A range mark above that is committed as
        given, with its metadata (a later commit of another offset carries none). The epoch is the
        committed record's: the unfinished record's, or the highest done record's."""
        progress, last = self.parts.get(key), self.last_done.get(key)
        if last is None and (progress is None or not progress.marked):
            return None
        offset, epoch = -1, None
        if last is not None:
            offset, epoch = last.offset() + 1, last.leader_epoch()
        if progress is None:
            return offset, epoch, None
        lowest = progress.lowest_unfinished()
        if lowest is not None:
            offset, epoch = lowest
        elif progress.high > offset:
            offset, epoch = progress.high, progress.high_epoch
        if progress.below >= 0 and progress.below >= offset:
            return progress.below, epoch if progress.below == offset else None, progress.metadata
        return offset, epoch, None

    def release(self, keys: Iterable[PartitionKey], *, retire: bool = False) -> None:
        """The partitions left: forget them (marks still queued for them are dropped when folded), or,
        `retire` (an eager revoke), keep them aside until the next assignment (`assigned`)."""
        self.fold()
        for key in keys:
            progress, last = self.parts.pop(key, None), self.last_done.pop(key, None)
            if retire and (progress is not None or last is not None):
                self.retired[key] = (progress, last)

    def assigned(self, keys: Iterable[PartitionKey]) -> None:
        """An assignment: the retired partitions among `keys` take their records back; the others
        retired are forgotten (another member may own them now)."""
        retired, self.retired = self.retired, {}
        for key in keys:
            if key in retired and key not in self.parts and key not in self.last_done:
                progress, last = retired[key]
                if progress is not None:
                    self.parts[key] = progress
                if last is not None:
                    self.last_done[key] = last


def first_offsets(messages: Iterable[Any]) -> dict[PartitionKey, int]:
    """The first offset of each partition among `messages` (error events carry no record)."""
    first: dict[PartitionKey, int] = {}
    for msg in messages:
        if msg is None or msg.error() is not None:
            continue
        key = (msg.topic(), msg.partition())
        offset = msg.offset()
        if key not in first or offset < first[key]:
            first[key] = offset
    return first


def commit_offset(
    position: int | None,
    floor: int | None,
    *,
    unfinished: int | None = None,
    held: int | None = None,
    range_mark: int = -1,
) -> int | None:
    """The offset to commit for one partition (every record below it is done), or None for nothing.

    `position`: the client's position (the offset after the last record handed out; None or negative
    when it has none, e.g. right after a seek). `floor`: where kafka-coop last sought the partition to
    (what it handed out before that is done; the position is reset by a seek). `unfinished` (explicit
    marks): the lowest record handed out and not done. `held` (drop-in): the first record the
    application still holds. `range_mark`: a `store_offsets` offset, committed as given when no record
    below it is unfinished.
    """
    reached = position if position is not None and position >= 0 else floor
    if range_mark >= 0:
        reached = range_mark if reached is None else max(reached, range_mark)
    if reached is None:
        return None
    for limit in (unfinished, held):
        if limit is not None and limit < reached:
            reached = limit
    return reached

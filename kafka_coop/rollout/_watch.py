"""What `kafka-coop watch` and `rollout run`'s view show of a group (pure): one record per look.

Members (name, family, protocol, partitions, lag), the group's state, type and assignor, and the
partitions no member owns now, each with the first look that found it unowned (since when).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kafka_coop._vocab import SeenFamily, SeenProtocol
from kafka_coop.events import PartitionKey
from kafka_coop.inspection import GroupSnapshot


class WatchedMember(BaseModel):
    """One member's row of a look: its facts under MemberSnapshot's names (schema v2; v1 called them
    `family` and `protocol`)."""

    model_config = ConfigDict(frozen=True)

    name: str  # group.instance.id, else client.id
    client_family: SeenFamily
    rebalance_protocol: SeenProtocol
    partitions: int
    lag: int | None


class Unowned(BaseModel):
    model_config = ConfigDict(frozen=True)

    topic: str
    partition: int
    since_ms: int  # the first look that found it unowned (of this watch)


class WatchRecord(BaseModel):
    """One look of `kafka-coop watch -o json` (one JSON object per line)."""

    model_config = ConfigDict(frozen=True)

    v: Literal[2] = 2
    group: str
    taken_ms: int
    exists: bool
    state: str
    group_type: str
    selected_assignor: str | None
    members: tuple[WatchedMember, ...]
    total_lag: int | None
    unowned: tuple[Unowned, ...]


def unowned_now(snap: GroupSnapshot) -> list[PartitionKey]:
    """Partitions of the group's topics (those it has offsets for) that no member owns in this look."""
    owned = {tp for m in snap.members for tp in m.assignment}
    return sorted({(p.topic, p.partition) for p in snap.lag} - owned)


def watch_record(
    snap: GroupSnapshot, since: Mapping[PartitionKey, int]
) -> tuple[WatchRecord, dict[PartitionKey, int]]:
    """The record of one look, and the since-when of every partition unowned now (for the next look)."""
    lag_of = {(p.topic, p.partition): p.lag for p in snap.lag}
    unowned = unowned_now(snap)
    now_since = {tp: since.get(tp, snap.taken_ms) for tp in unowned}
    members = []
    for m in sorted(snap.members, key=lambda m: m.instance_id or m.client_id):
        lags = [lag_of[tp] for tp in m.assignment if lag_of.get(tp) is not None]
        members.append(
            WatchedMember(
                name=m.instance_id or m.client_id,
                client_family=m.client_family.value,
                rebalance_protocol=m.rebalance_protocol.value,
                partitions=len(m.assignment),
                lag=sum(x for x in lags if x is not None) if lags else None,
            )
        )
    record = WatchRecord(
        group=snap.group,
        taken_ms=snap.taken_ms,
        exists=snap.exists,
        state=snap.state,
        group_type=str(snap.group_type),
        selected_assignor=snap.selected_assignor or None,
        members=tuple(members),
        total_lag=snap.total_lag,
        unowned=tuple(Unowned(topic=t, partition=p, since_ms=now_since[(t, p)]) for t, p in unowned),
    )
    return record, now_since


class PauseTally(BaseModel):
    """The pause a walk caused so far, as its looks saw it (the runner's, the gates' and watch's).

    Measured between looks: from a look that finds a partition no member owns to the next look, that
    partition counts as unowned. `wall_ms` is the time with any partition unowned (what `rollout run`'s
    view calls the pause), `partition_ms` the same summed over partitions. A look older than the last
    one counted changes nothing.
    """

    model_config = ConfigDict(frozen=True)

    started_ms: int | None = None
    last_ms: int | None = None
    last_unowned: int = 0  # partitions unowned in the last look
    wall_ms: int = 0
    partition_ms: int = 0

    def seen(self, taken_ms: int, unowned: int) -> PauseTally:
        """The tally after one more look, taken at `taken_ms`, that found `unowned` partitions unowned."""
        if self.last_ms is None:
            return self.model_copy(
                update={"started_ms": taken_ms, "last_ms": taken_ms, "last_unowned": unowned}
            )
        if taken_ms < self.last_ms:
            return self
        gap = taken_ms - self.last_ms
        return self.model_copy(
            update={
                "last_ms": taken_ms,
                "last_unowned": unowned,
                "wall_ms": self.wall_ms + (gap if self.last_unowned else 0),
                "partition_ms": self.partition_ms + gap * self.last_unowned,
            }
        )

    def look(self, snap: GroupSnapshot) -> PauseTally:
        return self.seen(snap.taken_ms, len(unowned_now(snap)))

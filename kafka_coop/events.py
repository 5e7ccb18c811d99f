"""The rebalance event stream: a closed set of typed events and the pure ownership bookkeeping.

Kinds: `assigned`, `revoked`, `lost` are the three rebalance kinds whose meaning never changes;
`started` and `closed` are lifecycle markers (a member that vanishes without `closed` was killed);
`warning` says, in `error`, why the member cannot be assigned what it subscribed to (a missing or
unauthorized topic), repeated while it lasts; it changes no ownership. `reconfigured`: the member rebuilt
its client in-process on a control record (kafka_coop.control), after its first assignment on the new
settings, or back on its old ones when they failed (`error` says why); it changes no ownership.
`partitions` is always the delta of this callback; `owned` is the member's assignment after it.
`process` names one consumer instance for its whole life (host, pid and a random tag), so instances that
share a client id, or a dynamic member whose member id changes on each rejoin, stay one member apiece.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterable
from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from kafka_coop._vocab import RebalanceProtocol

EVENT_VERSION: Final = 1

EventKind = Literal["assigned", "revoked", "lost", "started", "closed", "warning", "reconfigured"]

# Integers are 64-bit and callback times finite: what every reader (Python, Spark, Java) can hold.
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
CallbackMs = Annotated[float, Field(ge=0, le=1e12, allow_inf_nan=False)]
PartitionKey = tuple[str, Int64]
"""(topic, partition): how every kafka-coop module names a partition. Not confluent-kafka's
`TopicPartition` class, which the client modules use under its own name."""
CommittedOffset = tuple[str, Int64, Int64]


class RebalanceEvent(BaseModel):
    """One JSON line per event; the schema is a public contract (docs/contracts.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    v: Literal[1] = EVENT_VERSION
    ts_ms: Int64
    seq: Int64
    group: str
    member_id: str
    instance_id: str | None
    client_id: str
    protocol: RebalanceProtocol
    kind: EventKind
    partitions: tuple[PartitionKey, ...]
    owned: tuple[PartitionKey, ...]
    callback_ms: CallbackMs
    committed: tuple[CommittedOffset, ...] | None = None
    error: str | None = None
    commit_ms: CallbackMs | None = None  # revoked: how long the commit of the revoked partitions took
    process: str | None = None  # this consumer instance, for its life (optional: older events have none)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_process_id() -> str:
    """`host:pid:tag`, the tag random per consumer instance (two consumers in one process differ)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Ownership:
    """What a member owns, updated by each callback the way its protocol defines.

    Eager: `assigned` carries the whole new assignment and `revoked` everything, so assignment replaces.
    Cooperative and KIP-848: callbacks carry deltas, so they add and remove.
    """

    def __init__(self, protocol: RebalanceProtocol) -> None:
        self.protocol = protocol
        self._owned: set[PartitionKey] = set()

    @property
    def owned(self) -> tuple[PartitionKey, ...]:
        return tuple(sorted(self._owned))

    def holds(self, partition: PartitionKey) -> bool:
        return partition in self._owned

    def apply(self, kind: EventKind, partitions: Iterable[PartitionKey]) -> tuple[PartitionKey, ...]:
        parts = set(partitions)
        if kind == "assigned":
            self._owned = parts if self.protocol == "eager" else self._owned | parts
        elif kind in ("revoked", "lost"):
            self._owned -= parts
        return self.owned

    def replace(self, partitions: Iterable[PartitionKey]) -> tuple[PartitionKey, ...]:
        """Take the client's real assignment as the truth, e.g. when librdkafka refused or undid a call."""
        self._owned = set(partitions)
        return self.owned


class EventStamp:
    """Per-member sequence numbers and identity: `seq` is monotonic for the life of the member."""

    def __init__(
        self,
        group: str,
        client_id: str,
        instance_id: str | None,
        protocol: RebalanceProtocol,
        process: str | None = None,
    ) -> None:
        self.group = group
        self.client_id = client_id
        self.instance_id = instance_id
        self.protocol = protocol
        self.process = process or new_process_id()
        self._seq = 0

    def make(
        self,
        kind: EventKind,
        *,
        member_id: str,
        partitions: Iterable[PartitionKey],
        owned: tuple[PartitionKey, ...],
        callback_ms: float,
        committed: Iterable[CommittedOffset] | None = None,
        error: str | None = None,
        commit_ms: float | None = None,
    ) -> RebalanceEvent:
        event = RebalanceEvent(
            ts_ms=now_ms(),
            seq=self._seq,
            group=self.group,
            member_id=member_id,
            instance_id=self.instance_id,
            client_id=self.client_id,
            protocol=self.protocol,
            kind=kind,
            partitions=tuple(sorted(partitions)),
            owned=owned,
            callback_ms=round(callback_ms, 3),
            committed=None if committed is None else tuple(sorted(committed)),
            error=error,
            commit_ms=None if commit_ms is None else round(commit_ms, 3),
            process=self.process,
        )
        self._seq += 1
        return event

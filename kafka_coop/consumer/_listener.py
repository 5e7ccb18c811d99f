"""The listener contract: the hooks a service gives a kafka-coop consumer, their order and guarantees."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from kafka_coop.errors import InvalidInput
from kafka_coop.events import PartitionKey

Partitions: TypeAlias = list[PartitionKey]
StartOffsets: TypeAlias = Mapping[PartitionKey, int]
# A hook is a plain function, or (CoopAIOConsumer) a coroutine function.
Hook: TypeAlias = Callable[[Partitions], Awaitable[None] | None]
StartOffsetsHook: TypeAlias = Callable[[Partitions], StartOffsets | Awaitable[StartOffsets | None] | None]
# confluent-style `subscribe(on_assign=, on_revoke=, on_lost=)` callbacks: `(consumer, partitions)`.
LegacyCallback: TypeAlias = Callable[[Any, list[Any]], Any]


class RebalanceListener:
    """The hooks of a kafka-coop consumer: one typed listener, with the order and offset guarantees.

    Subclass it and override what you need (or pass the same functions as `start_offsets=`,
    `on_assigned=`, `on_revoked=`, `on_lost=`). Partitions are `[(topic, partition), ...]`. With
    `CoopAIOConsumer` every method may be `async def`; hooks run on the event loop. A hook that raises an
    `Exception` is logged and recorded in the event's `error`; the rebalance goes on. A `BaseException`
    (KeyboardInterrupt, SystemExit, asyncio.CancelledError) also lets the rebalance finish — commit,
    unassign, `owned`, event — and is then raised from the `poll`/`consume` that ran the hook; the
    records that call had taken are not handed out and not lost (fetched again).

    Assignment — `start_offsets` → assign → `on_assigned` → `assigned` event:
      `start_offsets(partitions)` runs *before* the partitions are assigned and may return
      `{(topic, partition): offset}` for any of them (e.g. offsets kept in your database; also
      `confluent_kafka.OFFSET_BEGINNING` / `OFFSET_END`). Fetching starts there, under eager,
      cooperative and KIP-848 alike. Partitions it leaves out start at the group's committed offset, or
      `auto.offset.reset`. `on_assigned(partitions)` runs after they are assigned (`owned` includes
      them); `seek`, `pause` work here: a seek is applied as soon as librdkafka starts fetching the
      partition, and nothing fetched before it is handed out.

    Revocation — `on_revoked` → commit → unassign → `revoked` event:
      `on_revoked(partitions)` runs while the partitions are still yours: finish or abandon work in
      flight; what finishes is marked done meanwhile (workers' `mark_done` never waits for the consumer).
      Then what is done is committed synchronously, and only then are the partitions released, so the
      next owner resumes right after it. The event's `committed` lists the committed offsets of the
      revoked partitions. (With `transactional=True` the transaction owns the commit: commit or abort
      it here; kafka-coop commits nothing.)

    Loss — unassign → `on_lost` → `lost` event:
      the partitions already belong to someone else (session expired, poll interval exceeded, member
      fenced, fatal error). Nothing is committed: a commit now could overwrite the new owner's. Undo
      side effects of uncommitted work here. If the loss is only discovered by the revoke's commit
      (the broker refused it as from a stale member), `on_revoked` has run first, then `on_lost`.
    """

    def start_offsets(self, partitions: Partitions) -> StartOffsets | Awaitable[StartOffsets | None] | None:
        return None

    def on_assigned(self, partitions: Partitions) -> Awaitable[None] | None:
        return None

    def on_revoked(self, partitions: Partitions) -> Awaitable[None] | None:
        return None

    def on_lost(self, partitions: Partitions) -> Awaitable[None] | None:
        return None


@dataclass(frozen=True, slots=True)
class Hooks:
    """The user's hooks, whichever way they were given."""

    start_offsets: StartOffsetsHook | None = None
    on_assigned: Hook | None = None
    on_revoked: Hook | None = None
    on_lost: Hook | None = None

    @classmethod
    def of(
        cls,
        listener: RebalanceListener | None = None,
        *,
        start_offsets: StartOffsetsHook | None = None,
        on_assigned: Hook | None = None,
        on_revoked: Hook | None = None,
        on_lost: Hook | None = None,
    ) -> Hooks:
        if listener is None:
            return cls(start_offsets, on_assigned, on_revoked, on_lost)
        if any(h is not None for h in (start_offsets, on_assigned, on_revoked, on_lost)):
            raise InvalidInput(
                "Both listener= and on_*/start_offsets= hooks were given.",
                hint="Pass either one RebalanceListener or the separate hook functions.",
            )
        return cls(listener.start_offsets, listener.on_assigned, listener.on_revoked, listener.on_lost)


@dataclass(frozen=True, slots=True)
class LegacyCallbacks:
    """confluent-style `subscribe(on_assign=, on_revoke=, on_lost=)` callbacks: `(consumer, partitions)`."""

    consumer: Any = None
    on_assign: LegacyCallback | None = None
    on_revoke: LegacyCallback | None = None
    on_lost: LegacyCallback | None = None

"""One look's answers -> GroupSnapshot (pure): what `_gather` fetched, put together.

Two steps, so the members (most of the CPU of a look) are inferred while the slower reads, offsets and
broker configs, are still in flight.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_coop.inspection._infer import MemberInput, broker_facts, infer_generation, infer_members
from kafka_coop.inspection._model import BrokerFacts, GroupSnapshot, MemberSnapshot, PartitionLag

if TYPE_CHECKING:  # the admin shell's answer types, built by `_gather`; this module loads no client
    from kafka_coop.admin import GroupDescription, GroupMetadata, PartitionOffsets
    from kafka_coop.manifest import Manifest


@dataclass(frozen=True)
class GroupAnswers:
    """What the cluster said about the group itself: its description, the classic view with the
    members' protocol bytes (None if not classic), and the manifests read for it."""

    live: GroupDescription
    raw: GroupMetadata | None = None
    manifests: tuple[Manifest, ...] = ()
    manifests_error: str | None = None

    @property
    def exists(self) -> bool:
        return not (self.live.state == "dead" and not self.live.members)

    @property
    def selected_assignor(self) -> str:
        return self.live.assignor or (self.raw.protocol if self.raw is not None else "")


@dataclass(frozen=True)
class LaterAnswers:
    """The reads that take longest: the broker's configs (or why they could not be read) and the
    committed and log end offsets (None: not read)."""

    broker: tuple[int, dict[str, str]] | None = None
    broker_error: str | None = None
    offsets: tuple[PartitionOffsets, ...] | None = None


def assemble_members(group: str, answers: GroupAnswers) -> tuple[MemberSnapshot, ...]:
    """Every member with what can be told about it (see `_infer`)."""
    raw_by_id = {m.member_id: m for m in answers.raw.members} if answers.raw is not None else {}
    inputs = [
        MemberInput(
            member_id=m.member_id,
            client_id=m.client_id,
            host=m.host,
            instance_id=m.instance_id,
            assignment=m.assignment,
            subscription=raw_by_id[m.member_id].subscription if m.member_id in raw_by_id else None,
            assignment_bytes=raw_by_id[m.member_id].assignment if m.member_id in raw_by_id else None,
        )
        for m in answers.live.members
    ]
    return infer_members(group, answers.live.type, answers.selected_assignor, inputs, list(answers.manifests))


def partition_lag(offsets: Sequence[PartitionOffsets]) -> tuple[PartitionLag, ...]:
    return tuple(
        PartitionLag(
            topic=o.topic,
            partition=o.partition,
            committed=o.committed,
            end_offset=o.end if o.end is not None else -1,
            lag=(o.end - o.committed) if o.end is not None and o.committed is not None else None,
        )
        for o in offsets
    )


def assemble_snapshot(
    group: str,
    answers: GroupAnswers,
    members: tuple[MemberSnapshot, ...],
    later: LaterAnswers,
    *,
    taken_ms: int,
    manifests_topic: str | None,
) -> GroupSnapshot:
    """The snapshot of one look; `taken_ms` is when it was taken (when its offsets came back, for a
    lag trend)."""
    live, raw = answers.live, answers.raw
    if later.broker is not None:
        broker = broker_facts(*later.broker)
    else:
        broker = BrokerFacts(configs_error=later.broker_error)
    notes = []
    if raw is None and live.type == "consumer":
        notes.append("consumer-protocol group: member protocol metadata is not visible; types are inferred")
    if live.state in ("preparing_rebalance", "completing_rebalance"):
        notes.append("a rebalance is in progress: member metadata may be from the previous generation")
    return GroupSnapshot(
        group_id=group,
        taken_ms=taken_ms,
        exists=answers.exists,
        type=live.type,
        state=live.state,
        protocol_type=raw.protocol_type if raw is not None else None,
        assignor=answers.selected_assignor,
        coordinator=live.coordinator,
        generation=infer_generation(members),
        members=members,
        lag=partition_lag(later.offsets) if later.offsets is not None and answers.exists else (),
        broker=broker,
        manifests_topic=manifests_topic,
        manifests_error=answers.manifests_error,
        notes=tuple(notes),
    )

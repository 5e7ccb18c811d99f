"""One look's answers -> GroupSnapshot (pure): what `_gather` fetched, put together.

Two steps, so the members (most of the CPU of a look) are inferred while the slower reads, offsets and
broker configs, are still in flight.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_coop.inspection._infer import broker_facts, infer_generation, infer_members
from kafka_coop.inspection._model import (
    BrokerFacts,
    CoordinatorView,
    GroupSnapshot,
    MemberSnapshot,
    PartitionLag,
)

if TYPE_CHECKING:  # the shells' answer types, built by `_gather`; this module loads no client
    from kafka_coop.admin import GroupDescription, GroupMetadata, PartitionOffsets
    from kafka_coop.coordinator import CoordinatorAnswer
    from kafka_coop.manifest import Manifest


@dataclass(frozen=True)
class GroupAnswers:
    """What the cluster said about the group itself: its description, the classic view with the
    members' protocol bytes (None if not classic), the manifests read for it, and the coordinator's own
    view (ConsumerGroupDescribe; None, with a note, when it was not read) with the group's config
    overrides."""

    live: GroupDescription
    raw: GroupMetadata | None = None
    manifests: tuple[Manifest, ...] = ()
    manifests_error: str | None = None
    coordinator: CoordinatorAnswer | None = None
    group_configs: Mapping[str, str] = field(default_factory=dict)
    coordinator_note: str = ""

    @property
    def exists(self) -> bool:
        return not (self.live.state == "dead" and not self.live.members)

    @property
    def selected_assignor(self) -> str:
        return self.live.selected_assignor or (self.raw.protocol if self.raw is not None else "")

    @property
    def protocol_type(self) -> str | None:
        return self.raw.protocol_type if self.raw is not None else self.live.protocol_type

    @property
    def view_api(self) -> str:
        return (self.coordinator.api or "") if self.coordinator is not None else ""

    @property
    def state(self) -> str:
        """librdkafka reads a consumer group's Assigning and Reconciling states as unknown; the
        coordinator names them."""
        described = self.coordinator.described if self.coordinator is not None else None
        if described is None or self.live.group_type != "consumer" or not described.group_state:
            return self.live.state
        return described.group_state.lower()


@dataclass(frozen=True)
class LaterAnswers:
    """The reads that take longest: the broker's configs (or why they could not be read) and the
    committed and log end offsets (None: not read)."""

    broker: tuple[int, dict[str, str]] | None = None
    broker_error: str | None = None
    offsets: tuple[PartitionOffsets, ...] | None = None


def assemble_members(group: str, answers: GroupAnswers) -> tuple[MemberSnapshot, ...]:
    """Every member with what can be told about it (see `_infer`), the coordinator's word first."""
    raw_by_id = {m.member_id: m for m in answers.raw.members} if answers.raw is not None else {}
    described = answers.coordinator.described if answers.coordinator is not None else None
    by_id = {m.member_id: m for m in described.members} if described is not None else {}
    return infer_members(
        group,
        answers.live.group_type,
        answers.selected_assignor,
        [(m, raw_by_id.get(m.member_id), by_id.get(m.member_id)) for m in answers.live.members],
        list(answers.manifests),
        protocol_type=answers.protocol_type,
        view_api=answers.view_api,
    )


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
    live, raw, answer = answers.live, answers.raw, answers.coordinator
    if later.broker is not None:
        broker = broker_facts(
            *later.broker,
            features=answer.features if answer is not None else None,
            group_configs=answers.group_configs,
            release=answer.kafka_version if answer is not None else None,
        )
    else:
        broker = BrokerFacts(configs_error=later.broker_error)
    api = answers.view_api
    notes = []
    if raw is None and live.group_type == "consumer" and not api:
        notes.append("consumer-protocol group: member protocol metadata is not visible; types are inferred")
    if api == "ConsumerGroupDescribe v0":
        notes.append("the coordinator answered ConsumerGroupDescribe v0: epochs, no member types (inferred)")
    if answers.coordinator_note and live.group_type == "consumer":
        notes.append(answers.coordinator_note)
    if live.state in ("preparing_rebalance", "completing_rebalance"):
        notes.append("a rebalance is in progress: member metadata may be from the previous generation")
    return GroupSnapshot(
        group=group,
        taken_ms=taken_ms,
        exists=answers.exists,
        group_type=live.group_type,
        state=answers.state,
        protocol_type=answers.protocol_type,
        selected_assignor=answers.selected_assignor,
        coordinator=live.coordinator,
        generation=infer_generation(members),
        members=members,
        lag=partition_lag(later.offsets) if later.offsets is not None and answers.exists else (),
        broker=broker,
        manifests_topic=manifests_topic,
        manifests_error=answers.manifests_error,
        notes=tuple(notes),
        coordinator_view=_view(answer, answers.coordinator_note),
    )


def _view(answer: CoordinatorAnswer | None, note: str) -> CoordinatorView:
    if answer is None:
        return CoordinatorView(note=note)
    if answer.described is None:
        return CoordinatorView(note=f"{answer.status}: {answer.reason}" if answer.reason else answer.status)
    return CoordinatorView(
        api=answer.api or "",
        group_epoch=answer.described.group_epoch,
        assignment_epoch=answer.described.assignment_epoch,
    )

"""GroupSnapshot: everything one look at a live group tells, with the source of every inferred fact.

No Kafka API says which rebalance protocols a member supports (docs/protocols.md "What can be seen of a live
group"). So each per-member fact is a `Fact`: its value plus whether the group's coordinator said it
(*broker*: ConsumerGroupDescribe, for consumer-protocol groups), a member *declared* it (its manifest),
kafka-coop *inferred* it from a named signal, or it is *unknown*. Renderers show the source; gates treat
`unknown` as not proven.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from kafka_coop._vocab import SeenFamily, SeenGroupProtocol, SeenProtocol
from kafka_coop.events import PartitionKey
from kafka_coop.manifest import Manifest
from kafka_coop.protocol import ConsumerProtocolSubscription

T = TypeVar("T")

Source = Literal["broker", "declared", "inferred", "unknown"]


class Fact(BaseModel, Generic[T]):
    model_config = ConfigDict(frozen=True)

    value: T
    source: Source
    signal: str = ""

    def __str__(self) -> str:
        return f"{self.value} ({self.source}{': ' + self.signal if self.signal else ''})"


class MemberSnapshot(BaseModel):
    """One member, from inspection to the plan: a live one as inspection read it, or a fleet file's entry
    (`rollout/_fleet.py` fills this record from it, its facts marked `declared` by the fleet file: its
    `name` as client id, no member id or host, `count` identical members)."""

    model_config = ConfigDict(frozen=True)

    member_id: str
    # None: a dynamic member; a fleet file's `static: true` gives the entry's `name` (empty if it has none)
    instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[PartitionKey, ...]
    member_type: Fact[SeenGroupProtocol]
    client_family: Fact[SeenFamily]
    rebalance_protocol: Fact[SeenProtocol]
    assignors: Fact[tuple[str, ...]]
    # the client library's version: declared in a manifest, or read off a default client id that
    # carries it (kafka-python-3.0.12); the planner refuses a path a known-older version cannot take
    client_version: Fact[str | None] = Fact(value=None, source="unknown")
    subscription: ConsumerProtocolSubscription | None = None
    subscription_error: str | None = None
    assignment_user_data: bool | None = None  # its assignment carries userData (blocks KIP-848); None: unseen
    manifest: Manifest | None = None
    # The coordinator's own view (ConsumerGroupDescribe; None where it gave none): the member's epoch,
    # the assignment it is being moved to, and the regex it subscribes with (evaluated on the broker).
    member_epoch: int | None = None
    target_assignment: tuple[PartitionKey, ...] | None = None
    subscribed_regex: str | None = None
    topics: tuple[str, ...] = ()  # the topics it consumes today, where known (its subscription, a fleet file)
    count: int = Field(default=1, ge=1)  # the identical members it stands for: a fleet file's `count`

    @field_serializer("subscription", when_used="json")
    def _subscription_json(self, sub: ConsumerProtocolSubscription | None) -> dict[str, Any] | None:
        """userData is opaque bytes (Java's sticky assignors put binary in it): base64 in JSON."""
        if sub is None:
            return None
        out = sub.model_dump(mode="python")
        out["owned_partitions"] = [list(tp) for tp in sub.owned_partitions]
        out["topics"] = list(sub.topics)
        if sub.user_data is not None:
            out["user_data"] = base64.b64encode(sub.user_data).decode("ascii")
        return out

    @field_validator("subscription", mode="before")
    @classmethod
    def _subscription_from_json(cls, value: Any) -> Any:
        """The inverse of the JSON form: a base64 `user_data` string back to its bytes."""
        if isinstance(value, dict) and isinstance(value.get("user_data"), str):
            try:
                raw = base64.b64decode(value["user_data"], validate=True)
            except (binascii.Error, ValueError):
                return value
            return {**value, "user_data": raw}
        return value

    @property
    def name(self) -> str:
        """How tables and check reasons name a member: its static id, else its client id (a fleet file's
        `name`), else its member id; a fleet file's entry without a name: `3 x librdkafka`."""
        return (
            self.instance_id
            or self.client_id
            or self.member_id
            or f"{self.count} x {self.client_family.value}"
        )

    @property
    def kafka_coop(self) -> bool:
        """Its manifest names kafka-coop: `rollout run` changes it live, over the control topic."""
        return self.manifest is not None and "kafka-coop" in self.manifest.libraries


class PartitionLag(BaseModel):
    model_config = ConfigDict(frozen=True)

    topic: str
    partition: int
    committed: int | None
    end_offset: int
    lag: int | None


class BrokerFacts(BaseModel):
    """The broker settings the planner and the KIP-848 gates need; None where the broker did not say."""

    model_config = ConfigDict(frozen=True)

    broker_id: int | None = None
    kafka_version: Fact[str] = Fact(value="unknown", source="unknown")
    group_version: Fact[str] = Fact(value="unknown", source="unknown")
    rebalance_protocols: tuple[str, ...] | None = None
    migration_policy: str | None = None
    group_max_size: int | None = None
    group_consumer_max_size: int | None = None
    # KIP-848's session, on the broker (group.consumer.*) and the group's own override
    consumer_session_ms: int | None = None
    consumer_min_session_ms: int | None = None
    consumer_max_session_ms: int | None = None
    consumer_heartbeat_ms: int | None = None
    group_session_ms: int | None = None  # the group's consumer.session.timeout.ms, when set
    configs_error: str | None = None


class CoordinatorView(BaseModel):
    """How the coordinator described the group: `api` names the request (empty: none answered, and
    `note` says why, e.g. a classic group or a broker without KIP-848); the group's epochs come with it."""

    model_config = ConfigDict(frozen=True)

    api: str = ""  # ConsumerGroupDescribe v1 | ConsumerGroupDescribe v0 | ""
    group_epoch: int | None = None
    assignment_epoch: int | None = None
    note: str = ""


class GroupSnapshot(BaseModel):
    """Its JSON (`describe --output json`, schema v1) keeps the names it was published with: `group_id`,
    `type`, `assignor`; the code reads it by the names every other model uses."""

    model_config = ConfigDict(frozen=True, validate_by_name=True, validate_by_alias=True)

    group: str = Field(alias="group_id")
    taken_ms: int
    exists: bool
    group_type: SeenGroupProtocol = Field(alias="type")
    state: str
    protocol_type: str | None
    selected_assignor: str = Field(alias="assignor")
    coordinator: int | None
    generation: Fact[int | None] = Fact(value=None, source="unknown")
    members: tuple[MemberSnapshot, ...]
    lag: tuple[PartitionLag, ...] = ()
    broker: BrokerFacts = BrokerFacts()
    manifests_topic: str | None = None
    manifests_error: str | None = None
    notes: tuple[str, ...] = ()
    coordinator_view: CoordinatorView = CoordinatorView()

    @property
    def member_count(self) -> int:
        return len(self.members)

    @property
    def total_lag(self) -> int | None:
        known = [p.lag for p in self.lag if p.lag is not None]
        return sum(known) if known else None

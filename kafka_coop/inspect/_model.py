"""GroupSnapshot: everything one look at a live group tells, with the source of every inferred fact.

No Kafka API says which rebalance protocols a member supports (FACTS.md "What can be seen of a live
group"). So each per-member fact is a `Fact`: its value plus whether a member *declared* it (its
manifest), kafka-coop *inferred* it from a named signal, or it is *unknown*. Renderers show the source;
gates treat `unknown` as not proven.
"""

from __future__ import annotations

from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from kafka_coop.manifest import Manifest
from kafka_coop.protocol import ConsumerProtocolSubscription

T = TypeVar("T")

Source = Literal["declared", "inferred", "unknown"]
ClientFamily = Literal["librdkafka", "java", "unknown"]
RebalanceProtocol = Literal["eager", "cooperative", "consumer", "unknown"]
MemberType = Literal["classic", "consumer", "unknown"]
TopicPartition = tuple[str, int]


class Fact(BaseModel, Generic[T]):
    model_config = ConfigDict(frozen=True)

    value: T
    source: Source
    signal: str = ""

    def __str__(self) -> str:
        return f"{self.value} ({self.source}{': ' + self.signal if self.signal else ''})"


class MemberSnapshot(BaseModel):
    model_config = ConfigDict(frozen=True)

    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]
    member_type: Fact[MemberType]
    client_family: Fact[ClientFamily]
    rebalance_protocol: Fact[RebalanceProtocol]
    assignors: Fact[tuple[str, ...]]
    subscription: ConsumerProtocolSubscription | None = None
    subscription_error: str | None = None
    assignment_user_data: int | None = None  # bytes of userData in its assignment (blocks KIP-848)
    manifest: Manifest | None = None

    @property
    def name(self) -> str:
        """How tables and check reasons name a member: its static id, else its client id."""
        return self.instance_id or self.client_id or self.member_id


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
    configs_error: str | None = None


class GroupSnapshot(BaseModel):
    model_config = ConfigDict(frozen=True)

    group_id: str
    taken_ms: int
    exists: bool
    type: Literal["classic", "consumer", "unknown"]
    state: str
    protocol_type: str | None
    assignor: str
    coordinator: int | None
    generation: Fact[int | None] = Fact(value=None, source="unknown")
    members: tuple[MemberSnapshot, ...]
    lag: tuple[PartitionLag, ...] = ()
    broker: BrokerFacts = BrokerFacts()
    manifests_topic: str | None = None
    manifests_error: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def member_count(self) -> int:
        return len(self.members)

    @property
    def total_lag(self) -> int | None:
        known = [p.lag for p in self.lag if p.lag is not None]
        return sum(known) if known else None

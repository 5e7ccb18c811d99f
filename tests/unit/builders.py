"""Builders of the records unit tests describe groups with: one place per record, defaults that say
"an ordinary member of an ordinary group", so a test spells only the facts it is about."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from kafka_coop._vocab import Direction, SeenFamily, SeenGroupProtocol, SeenProtocol
from kafka_coop.admin import MemberDescription, MemberMetadata
from kafka_coop.events import PartitionKey
from kafka_coop.inspection import (
    BrokerFacts,
    CoordinatorView,
    Fact,
    GroupSnapshot,
    MemberAnswers,
    MemberSnapshot,
)
from kafka_coop.inspection._model import Source
from kafka_coop.manifest import Manifest
from kafka_coop.protocol import AssignedTopic, DescribedMember, MemberAssignment
from kafka_coop.rollout import (
    FleetDescription,
    GateCommand,
    Plan,
    all_migrations,
    make_plan,
    parse_fleet,
)

MIGRATIONS = [(spec.name, spec) for spec in all_migrations()]
GATE = GateCommand(bootstrap="b:9092")


# --- the broker ---------------------------------------------------------------------------------------
def declared_broker(
    version: str | None = "4.1",
    *,
    migration_policy: str | None = None,
    rebalance_protocols: tuple[str, ...] | None = None,
) -> BrokerFacts:
    """A broker as a fleet file declares it (every value `declared`)."""
    unknown: Fact[str] = Fact(value="unknown", source="unknown")
    return BrokerFacts(
        kafka_version=Fact(value=version, source="declared") if version else unknown,
        migration_policy=migration_policy,
        rebalance_protocols=rebalance_protocols,
    )


KIP848_BROKER = declared_broker(
    "4.1", migration_policy="bidirectional", rebalance_protocols=("classic", "consumer")
)
"""A 4.1 broker that serves both group protocols and converts groups either way."""


# --- a live member, as the cluster answers for it ---------------------------------------------------------
def live_member(
    member_id: str = "m-1",
    *,
    client_id: str = "c",
    host: str = "/h",
    instance_id: str | None = None,
    assignment: tuple[PartitionKey, ...] = (),
    subscription: bytes | None = None,
    assignment_bytes: bytes | None = None,
    broker_type: SeenGroupProtocol | None = None,
    member_epoch: int | None = None,
    target_assignment: tuple[PartitionKey, ...] | None = None,
    subscribed_regex: str | None = None,
) -> MemberAnswers:
    """What inspection reads of one member: its entry in the group's description; its protocol bytes
    (the classic view) when either is given; the coordinator's entry (ConsumerGroupDescribe) when any
    of its facts is: `broker_type` (None or unknown: a v0 answer, no type), epoch, target, regex."""
    described = MemberDescription(
        member_id=member_id, client_id=client_id, host=host, instance_id=instance_id, assignment=assignment
    )
    raw = None
    if subscription is not None or assignment_bytes is not None:
        raw = MemberMetadata(
            member_id=member_id,
            client_id=client_id,
            host=host,
            subscription=subscription or b"",
            assignment=assignment_bytes or b"",
        )
    seen = None
    if (broker_type, member_epoch, target_assignment, subscribed_regex) != (None, None, None, None):
        topics: dict[str, list[int]] = {}
        for topic, partition in target_assignment or ():
            topics.setdefault(topic, []).append(partition)
        seen = DescribedMember(
            member_id=member_id,
            instance_id=instance_id,
            member_epoch=member_epoch or 0,
            client_id=client_id,
            client_host=host,
            subscribed_topic_regex=subscribed_regex,
            target_assignment=MemberAssignment(
                topic_partitions=tuple(
                    AssignedTopic(
                        topic_id=uuid.uuid5(uuid.NAMESPACE_DNS, t), topic_name=t, partitions=tuple(ps)
                    )
                    for t, ps in topics.items()
                )
            ),
            member_type={"classic": 0, "consumer": 1}.get(broker_type or "", -1),  # -1: v0, no type
        )
    return described, raw, seen


# --- a live group, as inspection describes it ------------------------------------------------------------
def member_snapshot(
    name: str = "m-1",
    *,
    family: SeenFamily = "librdkafka",
    protocol: SeenProtocol = "eager",
    member_type: SeenGroupProtocol = "classic",
    assignors: tuple[str, ...] = ("range",),
    source: Source = "inferred",
    type_source: Source | None = None,
    **fields: Any,
) -> MemberSnapshot:
    """One member inspection read: its family, protocol, type and assignors `source` (the type's own
    `type_source` where it differs: the broker tells a consumer-protocol member's type); a fact whose
    value is `unknown`, and no assignors, were not seen (source `unknown`) unless a manifest declared
    the empty list (`declared`). Any other MemberSnapshot
    field is given as it is (`member_epoch=8`)."""

    def seen(value: str, source: Source) -> Fact[Any]:
        return Fact(value=value, source="unknown" if value == "unknown" else source)

    return MemberSnapshot(
        **{
            "member_id": name,
            "instance_id": None,
            "client_id": name,
            "host": "/h",
            "assignment": (),
            "member_type": seen(member_type, type_source or source),
            "client_family": seen(family, source),
            "rebalance_protocol": seen(protocol, source),
            "assignors": Fact(
                value=assignors, source=source if assignors or source == "declared" else "unknown"
            ),
            **fields,
        }
    )


def consumer_member(
    name: str,
    epoch: int | None,
    holds: tuple[int, ...] = (0,),
    target: tuple[int, ...] = (0,),
    topic: str = "orders",
) -> MemberSnapshot:
    """A consumer-protocol member as the coordinator shows it: its epoch, the partitions of `topic` it
    holds and those of its target assignment."""
    return member_snapshot(
        name,
        member_id=f"id-{name}",
        instance_id=name,
        protocol="consumer",
        member_type="consumer",
        type_source="broker",
        assignors=(),
        assignment=tuple((topic, p) for p in holds),
        member_epoch=epoch,
        target_assignment=tuple((topic, p) for p in target),
    )


def group_snapshot(
    *members: MemberSnapshot,
    group: str = "g",
    group_type: SeenGroupProtocol = "classic",
    state: str = "stable",
    selected_assignor: str = "range",
    **fields: Any,
) -> GroupSnapshot:
    """A group inspection described: it exists, its coordinator is broker 1. Any other field as given."""
    return GroupSnapshot(
        **{
            "group": group,
            "taken_ms": 0,
            "exists": True,
            "group_type": group_type,
            "state": state,
            "protocol_type": "consumer",
            "selected_assignor": selected_assignor,
            "coordinator": 1,
            "members": members,
            **fields,
        }
    )


def manifest(member_id: str = "m-1", **fields: Any) -> Manifest:
    """What a classic, eager range member of group `g` on librdkafka declares: client id its member
    id, no instance id, started and heartbeating at 0. Any other field as given (`heartbeat_ms=5`)."""
    return Manifest.model_validate(
        {
            "group": "g",
            "member_id": member_id,
            "instance_id": None,
            "client_id": member_id,
            "host": "h",
            "libraries": {"librdkafka": "2.12.0"},
            "group_protocol": "classic",
            "assignors": ("range",),
            "rebalance_protocol": "eager",
            "remote_assignor": None,
            "started_ms": 0,
            "heartbeat_ms": 0,
            **fields,
        }
    )


def consumer_group(
    *members: MemberSnapshot,
    taken_ms: int = 0,
    state: str = "stable",
    group_epoch: int | None = 8,
    assignment_epoch: int | None = 8,
    api: str = "ConsumerGroupDescribe v1",
    group_type: SeenGroupProtocol = "consumer",
    protocol_type: str | None = None,
) -> GroupSnapshot:
    """A consumer-protocol group (uniform assignor) as seen at `taken_ms`, with the coordinator's
    epochs as `api` answered them (`api=""`: it did not answer)."""
    return group_snapshot(
        *members,
        taken_ms=taken_ms,
        group_type=group_type,
        state=state,
        protocol_type=protocol_type,
        selected_assignor="uniform",
        coordinator_view=CoordinatorView(api=api, group_epoch=group_epoch, assignment_epoch=assignment_epoch),
    )


def kafka_coop_manifest(name: str = "m-1", *, group: str = "orders") -> Manifest:
    """What a kafka-coop member (on librdkafka, eager range) declares."""
    return manifest(name, group=group, host="/h", libraries={"kafka-coop": "1.0", "librdkafka": "2.12.0"})


# --- a fleet and its plan -----------------------------------------------------------------------------
def fleet_member(
    name: str = "",
    *,
    family: SeenFamily,
    protocol: SeenProtocol = "unknown",
    member_type: SeenGroupProtocol = "classic",
    assignors: tuple[str, ...] | None = None,
    static: bool = False,
    version: str | None = None,
    kafka_coop: bool = False,
    **fields: Any,
) -> MemberSnapshot:
    """One entry of a fleet described by hand (`count` alike ones): every fact given `declared`, none
    unknown but the protocol when not given and the assignors when None; `static` gives it an instance
    id (its name); `kafka_coop` a manifest that names kafka-coop. Any other field as given (`count=3`)."""

    def declared(value: Any) -> Fact[Any]:
        return Fact(value=value, source="declared", signal="fleet file")

    return MemberSnapshot(
        **{
            "member_id": "",
            "instance_id": name if static else None,
            "client_id": name,
            "host": "",
            "assignment": (),
            "member_type": declared(member_type),
            "client_family": declared(family),
            "rebalance_protocol": declared(protocol)
            if protocol != "unknown"
            else Fact(value="unknown", source="unknown"),
            "assignors": declared(assignors) if assignors is not None else Fact(value=(), source="unknown"),
            "client_version": declared(version)
            if version is not None
            else Fact(value=None, source="unknown"),
            "manifest": kafka_coop_manifest(name or "m-1") if kafka_coop else None,
            **fields,
        }
    )


def fleet_of(
    *members: MemberSnapshot, selected: str | None = "range", broker: BrokerFacts = KIP848_BROKER
) -> FleetDescription:
    """Group `orders` of these members (a consumer group if any member is one) on `broker`."""
    consumer = any(m.member_type.value == "consumer" for m in members)
    return FleetDescription(
        group="orders",
        group_type="consumer" if consumer else "classic",
        selected_assignor=None if consumer else selected,
        members=members,
        broker=broker,
    )


def fleet_file(tmp_path: Path, text: str) -> str:
    """The path of a fleet file holding `text`, as a command line names it."""
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    return str(path)


def plan(described: FleetDescription, direction: Direction, to: str, **kw: Any) -> Plan:
    """The plan for `described` over every shipped migration, gated against b:9092."""
    return make_plan(described, direction, to, MIGRATIONS, gate=GATE, **kw)  # type: ignore[arg-type]


def plan_of_file(
    broker: str,
    members: str,
    extra: str = "",
    *,
    direction: Direction = "upgrade",
    to: str = "consumer",
    **kw: Any,
) -> Plan:
    """The plan for a fleet file of group `orders`: its `broker` section, `extra` lines, and `members`."""
    return plan(
        parse_fleet(f"group: orders\n{broker}{extra}members:\n{members}", "fleet.yaml"), direction, to, **kw
    )

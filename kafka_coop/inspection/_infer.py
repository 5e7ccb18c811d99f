"""Member protocol inference (pure): what the wire says about each member, and how sure we are.

No Kafka API says which protocols a member supports, so each fact is inferred from a named signal, or
declared by the member's manifest, or unknown; the facts the rules rest on are listed below.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, TypeAlias

from kafka_coop._vocab import (
    COOPERATIVE_ASSIGNORS,
    EAGER_ONLY_ASSIGNORS,
    SeenFamily,
    SeenGroupProtocol,
    SeenProtocol,
)
from kafka_coop.families import WireTraits, catalog, recognise
from kafka_coop.inspection._model import BrokerFacts, Fact, MemberSnapshot
from kafka_coop.manifest import Manifest
from kafka_coop.protocol import (
    ConsumerProtocolSubscription,
    DescribedMember,
    ProtocolDecodeError,
    decode_assignment,
    decode_subscription,
)

if TYPE_CHECKING:  # the admin client's answer types, built by the shell; this module loads no client
    from kafka_coop.admin import MemberDescription, MemberMetadata

# Facts this module relies on, read off bytes captured from real members on the sandbox
# (tests/unit/vectors, made by scripts/capture_vectors.py), not from documentation alone:
# - Client family. Each family's subscription has its own shape (families.yaml `wire`: the version per
#   assignor, userData null or empty, rack id absent, null or empty): librdkafka writes an empty rack id,
#   Java and franz-go a null one, kafka-python, aiokafka and KafkaJS write v0/v1 with empty userData. One
#   family fits: it is that one. Several fit: their default client id (`kafka-python-3.0.12`, `kgo`,
#   `rdkafka`...) decides, and an app-set client id leaves the family `unknown` with the candidates
#   named. KIP-848 members send no metadata: there only a default client id tells.
# - Rebalance protocol. If the group selected an eager-only assignor (range, roundrobin, sticky), every
#   member supports it and so every member is EAGER (Java picks the protocol all its assignors share;
#   librdkafka lists hold one protocol). If it selected cooperative-sticky: a librdkafka member is
#   cooperative; a Java member that re-joined with owned partitions is cooperative; a Java member with
#   none is eager when nobody in the group sent owned partitions (eager members revoke everything before
#   they re-join), otherwise unknown (a cooperative member that owned nothing looks the same). When no
#   member has had an assignment yet (a fresh group, or all of it restarted at once) nobody had anything
#   to own, so nothing tells the two apart: unknown. A member shows it by a subscription v2+ with no
#   previous generation, or by the cooperative-sticky userData of Java and sarama, the generation of its
#   last assignment, still -1 (it can be in a generation and not yet assigned: its SyncGroup was cut by
#   the next rebalance).
# - Member type. The coordinator says it (ConsumerGroupDescribe v1, source `broker`) wherever it
#   answers. Otherwise every member of a classic group is classic, and in a consumer (KIP-848) group a
#   classic member that was there when the group converted has a broker-made id `<client.id>-<UUID>`, a
#   consumer member a 22-character base64 UUID it made itself. The guess is wrong for a classic member
#   that joins after the conversion: the broker gives it a bare UUID too
#   (GroupMetadataManager.classicGroupJoinToConsumerGroup), which is why the broker's word comes first.
# - Assignors. Only the selected protocol's metadata is on the wire, so without a manifest the list is
#   "at least the selected one".
# A manifest (what a kafka-coop member declares) always wins and is marked `declared`.

_CLASSIC_MEMBER_ID = re.compile(
    r"^(?P<client>.*)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
)
_CONSUMER_MEMBER_ID = re.compile(r"^[A-Za-z0-9+/_-]{22}$")


# One live member as the cluster answered for it: its entry in the group's description, its protocol
# bytes (the classic view, DescribeGroups; None where not read or not there) and the coordinator's entry
# (ConsumerGroupDescribe; None where not read or not there). The shell's records, read as they are.
MemberAnswers: TypeAlias = "tuple[MemberDescription, MemberMetadata | None, DescribedMember | None]"


def match_manifests(
    group: str, members: Sequence[MemberDescription], manifests: Iterable[Manifest]
) -> dict[str, Manifest]:
    """member_id -> its manifest. Static members match on instance id, dynamic ones on member id;
    manifests of members that are gone (stale keys) match nothing."""
    by_instance: dict[str, Manifest] = {}
    by_member: dict[str, Manifest] = {}
    for m in manifests:
        if m.group != group:
            continue
        if m.instance_id:
            by_instance[m.instance_id] = m
        by_member[m.member_id] = m
    out: dict[str, Manifest] = {}
    for member in members:
        found = by_instance.get(member.instance_id) if member.instance_id else None
        found = found or by_member.get(member.member_id)
        if found is not None:
            out[member.member_id] = found
    return out


def _decode(
    member: MemberDescription, raw: MemberMetadata | None
) -> tuple[ConsumerProtocolSubscription | None, str | None, bool | None, bool]:
    """(subscription, what could not be read, whether its assignment carries userData, whether its last
    join gave it a partition: the describe's assignment, or its assignment bytes where only those were
    read)."""
    sub: ConsumerProtocolSubscription | None = None
    error: str | None = None
    user_data: bool | None = None
    holds = bool(member.assignment)
    if raw is not None and raw.subscription:
        try:
            sub = decode_subscription(raw.subscription)
        except ProtocolDecodeError as exc:
            error = f"subscription: {exc}"
    if raw is not None and raw.assignment:
        try:
            assignment = decode_assignment(raw.assignment)
            user_data = bool(assignment.user_data)
            holds = holds or bool(assignment.partitions)
        except ProtocolDecodeError as exc:
            error = f"{error + '; ' if error else ''}assignment: {exc}"
    return sub, error, user_data, holds


def _member_type(
    group_type: str,
    member: MemberDescription,
    seen: DescribedMember | None,
    manifest: Manifest | None,
    view_api: str,
) -> Fact[SeenGroupProtocol]:
    said = seen.type_name if seen is not None else "unknown"
    if said in ("classic", "consumer"):
        return Fact(value=said, source="broker", signal=view_api or "the group's coordinator")
    if manifest is not None:
        return Fact(value=manifest.group_protocol, source="declared", signal="manifest")
    if group_type == "classic":
        return Fact(value="classic", source="inferred", signal="classic group")
    if group_type == "consumer":
        if _CLASSIC_MEMBER_ID.match(member.member_id):
            return Fact(value="classic", source="inferred", signal="member id <client.id>-<UUID> (JoinGroup)")
        if _CONSUMER_MEMBER_ID.match(member.member_id):
            return Fact(
                value="consumer", source="inferred", signal="member id is a client-made UUID (KIP-848)"
            )
    return Fact(value="unknown", source="unknown")


_DECLARED_LIBRARIES = {"librdkafka": "librdkafka", "kafka-clients": "java"}


def wire_traits(
    member: MemberDescription, sub: ConsumerProtocolSubscription | None, selected: str
) -> WireTraits:
    """What the wire shows of one member, in the terms of the families file's signatures."""
    if sub is None:
        return WireTraits(client_id=member.client_id)
    user_data = "null" if sub.user_data is None else "empty" if sub.user_data == b"" else "bytes"
    rack = (
        "absent"
        if sub.version < 3
        else "null"
        if sub.rack_id is None
        else "empty"
        if not sub.rack_id
        else None
    )
    return WireTraits(
        subscription_version=sub.version,
        user_data=user_data,
        rack=rack,
        selected_assignor=selected or None,
        client_id=member.client_id,
    )


def _family(
    member: MemberDescription,
    sub: ConsumerProtocolSubscription | None,
    manifest: Manifest | None,
    selected: str,
) -> Fact[SeenFamily]:
    if manifest is not None:
        for library, family in _DECLARED_LIBRARIES.items():
            if library in manifest.libraries:
                return Fact(value=family, source="declared", signal="manifest")
    found = recognise(wire_traits(member, sub, selected))
    if found.family is None:
        return Fact(value="unknown", source="unknown", signal=found.signal)
    return Fact(value=found.family, source="inferred", signal=found.signal)


def _version(
    member: MemberDescription, family: Fact[SeenFamily], manifest: Manifest | None
) -> Fact[str | None]:
    """The library's version: what a manifest declares for the family's library, else what a default
    client id carries (families.yaml `wire.client_id_version`); never guessed from anything else."""
    if manifest is not None:
        for library, name in _DECLARED_LIBRARIES.items():
            if name == family.value and library in manifest.libraries:
                return Fact(
                    value=manifest.libraries[library],
                    source="declared",
                    signal=f"the manifest's {library} version",
                )
    known = catalog().get(family.value)
    pattern = known.wire.client_id_version if known is not None and family.source != "unknown" else None
    found = re.search(pattern, member.client_id) if pattern else None
    if found is None:
        return Fact(value=None, source="unknown")
    return Fact(value=found.group(1), source="inferred", signal=f"default client id {member.client_id!r}")


_Rejoins = Literal["owned", "none-owned", "never-assigned", "nothing-held"]
_NO_ASSIGNMENT_YET = (-1).to_bytes(4, "big", signed=True)  # Java's and sarama's cooperative-sticky userData


def _what_rejoins_tell(subs: Sequence[ConsumerProtocolSubscription], held: bool) -> _Rejoins:
    """Whether someone re-joined owning partitions, nobody did, or nobody could: none assigned yet, or
    none holds a partition (`held`: any member's assignment from the join is non-empty)."""
    if any(sub.owned_partitions for sub in subs):
        return "owned"
    if subs and all(_never_assigned(sub) for sub in subs):
        return "never-assigned"
    if not held:
        return "nothing-held"
    return "none-owned"


def _never_assigned(sub: ConsumerProtocolSubscription) -> bool:
    return (sub.version >= 2 and sub.generation_id < 0) or sub.user_data == _NO_ASSIGNMENT_YET


def _protocol(
    selected: str,
    member_type: SeenGroupProtocol,
    family: SeenFamily,
    sub: ConsumerProtocolSubscription | None,
    rejoins: _Rejoins,
    manifest: Manifest | None,
) -> Fact[SeenProtocol]:
    if manifest is not None:
        return Fact(value=manifest.rebalance_protocol, source="declared", signal="manifest")
    if member_type == "consumer":
        return Fact(value="consumer", source="inferred", signal="KIP-848 member")
    if sub is None:
        return Fact(value="unknown", source="unknown", signal="no protocol metadata visible")
    if selected in EAGER_ONLY_ASSIGNORS or catalog().assignor_protocol(selected) == "eager":
        return Fact(value="eager", source="inferred", signal=f"group selected eager-only {selected}")
    if selected in COOPERATIVE_ASSIGNORS:
        if sub.owned_partitions:
            return Fact(value="cooperative", source="inferred", signal="re-joined with owned partitions")
        known = catalog().get(family)
        if known is not None and known.mixed_list in ("refused", "selected"):
            # its list holds one protocol, or it follows the selected assignor: cooperative either way
            how = (
                "lists hold one protocol"
                if known.mixed_list == "refused"
                else "follows the selected assignor"
            )
            return Fact(value="cooperative", source="inferred", signal=f"{family} on {selected} ({how})")
        if rejoins == "never-assigned":
            return Fact(
                value="unknown",
                source="unknown",
                signal="no member has had an assignment yet: none had anything to own, eager or not",
            )
        if rejoins == "nothing-held":
            return Fact(
                value="unknown",
                source="unknown",
                signal="no member holds a partition: none has anything to own, eager or not",
            )
        if rejoins == "none-owned":
            return Fact(value="eager", source="inferred", signal="no member re-joined with owned partitions")
        return Fact(value="unknown", source="unknown", signal="re-joined owning nothing (eager or idle)")
    return Fact(value="unknown", source="unknown", signal=f"custom assignor {selected}")


def _assignors(
    selected: str, member_type: SeenGroupProtocol, manifest: Manifest | None
) -> Fact[tuple[str, ...]]:
    if manifest is not None:
        return Fact(value=tuple(manifest.assignors), source="declared", signal="manifest")
    if member_type == "consumer" or not selected:
        return Fact(value=(), source="unknown")
    return Fact(
        value=(selected,), source="inferred", signal="selected protocol only; the list is not on the wire"
    )


def infer_members(
    group: str,
    group_type: str,
    selected_assignor: str,
    members: Sequence[MemberAnswers],
    manifests: Iterable[Manifest] = (),
    *,
    protocol_type: str | None = None,
    view_api: str = "",
) -> tuple[MemberSnapshot, ...]:
    """Every member with its facts and where each one came from. A group whose protocol type is not
    `consumer` (a Connect cluster's workers: `connect`) carries no consumer-protocol bytes to read."""
    matched = match_manifests(group, [described for described, _, _ in members], manifests)
    consumer_bytes = protocol_type in (None, "consumer")
    decoded = {
        m.member_id: _decode(m, raw) if consumer_bytes else (None, None, None, False) for m, raw, _ in members
    }
    rejoins = _what_rejoins_tell(
        [sub for sub, _, _, _ in decoded.values() if sub is not None],
        any(holds for _, _, _, holds in decoded.values()),
    )
    out = []
    for member, _, seen in members:
        sub, error, user_data, _ = decoded[member.member_id]
        manifest = matched.get(member.member_id)
        member_type = _member_type(group_type, member, seen, manifest, view_api)
        family = _family(member, sub, manifest, selected_assignor)
        out.append(
            MemberSnapshot(
                member_id=member.member_id,
                instance_id=member.instance_id,
                client_id=member.client_id,
                host=member.host,
                assignment=member.assignment,
                member_type=member_type,
                client_family=family,
                rebalance_protocol=_protocol(
                    selected_assignor, member_type.value, family.value, sub, rejoins, manifest
                )
                if consumer_bytes
                else Fact(value="unknown", source="unknown", signal=f"protocol type {protocol_type}"),
                assignors=_assignors(selected_assignor, member_type.value, manifest),
                client_version=_version(member, family, manifest),
                subscription=sub,
                subscription_error=error,
                assignment_user_data=user_data,
                manifest=manifest,
                member_epoch=seen.member_epoch if seen is not None else None,
                target_assignment=seen.target_assignment.partitions if seen is not None else None,
                subscribed_regex=(seen.subscribed_topic_regex or None) if seen is not None else None,
                topics=tuple(sub.topics) if sub is not None else (),
            )
        )
    return tuple(sorted(out, key=lambda m: (m.name, m.member_id)))


def infer_generation(members: Sequence[MemberSnapshot]) -> Fact[int | None]:
    """The generation the members last joined in; Kafka's describe APIs do not return it."""
    generations = [m.subscription.generation_id for m in members if m.subscription is not None]
    known = [g for g in generations if g is not None and g >= 0]
    if not known:
        return Fact(value=None, source="unknown")
    return Fact(value=max(known), source="inferred", signal="member subscriptions (generation at last join)")


def broker_facts(
    broker_id: int | None,
    configs: Mapping[str, str],
    *,
    features: Mapping[str, int] | None = None,
    group_configs: Mapping[str, str] | None = None,
    release: str | None = None,
) -> BrokerFacts:
    """What the planner needs from one broker's configs; the version is read off which keys exist.

    `features` are the finalized feature levels the coordinator's ApiVersions answer gave (None: not
    read): they say `group.version` exactly. `group_configs` are the group's own overrides. `release`:
    the Kafka version kafka-python reads off the APIs the broker serves; it beats the config keys, which
    cannot tell 3.8 from 4.0 (3.8 has group.consumer.migration.policy and no group.coordinator.new.enable)."""
    if not configs:
        return BrokerFacts(broker_id=broker_id, configs_error="no broker configs readable")
    version: Fact[str]
    if release is not None:
        version = Fact(value=release, source="inferred", signal="ApiVersions: the APIs it serves")
    elif any(key.startswith("group.streams.") for key in configs):
        version = Fact(value="4.1+", source="inferred", signal="group.streams.* configs exist")
    elif "group.consumer.migration.policy" in configs and "group.coordinator.new.enable" not in configs:
        version = Fact(value="4.0+", source="inferred", signal="KIP-848 GA configs, no new.enable flag")
    elif "group.coordinator.rebalance.protocols" in configs:
        version = Fact(value="3.7-3.9", source="inferred", signal="KIP-848 early-access configs")
    else:
        version = Fact(value="<3.7", source="inferred", signal="no KIP-848 configs")

    def _int(key: str) -> int | None:
        try:
            return int(configs[key])
        except (KeyError, ValueError):
            return None

    protocols = configs.get("group.coordinator.rebalance.protocols")
    protocol_list = tuple(p.strip() for p in protocols.split(",") if p.strip()) if protocols else None
    group_version: Fact[str]
    if features is not None:
        level = features.get("group.version", 0)
        group_version = Fact(
            value=str(level),
            source="broker",
            signal="ApiVersions finalized features"
            + ("" if "group.version" in features else " (not finalized)"),
        )
    elif version.value in ("4.0+", "4.1+") and protocol_list and "consumer" in protocol_list:
        group_version = Fact(
            value="1+", source="inferred", signal="4.0+ broker with the consumer protocol enabled"
        )
    else:
        group_version = Fact(value="unknown", source="unknown")
    return BrokerFacts(
        broker_id=broker_id,
        kafka_version=version,
        group_version=group_version,
        rebalance_protocols=protocol_list,
        migration_policy=configs.get("group.consumer.migration.policy"),
        group_max_size=_int("group.max.size"),
        group_consumer_max_size=_int("group.consumer.max.size"),
        consumer_session_ms=_int("group.consumer.session.timeout.ms"),
        consumer_min_session_ms=_int("group.consumer.min.session.timeout.ms"),
        consumer_max_session_ms=_int("group.consumer.max.session.timeout.ms"),
        consumer_heartbeat_ms=_int("group.consumer.heartbeat.interval.ms"),
        group_session_ms=_as_int((group_configs or {}).get("consumer.session.timeout.ms")),
    )


def _as_int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def version_at_least(version: str, minimum: tuple[int, int]) -> bool | None:
    """'4.1+' >= (4, 0)? None when the version is unknown."""
    match = re.match(r"^<?(\d+)\.(\d+)", version)
    if not match:
        return None
    if version.startswith("<"):
        return False
    return (int(match.group(1)), int(match.group(2))) >= minimum


def group_kind(group_type: str, protocol_type: str, is_simple: bool = False) -> str:
    """What a group is, in the words Kafka's tools use: `consumer`, `share`, `streams` (the group types of
    ListGroups v5), or for a classic group its protocol type (`connect` for a Connect cluster's workers);
    `classic` for a classic group of consumers, `simple` for one that only commits offsets."""
    if group_type in ("consumer", "share", "streams"):
        return group_type
    if is_simple or not protocol_type:
        return "simple"
    return "classic" if protocol_type == "consumer" else protocol_type

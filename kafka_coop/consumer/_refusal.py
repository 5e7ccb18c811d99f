"""Which broker rule refused an online upgrade, for the consumer's fatal error (GROUP_ID_NOT_FOUND).

The broker refuses to convert a classic group for a consumer-protocol member by four rules
(GroupMetadataManager.validateOnlineUpgrade, then ConsumerGroup.fromClassicGroup, Kafka 4.0-4.4), and
tells the member only GROUP_ID_NOT_FOUND; librdkafka passes on no broker message. The consumer can read
what the rules read with the connection it already has: the group (protocol type, size, assignment
bytes) and the broker's configs. `refusal` is the pure judgement, in the broker's order; `explain` reads
and judges, and never raises (the member is failing already: no answer means the sentence names all four).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafka_coop.protocol import ProtocolDecodeError, decode_assignment

UPGRADE_POLICIES = frozenset({"upgrade", "bidirectional"})  # ConsumerGroupMigrationPolicy.isUpgradeEnabled
READ_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class UpgradeFacts:
    """What the broker's rules read; None where it was not read."""

    policy: str | None
    protocol_type: str | None
    members: int | None
    max_size: int | None
    user_data: Sequence[str] = ()  # the members (client ids) whose assignment carries userData


@dataclass(frozen=True, slots=True)
class Refusal:
    rule: str  # the rule that holds, as a clause: "because ..."
    remedy: str


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def refusal(facts: UpgradeFacts) -> Refusal | None:
    """The first rule that refuses, in the broker's order; None if none does by these facts."""
    if facts.policy is not None and facts.policy.lower() not in UPGRADE_POLICIES:
        return Refusal(
            f"its group.consumer.migration.policy is {facts.policy!r}, which allows no online upgrade",
            "set group.consumer.migration.policy to upgrade (or bidirectional) on the brokers, or run this "
            "member with group.protocol=classic",
        )
    if facts.protocol_type is not None and facts.protocol_type != "consumer":
        return Refusal(
            f"the group's protocol type is {facts.protocol_type!r}, not 'consumer' (it is not a consumer "
            "group, e.g. a Connect cluster's)",
            "give this consumer a group.id of its own",
        )
    if facts.members is not None and facts.max_size is not None and facts.members > facts.max_size:
        return Refusal(
            f"the group has {_plural(facts.members, 'member')}, more than group.consumer.max.size = "
            f"{facts.max_size}",
            f"raise group.consumer.max.size to at least {facts.members} on the brokers, or shrink the group "
            "below it, before the bounce; meanwhile run this member with group.protocol=classic",
        )
    if facts.user_data:
        names = ", ".join(sorted(facts.user_data)[:5])
        return Refusal(
            f"the assignment of {_plural(len(facts.user_data), 'member')} ({names}) carries custom assignor "
            "userData, which the consumer protocol would lose",
            "cut the group over to range first (kafka-coop downgrade-plan GROUP --to eager), whose "
            "assignments carry no userData, then bounce onto the consumer protocol; meanwhile run this "
            "member with group.protocol=classic",
        )
    return None


def _user_data(assignments: Sequence[tuple[str, bytes]]) -> tuple[str, ...]:
    out = []
    for who, data in assignments:
        try:
            if data and decode_assignment(data).user_data:
                out.append(who)
        except ProtocolDecodeError:
            continue
    return tuple(out)


def read_facts(bootstrap: str, conf: Mapping[str, str], group: str) -> UpgradeFacts:
    """The group's classic view and one broker's configs, through the admin API (shell)."""
    from kafka_coop.admin import ClusterAdmin

    admin = ClusterAdmin(bootstrap, dict(conf))
    raw = admin.raw_group(group, timeout_s=READ_TIMEOUT_S)
    try:
        _broker, configs = admin.broker_configs(timeout_s=READ_TIMEOUT_S)
    except Exception:  # no DescribeConfigs ACL: the group's own rules still apply
        configs = {}
    max_size = configs.get("group.consumer.max.size")
    return UpgradeFacts(
        policy=configs.get("group.consumer.migration.policy"),
        protocol_type=raw.protocol_type or None if raw is not None else None,
        members=len(raw.members) if raw is not None else None,
        max_size=int(max_size) if max_size and max_size.isdigit() else None,
        user_data=_user_data([(m.client_id or m.member_id, m.assignment) for m in raw.members])
        if raw is not None
        else (),
    )


def explain(bootstrap: str, conf: Mapping[str, str], group: str) -> Refusal | None:
    """The rule that refused, read now; None when it cannot be told (the caller names all four)."""
    try:
        return refusal(read_facts(bootstrap, conf, group))
    except Exception:  # the member is failing already: its error must not fail on the way
        return None

"""KIP-848 as the broker applies it (pure): when it refuses to convert a classic group, what each client
family does when refused, and the consumer protocol's own rules for sessions, static ids and regexes.

Every check names the rule it mirrors (`Check.rule`), as read in Apache Kafka 4.1.1's group coordinator
(GroupMetadataManager, ConsumerGroup, KafkaApis) and the clients' sources named in families.yaml;
docs/planning.md "The broker's rules" lists them with what the joining member is answered.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict

from kafka_coop._vocab import Direction, plural, verb
from kafka_coop.families import catalog, older_than
from kafka_coop.inspection import MemberSnapshot, version_at_least
from kafka_coop.rollout._checks import Check, Status

RULES: Final[Mapping[str, str]] = {
    "broker-version": "KafkaApis.handleConsumerGroupHeartbeat: ConsumerGroupHeartbeat (API 68), GA in "
    "Kafka 4.0 (3.7-3.9: early access, off by default)",
    "consumer-protocol-enabled": "KafkaApis.isConsumerGroupProtocolEnabled: `consumer` in "
    "group.coordinator.rebalance.protocols and the group.version feature >= 1, else UNSUPPORTED_VERSION",
    "migration-policy": "GroupMetadataManager.validateOnlineUpgrade: "
    "ConsumerGroupMigrationPolicy.isUpgradeEnabled (group.consumer.migration.policy upgrade or "
    "bidirectional), else GROUP_ID_NOT_FOUND",
    "migration-policy-downgrade": "GroupMetadataManager.validateOnlineDowngradeWithFencedMembers: "
    "ConsumerGroupMigrationPolicy.isDowngradeEnabled (downgrade or bidirectional), else the group stays a "
    "consumer group",
    "protocol-type": "GroupMetadataManager.validateOnlineUpgrade: ClassicGroup.usesConsumerGroupProtocol "
    "(protocol type `consumer`), else GROUP_ID_NOT_FOUND",
    "group-size": "GroupMetadataManager.validateOnlineUpgrade: members <= group.consumer.max.size, else "
    "GROUP_ID_NOT_FOUND; then throwIfConsumerGroupIsFull: a new member only below it, else "
    "GROUP_MAX_SIZE_REACHED (from 4.4, KAFKA-20601, a static member replacing its listed self is admitted)",
    "group-size-downgrade": "GroupMetadataManager.validateOnlineDowngradeWithFencedMembers: members <= "
    "group.max.size, else the group stays a consumer group",
    "metadata-decodes": "GroupMetadataManager.convertToConsumerGroup: ConsumerGroup.fromClassicGroup "
    "reads every member's subscription and assignment; SchemaException -> GROUP_ID_NOT_FOUND (malformed)",
    "no-custom-user-data": "ConsumerGroup.fromClassicGroup: an assignment carrying userData -> "
    "UnsupportedVersionException -> GROUP_ID_NOT_FOUND (unsupported custom assignor)",
    "static-instance-ids": "GroupMetadataManager.getOrMaybeSubscribeStaticConsumerGroupMember: a "
    "consumer-protocol static member replaces a classic one holding its group.instance.id; between two "
    "consumer-protocol members, throwIfInstanceIdIsUnreleased refuses the newcomer (UNRELEASED_INSTANCE_ID) "
    "until the holder left with epoch -2",
    "refusal-outcome": "what each client family does with GROUP_ID_NOT_FOUND on its first "
    "ConsumerGroupHeartbeat (families.yaml kip848_refused)",
    "client-versions": "families.yaml kip848.since: the first version whose KIP-848 consumer is GA",
    "session-timeout": "GroupConfig.validateValues: consumer.session.timeout.ms within "
    "group.consumer.min/max.session.timeout.ms (45-60 s by default)",
    "regex-subscriptions": "GroupMetadataManager.refreshRegularExpressions: com.google.re2j.Pattern, "
    "matcher(topic).matches() (the whole name)",
}
# The checks whose failure means the broker refuses the first consumer-protocol member.
REFUSALS: Final = (
    "broker-version",
    "consumer-protocol-enabled",
    "migration-policy",
    "protocol-type",
    "group-size",
    "metadata-decodes",
    "no-custom-user-data",
)
SESSION_DEFAULT_MS: Final = 45_000
SESSION_MIN_MS: Final = 45_000
SESSION_MAX_MS: Final = 60_000
HEARTBEAT_DEFAULT_MS: Final = 5_000


def _check(name: str, status: Status, reason: str, *, hint: str = "", members: Sequence[str] = ()) -> Check:
    return Check(name=name, status=status, reason=reason, hint=hint, members=tuple(members), rule=RULES[name])


# --- the broker's refusals ---------------------------------------------------------------------------


def broker_version_check(version: str | None, signal: str = "", minimum: tuple[int, int] = (4, 0)) -> Check:
    ok = version_at_least(version, minimum) if version else None
    want = f"{minimum[0]}.{minimum[1]}"
    return _check(
        "broker-version",
        "pass" if ok else ("warn" if ok is None else "fail"),
        f"broker is {version or 'unknown'}, the path needs >= {want}" + (f" ({signal})" if signal else ""),
        hint="" if ok else "Upgrade the brokers to Apache Kafka 4.0 or later first.",
    )


def consumer_protocol_check(
    protocols: Sequence[str] | None, group_version: int | None, group_version_signal: str = ""
) -> Check:
    listed = protocols is not None and "consumer" in protocols
    feature = (
        f"group.version = {group_version}" + (f" ({group_version_signal})" if group_version_signal else "")
        if group_version is not None
        else "group.version unknown"
    )
    reason = (
        "group.coordinator.rebalance.protocols = "
        + (",".join(protocols) if protocols else "unknown")
        + f"; {feature}"
    )
    if (protocols is not None and not listed) or (group_version is not None and group_version < 1):
        hint = (
            "Add consumer to group.coordinator.rebalance.protocols on the brokers."
            if protocols is not None and not listed
            else "Enable the consumer protocol: kafka-features.sh --bootstrap-server BROKER upgrade "
            "--feature group.version=1."
        )
        return _check("consumer-protocol-enabled", "fail", reason, hint=hint)
    if protocols is None or group_version is None:
        return _check("consumer-protocol-enabled", "warn", reason + ": not proven")
    return _check("consumer-protocol-enabled", "pass", reason)


def policy_check(policy: str | None, direction: Direction) -> Check:
    name = "migration-policy" if direction == "upgrade" else "migration-policy-downgrade"
    allowed = policy in ("bidirectional", direction)
    reason = f"group.consumer.migration.policy = {policy or 'unknown'}; this {direction} " + (
        "is allowed" if allowed else f"is refused by the broker: set it to {direction} or bidirectional"
    )
    check = _check(
        name,
        "pass" if allowed else ("warn" if policy is None else "fail"),
        reason,
        hint="" if allowed else "Set group.consumer.migration.policy on the brokers and re-plan.",
    )
    return check.model_copy(update={"name": "migration-policy"})


def protocol_type_check(protocol_type: str | None) -> Check:
    """Connect workers (`connect`) and other embedded protocols cannot become consumer groups."""
    if protocol_type is None:
        return _check(
            "protocol-type",
            "warn",
            "the group's protocol type was not visible (the classic describe answers it while the group has "
            "members)",
            hint="Re-run while the group has members.",
        )
    if protocol_type != "consumer":
        return _check(
            "protocol-type",
            "fail",
            f"protocol type {protocol_type!r}: only groups of consumers (protocol type 'consumer') convert; "
            "a consumer-protocol member joining this group is refused",
            hint="This group is not a consumer group (a Connect cluster's workers use 'connect'): it has no "
            "KIP-848 path; its members keep the classic protocol.",
        )
    return _check("protocol-type", "pass", "protocol type 'consumer'")


# Kafka 4.4 admits a static member that replaces its own listed self into a full group (KAFKA-20601,
# GroupMetadataManager.throwIfConsumerGroupIsFull skips a known group.instance.id); before, it counted.
STATIC_REJOIN_WHEN_FULL: Final = (4, 4)


def size_check(
    members: int, static: int, limit: int | None, direction: Direction, broker_version: str | None = None
) -> Check:
    """Upgrade: the broker converts a group of at most `limit` members, then admits the joining member
    only while the group is below `limit`. A dynamic member leaves on close before it rejoins; a static
    member stays listed, so before Kafka 4.4 its own new incarnation makes one more (an unknown broker
    version is judged by the older rule)."""
    if direction == "downgrade":
        ok = limit is None or members <= limit
        return _check(
            "group-size-downgrade",
            "pass" if ok else "fail",
            f"{plural(members, 'member')}, group.max.size = {limit if limit is not None else 'unknown'}",
            hint="" if ok else "Scale the group below the limit or raise the broker setting, then re-plan.",
        ).model_copy(update={"name": "group-size"})
    if limit is None:
        return _check(
            "group-size",
            "pass",
            f"{plural(members, 'member')}, group.consumer.max.size = unknown (default: no limit)",
        )
    replaces_itself = bool(version_at_least(broker_version or "", STATIC_REJOIN_WHEN_FULL))
    # a bounced static member stays listed while it restarts; from 4.4 it takes its own place
    at_join = members if static and not replaces_itself else members - 1
    ok = members <= limit and at_join < limit
    why = f"{plural(members, 'member')}, group.consumer.max.size = {limit}" + (
        ""
        if ok
        else f": the first consumer-protocol member would find {plural(at_join, 'member')} and a full group"
    )
    return _check(
        "group-size",
        "pass" if ok else "fail",
        why,
        hint="" if ok else "Scale the group below the limit or raise group.consumer.max.size, then re-plan.",
    )


def metadata_check(malformed: Mapping[str, str], unseen: Sequence[str] = ()) -> Check:
    """Every member's subscription and assignment must decode as the consumer protocol (what Kafka's
    ConsumerProtocol reads; our codecs accept what it accepts)."""
    if malformed:
        first = next(iter(malformed.items()))
        return _check(
            "metadata-decodes",
            "fail",
            f"{plural(len(malformed), 'member')} "
            f"{verb(len(malformed), 'carries', 'carry')} metadata the broker cannot read as the "
            "consumer protocol "
            f"(e.g. {first[0]}: {first[1]}); the conversion fails as malformed",
            members=tuple(malformed),
            hint="Find the client that writes this metadata; such a member cannot be converted.",
        )
    if unseen:
        return _check(
            "metadata-decodes",
            "warn",
            f"the protocol metadata of {plural(len(unseen), 'member')} was not visible "
            "(the classic describe answers "
            "it while the group is Stable)",
            members=unseen,
            hint="Re-run the gate while the group is Stable.",
        )
    return _check("metadata-decodes", "pass", "every member's subscription and assignment decode")


def user_data_check(carrying: Sequence[str], unseen: Sequence[str], assignor: str, group: str) -> Check:
    if carrying:
        return _check(
            "no-custom-user-data",
            "fail",
            f"{len(carrying)} member assignment(s) carry userData (written by the group leader's "
            f"{assignor or 'selected'} assignor; librdkafka's cooperative-sticky can): the broker refuses "
            'to convert the group ("userData from a custom assignor would be lost")',
            members=carrying,
            hint="Route around it: cut over to range first (kafka-coop downgrade-plan "
            f"{group or 'GROUP'} --to eager), whose assignments carry no userData, then upgrade "
            "--to consumer.",
        )
    if unseen:
        return _check(
            "no-custom-user-data",
            "warn",
            f"the assignment bytes of {plural(len(unseen), 'member')} "
            f"{verb(len(unseen), 'was', 'were')} not visible (the group answers "
            "DescribeGroups with them only while Stable); re-run to prove it",
            members=unseen,
            hint="Re-run the gate while the group is Stable.",
        )
    return _check("no-custom-user-data", "pass", "no assignment carries custom userData")


# --- the clients -------------------------------------------------------------------------------------


def client_versions_check(clients: Sequence[MemberSnapshot]) -> Check:
    """Members that cannot speak the consumer protocol GA, and members whose version is unknown."""
    too_old: list[str] = []
    cannot: list[str] = []
    unknown: list[str] = []
    for c in clients:
        family, version = c.client_family.value, c.client_version.value
        facts = catalog().get(family)
        if facts is None or not facts.kip848.supported:
            cannot.append(f"{c.name} ({family})")
        elif older_than(version, facts.kip848.since):
            too_old.append(f"{c.name} ({family} {version} < {facts.kip848.since})")
        elif version is None:
            unknown.append(f"{c.name} ({family})")
    if cannot or too_old:
        return _check(
            "client-versions",
            "fail",
            "members that cannot take the consumer protocol: " + ", ".join(cannot + too_old),
            members=tuple(cannot + too_old),
            hint="Upgrade these clients (or move them to a family with KIP-848) before the bounce.",
        )
    if unknown:
        return _check(
            "client-versions",
            "warn",
            "client version not known for " + ", ".join(unknown) + " (a manifest or a default client id "
            "says it): whether they run KIP-848 GA, and what they do if refused, is not proven",
            members=tuple(unknown),
        )
    return _check("client-versions", "pass", "every member's client runs the KIP-848 consumer GA")


def _outcome(c: MemberSnapshot) -> str:
    family, version = c.client_family.value, c.client_version.value
    facts = catalog().get(family)
    refused = facts.kip848_refused if facts is not None else None
    who = (
        f"{c.count} {family}"
        + (f" {version}" if version else "")
        + (" member" if c.count == 1 else " members")
    )
    if facts is None:
        return f"{who}: client not known, so neither is what it does when refused"
    if refused is None:
        return f"{who}: no KIP-848 (stay classic)"
    action = refused.at(version)
    if action is None:
        return (
            f"{who}: stop with a fatal error from {refused.since} on, retry without end before "
            "(version unknown)"
        )
    what = (
        "stop with a fatal error (the process must be restarted after the cause is fixed)"
        if action == "fatal"
        else "keep retrying and consume nothing"
    )
    since = f" (>= {refused.since})" if refused.since and action == refused.action else ""
    return f"{who}: {what}{since}"


def refusal_outcomes(clients: Sequence[MemberSnapshot]) -> str:
    """What the members do if the broker refuses the first of them, family by family."""
    return "; ".join(_outcome(c) for c in clients) or "no members"


def refusal_check(
    clients: Sequence[MemberSnapshot], refused_by: Sequence[str], unproven: Sequence[str]
) -> Check:
    """What the first bounced member does if the broker refuses it, family by family: refused_by names
    the failing refusal checks (each a blocker of its own: this one warns, with the consequence), unproven
    the ones that only warn."""
    outcomes = refusal_outcomes(clients)
    if refused_by:
        return _check(
            "refusal-outcome",
            "warn",
            f"the broker will refuse the first consumer-protocol member ({', '.join(refused_by)}): "
            + outcomes,
            hint="Fix what the failing checks name before the first bounce; a refused member does not "
            "join and the group stays classic.",
        )
    if unproven:
        return _check(
            "refusal-outcome",
            "warn",
            f"if the broker refuses the first member ({', '.join(unproven)} not proven): {outcomes}",
        )
    return _check("refusal-outcome", "pass", f"no refusal predicted; if one came: {outcomes}")


def static_id_advice(dynamic: int, total: int, to_consumer: bool) -> str:
    """The static-membership advice of a plan, with what a duplicate id does in each protocol
    (RULES["static-instance-ids"]); "" when every member is static and the path stays classic. A member
    bounced from classic to consumer with its id replaces its classic self: the broker allows that one
    replacement across protocols."""
    parts = []
    if dynamic:
        parts.append(
            f"{dynamic} of {plural(total, 'member')} "
            f"{verb(dynamic, 'has', 'have')} no group.instance.id: static membership makes a quick "
            "restart cost no rebalance at all"
        )
    if to_consumer:
        parts.append(
            "under the consumer protocol a second member with a group.instance.id already held is the one "
            "refused (UNRELEASED_INSTANCE_ID, fatal for Java and librdkafka), where the classic protocol "
            "fenced the first (FENCED_INSTANCE_ID): give every instance its own id, and stop the old pod "
            "before its replacement starts (no surge) or the replacement crashes"
        )
        parts.append(STATIC_BOUNCE_ADVICE)
    return "; ".join(parts)


# KIP-848 fences the NEW static member while the old one's session lasts (classic fenced the old one).
STATIC_BOUNCE_ADVICE: Final = (
    "a static member that closes cleanly leaves its id for its next incarnation at once, but one killed "
    "(or still shutting down) holds it until group.consumer.session.timeout.ms (45 s by default) runs out, "
    "and the replacement is refused until then: on each bounce, let the old process close, or if it was "
    "killed remove it (kafka-coop remove-members GROUP --instance-id ID), which frees the id at once, "
    "rather than wait out its session"
)


# --- sessions ----------------------------------------------------------------------------------------


class SessionFacts(BaseModel):
    """The broker's KIP-848 session settings and the group's override (None: unknown / not set)."""

    model_config = ConfigDict(frozen=True)

    session_ms: int | None = None  # group.consumer.session.timeout.ms
    min_ms: int | None = None  # group.consumer.min.session.timeout.ms
    max_ms: int | None = None  # group.consumer.max.session.timeout.ms
    heartbeat_ms: int | None = None  # group.consumer.heartbeat.interval.ms
    group_override_ms: int | None = None  # the group's consumer.session.timeout.ms


def session_override_command(group: str, session_ms: int, bootstrap: str | None = None) -> str:
    return (
        f"kafka-configs.sh --bootstrap-server {bootstrap or 'BROKER'} --alter --entity-type groups "
        f"--entity-name {group} --add-config consumer.session.timeout.ms={session_ms}"
    )


def session_check(
    group: str, restart_s: float | None, static: int, facts: SessionFacts, bootstrap: str | None = None
) -> Check:
    """A static member that restarts within the session keeps its partitions (it left with epoch -2);
    past it, the broker removes it and every restart moves its partitions twice. The session moves to
    the broker under KIP-848: `session.timeout.ms` of the members is dropped."""
    session = facts.group_override_ms or facts.session_ms or SESSION_DEFAULT_MS
    low, high = facts.min_ms or SESSION_MIN_MS, facts.max_ms or SESSION_MAX_MS
    heartbeat = facts.heartbeat_ms or HEARTBEAT_DEFAULT_MS
    where = (
        "the group's consumer.session.timeout.ms"
        if facts.group_override_ms
        else "group.consumer.session.timeout.ms"
    )
    bounds = f"bounds {low / 1000:g}-{high / 1000:g} s"
    base = f"the session moves to the broker: {where} = {session / 1000:g} s ({bounds})"
    if not static:
        return _check("session-timeout", "pass", base + "; no static members, so no restart waits on it")
    if restart_s is None:
        return _check(
            "session-timeout",
            "pass",
            base + f"; {plural(static, 'static member')} must restart within it to keep their partitions "
            "(give --restart-time to check)",
        )
    need_ms = math.ceil((restart_s * 1000 + heartbeat) / 1000) * 1000  # back before the next heartbeat is due
    if need_ms <= session:
        return _check("session-timeout", "pass", base + f"; a restart takes {restart_s:g} s: within it")
    if need_ms <= high:
        target = max(need_ms, low)
        return _check(
            "session-timeout",
            "warn",
            base + f"; a restart takes {restart_s:g} s, so every restart of a static member moves its "
            f"partitions away and back",
            hint="Raise the group's session before the bounce: "
            + session_override_command(group, target, bootstrap),
        )
    return _check(
        "session-timeout",
        "warn",
        base + f"; a restart takes {restart_s:g} s, beyond the broker's maximum session: every restart of a "
        "static member moves its partitions away and back",
        hint=f"Raise group.consumer.max.session.timeout.ms to at least {need_ms} in every broker's "
        "server.properties (a restart of the brokers), then set the group's consumer.session.timeout.ms: "
        + session_override_command(group, need_ms, bootstrap),
    )


# --- regex subscriptions -----------------------------------------------------------------------------

_NOT_RE2 = re.compile(r"\(\?<?[=!]|\\[1-9]")  # lookaround, backreferences: RE2 has neither


def regex_check(patterns: Mapping[str, tuple[str, Sequence[str]]]) -> Check:
    """member -> (the pattern it subscribes with, the topics it consumes today). Under the consumer
    protocol the broker evaluates the pattern with RE2J against the whole topic name: librdkafka's
    `^orders` (a prefix match today) keeps only `orders`, and RE2 has no lookaround or backreferences."""
    if not patterns:
        return _check(
            "regex-subscriptions",
            "pass",
            "no regex subscription declared (the broker evaluates them with RE2J over the whole topic name: "
            "^orders matches orders only, ^orders.* orders-eu too)",
        )
    losses: list[str] = []
    invalid: list[str] = []
    for member, (pattern, topics) in patterns.items():
        body = pattern[1:] if pattern.startswith("^") else pattern
        if _NOT_RE2.search(body):
            invalid.append(f"{member}: {pattern} (lookaround/backreference: not RE2 syntax)")
            continue
        try:
            compiled = re.compile(body)
        except re.error as exc:
            invalid.append(f"{member}: {pattern} ({exc})")
            continue
        lost = [t for t in topics if compiled.search(t) and not compiled.fullmatch(t)]
        if lost:
            losses.append(f"{member}: {pattern} would no longer match {', '.join(lost[:3])}")
        elif not topics and not body.endswith((".*", ".+", "$")):
            losses.append(
                f"{member}: {pattern} matches whole names only under RE2J (write {pattern}.* for a prefix)"
            )
    if invalid:
        return _check(
            "regex-subscriptions",
            "fail",
            "patterns the broker cannot compile with RE2J: " + "; ".join(invalid),
            members=tuple(m.split(":")[0] for m in invalid),
            hint="Rewrite them without lookaround or backreferences before the bounce.",
        )
    if losses:
        return _check(
            "regex-subscriptions",
            "fail",
            "under RE2J the broker matches the whole topic name: " + "; ".join(losses),
            members=tuple(m.split(":")[0] for m in losses),
            hint="Make the pattern match whole names (e.g. ^orders.*) before the bounce.",
        )
    return _check("regex-subscriptions", "pass", "every declared pattern matches whole topic names")

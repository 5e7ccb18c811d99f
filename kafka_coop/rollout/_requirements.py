"""A migration's broker and group prerequisites as checks (for KIP-848 the broker's own rules, `_kip848`).

The facts come from one fleet description, whether it was read off a live group or a fleet file, so
the plan's preconditions and its phase-0 gate judge the same facts the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from kafka_coop.inspection import MemberSnapshot
from kafka_coop.rollout._checks import Check
from kafka_coop.rollout._fleet import (
    MIGRATION_POLICIES,
    FleetDescription,
    group_version_level,
    group_version_origin,
)
from kafka_coop.rollout._kip848 import (
    REFUSALS,
    SessionFacts,
    broker_version_check,
    client_versions_check,
    consumer_protocol_check,
    metadata_check,
    policy_check,
    protocol_type_check,
    refusal_check,
    refusal_outcomes,
    regex_check,
    session_check,
    size_check,
    user_data_check,
)
from kafka_coop.rollout._spec import Requirements


class RequirementFacts(BaseModel):
    """What a migration's broker/group prerequisites are judged on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    group: str = ""
    kafka_version: str = "unknown"
    version_signal: str = ""
    rebalance_protocols: tuple[str, ...] | None = None
    migration_policy: str | None = None
    group_max_size: int | None = None
    group_consumer_max_size: int | None = None
    member_count: int = 0
    selected_assignor: str = ""
    carrying_user_data: tuple[str, ...] = ()  # members whose assignment carries userData
    user_data_unseen: tuple[str, ...] = ()  # members whose assignment bytes were not visible
    # the online upgrade's other rules (rollout/_kip848.py)
    group_version: int | None = None
    group_version_signal: str = ""
    protocol_type: str | None = None
    static_count: int = 0
    malformed: dict[str, str] = {}  # member -> why its protocol bytes do not decode
    clients: tuple[MemberSnapshot, ...] = ()
    patterns: dict[str, tuple[str, tuple[str, ...]]] = {}  # member -> (regex, topics it consumes)
    restart_s: float | None = None
    session: SessionFacts = SessionFacts()
    not_kafka_coop: tuple[str, ...] = ()  # members `rollout run` cannot change live


def requirement_facts(fleet: FleetDescription, *, restart_s: float | None = None) -> RequirementFacts:
    """The facts of `fleet`, built in this one place for the planner and the gate.

    A member's assignment bytes are "not visible" when it is a classic member of a classic group and the
    bytes were not read: live, DescribeGroups answers with them only while the group is Stable; in a
    fleet file an eager member needs none (eager assignors write no userData), others must say.
    `restart_s`: how long a member's restart takes (upgrade-plan --restart-time), else the longest a
    fleet file gives.
    """
    broker = fleet.broker
    live = fleet.source == "live"
    return RequirementFacts(
        group=fleet.group,
        kafka_version=fleet.broker_version or "unknown",
        version_signal=broker.kafka_version.signal,
        rebalance_protocols=broker.rebalance_protocols,
        migration_policy=broker.migration_policy if broker.migration_policy in MIGRATION_POLICIES else None,
        group_max_size=broker.group_max_size,
        group_consumer_max_size=broker.group_consumer_max_size,
        member_count=fleet.size,
        selected_assignor=fleet.selected_assignor or "",
        carrying_user_data=tuple(m.name for m in fleet.members if m.assignment_user_data),
        user_data_unseen=tuple(
            m.name
            for m in fleet.members
            if m.assignment_user_data is None
            and m.member_type.value == "classic"
            and fleet.group_type == "classic"
            and (live or m.rebalance_protocol.value != "eager")
        ),
        not_kafka_coop=tuple(m.name for m in fleet.members if not m.kafka_coop),
        group_version=group_version_level(broker.group_version),
        group_version_signal=group_version_origin(broker.group_version),
        protocol_type=fleet.protocol_type,
        static_count=sum(m.count for m in fleet.members if m.instance_id is not None),
        malformed={m.name: m.subscription_error for m in fleet.members if m.subscription_error},
        clients=fleet.members,
        patterns={m.name: (m.subscribed_regex, m.topics) for m in fleet.members if m.subscribed_regex},
        restart_s=restart_s if restart_s is not None else fleet.restart_s,
        session=SessionFacts(
            session_ms=broker.consumer_session_ms,
            min_ms=broker.consumer_min_session_ms,
            max_ms=broker.consumer_max_session_ms,
            heartbeat_ms=broker.consumer_heartbeat_ms,
            group_override_ms=broker.group_session_ms,
        ),
    )


def requirement_checks(req: Requirements, facts: RequirementFacts) -> list[Check]:
    """A migration's prerequisites as checks, each failing one with the hint of what to do and the broker
    rule it mirrors. For an online upgrade to the consumer protocol they are the broker's own refusals,
    in the order it applies them, then what each client does if refused, then KIP-848's plan rules."""
    direction = req.policy_allows or "upgrade"
    checks: list[Check] = []
    if req.broker_min is not None:
        checks.append(broker_version_check(facts.kafka_version, facts.version_signal, req.broker_min))
        checks.append(
            consumer_protocol_check(
                facts.rebalance_protocols, facts.group_version, facts.group_version_signal
            )
        )
    if req.policy_allows is not None:
        checks.append(policy_check(facts.migration_policy, req.policy_allows))
    if req.online_upgrade:
        checks.append(protocol_type_check(facts.protocol_type))
    if req.size_limit is not None:
        limit = (
            facts.group_consumer_max_size
            if req.size_limit == "group.consumer.max.size"
            else facts.group_max_size
        )
        checks.append(
            size_check(facts.member_count, facts.static_count, limit, direction, facts.kafka_version)
        )
    if req.online_upgrade:
        checks.append(metadata_check(facts.malformed))
    if req.no_assignment_user_data:
        checks.append(
            user_data_check(
                facts.carrying_user_data, facts.user_data_unseen, facts.selected_assignor, facts.group
            )
        )
    if req.kafka_coop_members:
        checks.append(kafka_coop_members_check(facts.not_kafka_coop))
    if req.online_upgrade:
        refusals = [c for c in checks if c.name in REFUSALS]
        outcome = refusal_outcomes(facts.clients)
        checks = [  # a refusal says what it does to the first bounced member
            c.model_copy(update={"reason": f"{c.reason}; the first member bounced is refused: {outcome}"})
            if c.name in REFUSALS and c.status == "fail"
            else c
            for c in checks
        ]
        checks.append(client_versions_check(facts.clients))
        checks.append(
            refusal_check(
                facts.clients,
                refused_by=[c.name for c in refusals if c.status == "fail"],
                unproven=[c.name for c in refusals if c.status == "warn"],
            )
        )
        checks.append(session_check(facts.group, facts.restart_s, facts.static_count, facts.session))
        checks.append(regex_check(facts.patterns))
    return checks


def kafka_coop_members_check(not_kafka_coop: Sequence[str]) -> Check:
    """A coordinated cutover changes every member live: each must be a kafka-coop member (its manifest
    says so) that `rollout run` reaches through the control topic."""
    if not not_kafka_coop:
        return Check(
            name="kafka-coop-members",
            status="pass",
            reason="every member is a kafka-coop member: rollout run changes them all live",
        )
    return Check(
        name="kafka-coop-members",
        status="fail",
        reason=f"{', '.join(not_kafka_coop[:5])}{' …' if len(not_kafka_coop) > 5 else ''} "
        f"{'is not a kafka-coop member' if len(not_kafka_coop) == 1 else 'are not kafka-coop members'}"
        " (no manifest names kafka-coop), and this cutover changes every member live",
        members=tuple(not_kafka_coop),
        hint="Run every member on CoopConsumer(control=True) with the manifest topic, or take another path.",
    )

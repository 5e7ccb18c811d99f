"""A migration's broker and group prerequisites (version, protocols, policy, userData, size) as checks.

The facts come from one fleet description, whether it was read off a live group or a fleet file, so
the plan's preconditions and its phase-0 gate judge the same facts the same way.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from kafka_coop.inspection import version_at_least
from kafka_coop.rollout._checks import Check
from kafka_coop.rollout._fleet import FleetDescription
from kafka_coop.rollout._spec import Requirements


class RequirementFacts(BaseModel):
    """What a migration's broker/group prerequisites are judged on."""

    model_config = ConfigDict(frozen=True)

    group: str = ""
    kafka_version: str = "unknown"
    version_signal: str = ""
    rebalance_protocols: tuple[str, ...] | None = None
    migration_policy: str | None = None
    group_max_size: int | None = None
    group_consumer_max_size: int | None = None
    member_count: int = 0
    assignor: str = ""
    carrying_user_data: tuple[str, ...] = ()  # members whose assignment carries userData
    user_data_unseen: tuple[str, ...] = ()  # members whose assignment bytes were not visible


def requirement_facts(fleet: FleetDescription) -> RequirementFacts:
    """The facts of `fleet`, built in this one place for the planner and the gate.

    A member's assignment bytes are "not visible" when it is a classic member of a classic group and the
    bytes were not read: live, DescribeGroups answers with them only while the group is Stable; in a
    fleet file an eager member needs none (eager assignors write no userData), others must say.
    """
    broker = fleet.broker
    live = fleet.source == "live"
    return RequirementFacts(
        group=fleet.group,
        kafka_version=broker.version or "unknown",
        version_signal=broker.version_source,
        rebalance_protocols=broker.rebalance_protocols,
        migration_policy=broker.migration_policy,
        group_max_size=broker.group_max_size,
        group_consumer_max_size=broker.group_consumer_max_size,
        member_count=fleet.size,
        assignor=fleet.selected_assignor or "",
        carrying_user_data=tuple(m.label for m in fleet.members if m.assignment_user_data),
        user_data_unseen=tuple(
            m.label
            for m in fleet.members
            if m.assignment_user_data is None
            and m.member_type == "classic"
            and fleet.group_type == "classic"
            and (live or m.protocol != "eager")
        ),
    )


def requirement_checks(req: Requirements, facts: RequirementFacts) -> list[Check]:
    """A migration's prerequisites as checks, each failing one with the hint of what to do."""
    checks: list[Check] = []
    if req.broker_min is not None:
        ok = version_at_least(facts.kafka_version, req.broker_min)
        want = f"{req.broker_min[0]}.{req.broker_min[1]}"
        checks.append(
            Check(
                name="broker-version",
                status="pass" if ok else ("warn" if ok is None else "fail"),
                reason=f"broker is {facts.kafka_version}, the path needs >= {want}"
                + (f" ({facts.version_signal})" if facts.version_signal else ""),
                hint="" if ok else "Upgrade the brokers to Apache Kafka 4.0 or later first.",
            )
        )
        protocols = facts.rebalance_protocols
        enabled = protocols is not None and "consumer" in protocols
        checks.append(
            Check(
                name="consumer-protocol-enabled",
                status="pass" if enabled else ("warn" if protocols is None else "fail"),
                reason="group.coordinator.rebalance.protocols = "
                + (",".join(protocols) if protocols else "unknown"),
                hint=""
                if enabled
                else "Add consumer to group.coordinator.rebalance.protocols on the brokers.",
            )
        )
    if req.policy_allows is not None:
        policy = facts.migration_policy
        allowed = policy in ("bidirectional", req.policy_allows)
        checks.append(
            Check(
                name="migration-policy",
                status="pass" if allowed else ("warn" if policy is None else "fail"),
                reason=(
                    f"group.consumer.migration.policy = {policy or 'unknown'}; this {req.policy_allows} "
                    + (
                        "is allowed"
                        if allowed
                        else f"is refused by the broker: set it to {req.policy_allows} or bidirectional"
                    )
                ),
                hint="" if allowed else "Set group.consumer.migration.policy on the brokers and re-plan.",
            )
        )
    if req.no_assignment_user_data:
        checks.append(_user_data_check(facts))
    if req.size_limit is not None:
        limit = (
            facts.group_consumer_max_size
            if req.size_limit == "group.consumer.max.size"
            else facts.group_max_size
        )
        ok_size = limit is None or facts.member_count <= limit
        checks.append(
            Check(
                name="group-size",
                status="pass" if ok_size else "fail",
                reason=f"{facts.member_count} members, {req.size_limit} = "
                + (str(limit) if limit is not None else "unknown"),
                hint=""
                if ok_size
                else "Scale the group below the limit or raise the broker setting, then re-plan.",
            )
        )
    return checks


def _user_data_check(facts: RequirementFacts) -> Check:
    carrying, unseen = facts.carrying_user_data, facts.user_data_unseen
    if unseen and not carrying:
        return Check(
            name="no-custom-user-data",
            status="warn",
            reason=f"the assignment bytes of {len(unseen)} member(s) were not visible (the group "
            "answers DescribeGroups with them only while Stable); re-run to prove it",
            members=unseen,
            hint="Re-run the gate while the group is Stable.",
        )
    if carrying:
        return Check(
            name="no-custom-user-data",
            status="fail",
            reason=f"{len(carrying)} member assignment(s) carry userData (written by the group leader's "
            f"{facts.assignor or 'selected'} assignor; librdkafka's cooperative-sticky can): "
            "the broker refuses to convert the group "
            '("userData from a custom assignor would be lost")',
            members=carrying,
            hint="Route around it: cut over to range first (kafka-coop downgrade-plan "
            f"{facts.group or 'GROUP'} --to eager), whose assignments carry no userData, then upgrade "
            "--to consumer.",
        )
    return Check(name="no-custom-user-data", status="pass", reason="no assignment carries custom userData")

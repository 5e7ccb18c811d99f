"""The broker's rules and KIP-848's own in the plans to the consumer protocol (fleet files, no broker)."""

from __future__ import annotations

from kafka_coop.inspection import Fact, GroupSnapshot
from kafka_coop.inspection._model import BrokerFacts
from kafka_coop.rollout import Plan, fleet_from_snapshot, make_plan, parse_fleet
from tests.unit.builders import MIGRATIONS, group_snapshot, member_snapshot, plan_of_file

BROKER = """
broker:
  version: "4.1"
  migration_policy: bidirectional
  rebalance_protocols: [classic, consumer]
  group_version: 1
"""


RDK = "  - {family: librdkafka, version: '2.16.0', count: 3, assignors: [range]}\n"


def _pre(plan: Plan) -> dict[str, object]:
    return {c.name: c for c in plan.preconditions}


def test_a_ready_plan_names_the_broker_rule_behind_each_precondition() -> None:
    plan = plan_of_file(BROKER, RDK)
    assert plan.status == "ready", plan.blockers
    checks = _pre(plan)
    assert {
        "protocol-type",
        "metadata-decodes",
        "client-versions",
        "refusal-outcome",
        "session-timeout",
    } <= set(checks)
    rules = {c.name: c.rule for c in plan.preconditions}
    assert "validateOnlineUpgrade" in rules["migration-policy"]
    assert "isConsumerGroupProtocolEnabled" in rules["consumer-protocol-enabled"]
    assert "fromClassicGroup" in rules["no-custom-user-data"]
    refusal = next(c for c in plan.preconditions if c.name == "refusal-outcome")
    assert (
        refusal.status == "pass" and "3 librdkafka 2.16.0 members: stop with a fatal error" in refusal.reason
    )


def test_a_connect_group_is_blocked_by_its_protocol_type() -> None:
    plan = plan_of_file(BROKER, RDK, "protocol_type: connect\n")
    assert plan.status == "blocked"
    blocker = next(b for b in plan.blockers if b.name == "protocol-type")
    assert "'connect'" in blocker.reason and "stop with a fatal error" in blocker.reason


def test_assignment_user_data_is_refused_and_the_plan_says_what_the_first_member_does() -> None:
    plan = plan_of_file(
        BROKER,
        "  - {family: librdkafka, version: '2.13.0', count: 2, assignors: [cooperative-sticky], "
        "assignment_user_data: true}\n",
    )
    blocker = next(b for b in plan.blockers if b.name == "no-custom-user-data")
    assert "keep retrying and consume nothing" in blocker.reason, "librdkafka before 2.15 retries"
    assert any("refusal-outcome" in w for w in plan.warnings)


def test_group_version_zero_blocks_with_the_feature_command() -> None:
    text = f"group: orders\n{BROKER.replace('group_version: 1', 'group_version: 0')}members:\n{RDK}"
    blocked = make_plan(parse_fleet(text, "f.yaml"), "upgrade", "consumer", MIGRATIONS)
    blocker = next(b for b in blocked.blockers if b.name == "consumer-protocol-enabled")
    assert "--feature group.version=1" in blocker.hint


def test_a_static_fleet_restarting_longer_than_the_session_gets_the_override_command() -> None:
    plan = plan_of_file(BROKER, RDK.replace("count: 3,", "count: 3, static: true, restart_s: 50,"))
    session = next(c for c in plan.preconditions if c.name == "session-timeout")
    assert session.status == "warn"
    assert (
        "--entity-type groups --entity-name orders --add-config consumer.session.timeout.ms=55000"
        in session.hint
    )
    assert any("session-timeout" in w for w in plan.warnings)


def test_restart_time_from_the_command_line_is_held_against_the_session() -> None:
    plan = plan_of_file(BROKER, RDK.replace("count: 3,", "count: 3, static: true,"), restart_s=70.0)
    session = next(c for c in plan.preconditions if c.name == "session-timeout")
    assert session.status == "warn" and "group.consumer.max.session.timeout.ms" in session.hint


def test_a_prefix_regex_subscription_blocks_the_path_with_the_re2j_rule() -> None:
    plan = plan_of_file(
        BROKER, RDK.replace("count: 3,", "count: 3, pattern: '^orders', topics: [orders, orders-eu],")
    )
    blocker = next(b for b in plan.blockers if b.name == "regex-subscriptions")
    assert "orders-eu" in blocker.reason and "^orders.*" in blocker.hint


def test_an_old_librdkafka_is_not_offered_the_path() -> None:
    plan = plan_of_file(BROKER, "  - {family: librdkafka, version: '2.11.1', count: 1, assignors: [range]}\n")
    assert plan.status == "blocked"
    assert "2.11.1" in " ".join(b.reason for b in plan.blockers)


def test_the_static_id_advice_carries_the_duplicate_id_rule() -> None:
    dynamic = plan_of_file(BROKER, RDK)
    assert any("UNRELEASED_INSTANCE_ID" in w and "have no group.instance.id" in w for w in dynamic.warnings)
    static = plan_of_file(BROKER, RDK.replace("count: 3,", "count: 3, static: true,"))
    assert any(w.startswith("under the consumer protocol") for w in static.warnings)


def test_classic_only_keys_are_dropped_per_family() -> None:
    java = "  - {family: java, version: '4.1.1', count: 1, assignors: [range]}\n"
    (phase,) = plan_of_file(BROKER, RDK + java).phases
    assert set(phase.config["librdkafka"].remove) >= {
        "partition.assignment.strategy",
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "group.protocol.type",
    }
    assert "group.protocol.type" not in phase.config["java"].remove


UNKNOWN_VERSION = Fact[str | None](value=None, source="unknown")


def _live_group(client_version: Fact[str | None] = UNKNOWN_VERSION) -> GroupSnapshot:
    """A live group of one eager librdkafka member on a 4.1 broker that said its group.version."""
    return group_snapshot(
        member_snapshot(
            "m-1", client_id="c", host="/127.0.0.1", assignment=(("t", 0),), client_version=client_version
        ),
        group="orders",
        broker=BrokerFacts(
            kafka_version=Fact(value="4.1", source="inferred", signal="ApiVersions"),
            group_version=Fact(value="1", source="broker", signal="ApiVersions finalized features"),
            rebalance_protocols=("classic", "consumer"),
        ),
    )


def test_the_group_version_the_broker_said_is_named_without_nested_parentheses() -> None:
    plan = make_plan(fleet_from_snapshot(_live_group()), "upgrade", "consumer", MIGRATIONS)
    check = next(c for c in plan.preconditions if c.name == "consumer-protocol-enabled")
    assert "group.version = 1 (broker: ApiVersions finalized features)" in check.reason, check.reason
    assert "((" not in check.reason and "))" not in check.reason


def test_a_member_version_read_from_its_manifest_is_named_without_nested_parentheses() -> None:
    declared = Fact[str | None](value="2.11.1", source="declared", signal="the manifest's librdkafka version")
    plan = make_plan(fleet_from_snapshot(_live_group(declared)), "upgrade", "consumer", MIGRATIONS)
    blocker = next(b for b in plan.blockers if b.name == "path:classic-to-consumer")
    assert "1 librdkafka member at 2.11.1 (declared: the manifest's librdkafka version)" in blocker.reason
    assert "((" not in blocker.reason

"""KIP-848's rules as the broker applies them: each refusal, each family's answer to it, sessions,
static ids and regex subscriptions. The broker side of each is shown on a real broker in
tests/integration/rollout/test_kip848_preflight.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_coop.families import catalog, parse_catalog
from kafka_coop.rollout._kip848 import (
    RULES,
    SessionFacts,
    broker_version_check,
    client_versions_check,
    consumer_protocol_check,
    metadata_check,
    policy_check,
    protocol_type_check,
    refusal_check,
    regex_check,
    session_check,
    size_check,
    static_id_advice,
    user_data_check,
)
from tests.unit.builders import fleet_member

FAMILIES = Path(__file__).parents[3] / "migrations" / "families" / "families.yaml"


def test_every_rule_names_the_code_that_enforces_it() -> None:
    for name, rule in RULES.items():
        assert any(
            word in rule
            for word in ("GroupMetadataManager", "ConsumerGroup", "KafkaApis", "Group", "families.yaml")
        ), name


@pytest.mark.parametrize(
    ("policy", "status"),
    [
        ("bidirectional", "pass"),
        ("upgrade", "pass"),
        ("downgrade", "fail"),
        ("disabled", "fail"),
        (None, "warn"),
    ],
)
def test_the_upgrade_policy_rule(policy: str | None, status: str) -> None:
    check = policy_check(policy, "upgrade")
    assert (check.name, check.status) == ("migration-policy", status)
    assert "validateOnlineUpgrade" in check.rule


def test_the_downgrade_policy_rule_names_the_downgrade_code() -> None:
    check = policy_check("upgrade", "downgrade")
    assert (check.status, check.name) == ("fail", "migration-policy")
    assert "validateOnlineDowngrade" in check.rule


def test_a_connect_group_is_refused_by_its_protocol_type() -> None:
    check = protocol_type_check("connect")
    assert check.status == "fail"
    assert "'connect'" in check.reason and "usesConsumerGroupProtocol" in check.rule


def test_a_consumer_protocol_type_passes_and_an_unseen_one_is_not_proven() -> None:
    assert protocol_type_check("consumer").status == "pass"
    assert protocol_type_check(None).status == "warn"


@pytest.mark.parametrize(
    ("members", "static", "limit", "status"),
    [
        (3, 0, None, "pass"),
        (3, 0, 3, "pass"),  # a dynamic member leaves first: it joins a group of 2 < 3
        (3, 3, 3, "fail"),  # a static member stays listed: its new incarnation finds 3 = the limit
        (3, 1, 4, "pass"),
        (5, 0, 4, "fail"),  # the conversion itself is refused
    ],
)
def test_the_size_rule_counts_who_is_listed_when_the_first_member_joins(
    members: int, static: int, limit: int | None, status: str
) -> None:
    check = size_check(members, static, limit, "upgrade")
    assert check.status == status
    assert "throwIfConsumerGroupIsFull" in check.rule


@pytest.mark.parametrize(("broker", "status"), [("4.1", "fail"), ("unknown", "fail"), ("4.4+", "pass")])
def test_from_kafka_4_4_a_static_member_takes_its_own_place_in_a_full_group(broker: str, status: str) -> None:
    """KAFKA-20601: 4.4 admits a static member replacing its listed self; an unknown broker is judged
    by the older rule, so the plan never promises what an older broker refuses."""
    assert size_check(3, 3, 3, "upgrade", broker).status == status


def test_the_downgrade_size_rule_is_group_max_size() -> None:
    check = size_check(5, 0, 4, "downgrade")
    assert (check.name, check.status) == ("group-size", "fail")
    assert "group.max.size" in check.reason


def test_malformed_metadata_is_refused_naming_the_member() -> None:
    check = metadata_check({"pod-2": "subscription: cannot decode topics at offset 2"})
    assert (check.status, check.members) == ("fail", ("pod-2",))
    assert "fromClassicGroup" in check.rule


def test_user_data_is_refused_with_the_route_around_it() -> None:
    check = user_data_check(["pod-1"], [], "cooperative-sticky", "orders")
    assert check.status == "fail"
    assert "downgrade-plan orders --to eager" in check.hint
    assert "userData" in check.rule


@pytest.mark.parametrize(
    ("protocols", "level", "status", "hint"),
    [
        (("classic", "consumer"), 1, "pass", ""),
        (("classic", "consumer"), 0, "fail", "--feature group.version=1"),
        (("classic",), 1, "fail", "group.coordinator.rebalance.protocols"),
        (("classic", "consumer"), None, "warn", ""),
    ],
)
def test_the_consumer_protocol_needs_both_the_setting_and_the_feature(
    protocols: tuple[str, ...], level: int | None, status: str, hint: str
) -> None:
    check = consumer_protocol_check(protocols, level)
    assert check.status == status
    assert hint in check.hint
    assert "isConsumerGroupProtocolEnabled" in check.rule


def test_a_3x_broker_fails_the_version_rule() -> None:
    assert broker_version_check("3.7-3.9", "KIP-848 early-access configs").status == "fail"
    assert broker_version_check("4.1+").status == "pass"
    assert broker_version_check(None).status == "warn"


def test_what_each_family_does_when_refused() -> None:
    clients = [
        fleet_member("a", family="librdkafka", version="2.16.0", count=2),
        fleet_member("b", family="librdkafka", version="2.13.0"),
        fleet_member("c", family="java", version="4.1.1"),
        fleet_member("d", family="franz-go"),
    ]
    check = refusal_check(clients, refused_by=["no-custom-user-data"], unproven=[])
    assert check.status == "warn", "the refusal itself is the blocker; this says what follows"
    assert "2 librdkafka 2.16.0 members: stop with a fatal error" in check.reason
    assert "(>= 2.15)" in check.reason
    assert "1 librdkafka 2.13.0 member: keep retrying and consume nothing" in check.reason
    assert "1 java 4.1.1 member: stop with a fatal error" in check.reason
    assert "1 franz-go member: keep retrying" in check.reason


def test_an_unknown_client_is_not_given_an_answer() -> None:
    check = refusal_check([fleet_member("x", family="unknown")], refused_by=["protocol-type"], unproven=[])
    assert "client not known" in check.reason


def test_an_unknown_librdkafka_version_gives_both_answers() -> None:
    check = refusal_check([fleet_member("a", family="librdkafka")], refused_by=[], unproven=["group-size"])
    assert check.status == "warn"
    assert "from 2.15 on" in check.reason and "before" in check.reason


def test_no_refusal_predicted_passes_and_still_says_the_outcome() -> None:
    check = refusal_check([fleet_member("a", family="java")], refused_by=[], unproven=[])
    assert check.status == "pass" and "fatal" in check.reason


def test_clients_without_kip848_ga_fail_and_unknown_versions_warn() -> None:
    old = client_versions_check([fleet_member("p", family="librdkafka", version="2.11.1")])
    assert old.status == "fail" and "2.11.1 < 2.12" in old.reason
    assert (
        client_versions_check([fleet_member("k", family="kafka-python", version="3.0.12")]).status == "fail"
    )
    assert client_versions_check([fleet_member("j", family="java")]).status == "warn"
    assert client_versions_check([fleet_member("j", family="java", version="4.1.1")]).status == "pass"


def test_the_static_id_advice_says_who_is_refused_under_each_protocol() -> None:
    advice = static_id_advice(2, 3, to_consumer=True)
    assert "UNRELEASED_INSTANCE_ID" in advice and "FENCED_INSTANCE_ID" in advice and "surge" in advice
    assert "UNRELEASED" not in static_id_advice(2, 3, to_consumer=False)
    assert static_id_advice(0, 3, to_consumer=False) == ""
    assert static_id_advice(0, 3, to_consumer=True).startswith("under the consumer protocol")
    assert "getOrMaybeSubscribeStaticConsumerGroupMember" in RULES["static-instance-ids"]


@pytest.mark.parametrize(
    ("restart_s", "override", "status", "hint"),
    [
        (30.0, None, "pass", ""),
        (
            50.0,
            None,
            "warn",
            "--entity-type groups --entity-name orders --add-config consumer.session.timeout.ms=55000",
        ),
        (50.0, 58_000, "pass", ""),
        (70.0, None, "warn", "group.consumer.max.session.timeout.ms to at least 75000"),
    ],
)
def test_a_static_restart_longer_than_the_broker_session_gets_the_override_command(
    restart_s: float, override: int | None, status: str, hint: str
) -> None:
    facts = SessionFacts(
        session_ms=45_000, min_ms=45_000, max_ms=60_000, heartbeat_ms=5_000, group_override_ms=override
    )
    check = session_check("orders", restart_s, static=3, facts=facts, bootstrap="kafka:9092")
    assert check.status == status
    assert hint in check.hint
    if hint:
        assert check.hint.count("kafka-configs.sh --bootstrap-server kafka:9092") == 1


def test_the_session_does_not_matter_to_dynamic_members() -> None:
    check = session_check("orders", 300.0, static=0, facts=SessionFacts())
    assert check.status == "pass" and "45 s" in check.reason


def test_a_prefix_regex_loses_the_topics_it_matched_only_as_a_prefix() -> None:
    check = regex_check({"pod-0": ("^orders", ["orders", "orders-eu"])})
    assert check.status == "fail"
    assert "orders-eu" in check.reason and check.members == ("pod-0",)
    assert "matches()" in check.rule


def test_a_whole_name_regex_passes() -> None:
    assert regex_check({"pod-0": ("^orders.*", ["orders", "orders-eu"])}).status == "pass"


def test_lookaround_is_not_re2() -> None:
    check = regex_check({"pod-0": ("^(?!internal).*", ["orders"])})
    assert check.status == "fail" and "not RE2" in check.reason


def test_without_declared_patterns_the_rule_is_stated() -> None:
    check = regex_check({})
    assert check.status == "pass" and "RE2J" in check.reason


def test_a_kip848_family_must_say_what_it_does_when_refused() -> None:
    text = FAMILIES.read_text()
    start = text.index("    kip848_refused: {action: retries")
    broken = text[:start] + text[text.index("\n", start) + 1 :]
    with pytest.raises(ValueError, match="franz-go: kip848_refused"):
        parse_catalog(broken, "families.yaml")


def test_librdkafka_became_fatal_on_refusal_in_2_15() -> None:
    refused = catalog()["librdkafka"].kip848_refused
    assert refused is not None
    assert (refused.at("2.16.0"), refused.at("2.14.2"), refused.at(None)) == ("fatal", "retries", None)

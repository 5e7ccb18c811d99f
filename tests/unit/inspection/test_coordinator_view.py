"""What the coordinator says (ConsumerGroupDescribe) in a snapshot: it comes first, only where it spoke."""

from __future__ import annotations

import pytest

from kafka_coop.inspection import MemberAnswers, broker_facts, group_kind, infer_members
from tests.unit.builders import live_member, manifest

BARE_UUID = "IX00uMkvRcCQFn141t6KHQ"  # what the broker gives a classic member joining a consumer group


CONSUMER_MANIFEST = manifest(
    BARE_UUID,
    client_id="svc",
    libraries={"librdkafka": "2.16.0"},
    group_protocol="consumer",
    assignors=(),
    rebalance_protocol="consumer",
)
"""What a consumer-protocol librdkafka member declares."""


def _svc(member_id: str = BARE_UUID, **kw: object) -> MemberAnswers:
    """A member of client id svc (no family in it), by default under the id the broker gives."""
    return live_member(member_id=member_id, client_id="svc", **kw)  # type: ignore[arg-type]


def test_without_the_coordinator_a_bare_uuid_reads_as_a_consumer_member() -> None:
    (member,) = infer_members("g", "consumer", "uniform", [_svc()])
    assert (member.member_type.value, member.member_type.source) == ("consumer", "inferred")


def test_the_coordinators_member_type_comes_first_and_names_its_request() -> None:
    (member,) = infer_members(
        "g", "consumer", "uniform", [_svc(broker_type="classic")], view_api="ConsumerGroupDescribe v1"
    )
    assert (member.member_type.value, member.member_type.source) == ("classic", "broker")
    assert member.member_type.signal == "ConsumerGroupDescribe v1"


def test_the_coordinator_is_believed_over_a_manifest() -> None:
    (member,) = infer_members(
        "g", "consumer", "uniform", [_svc(broker_type="classic")], [CONSUMER_MANIFEST], view_api="x"
    )
    assert member.member_type.source == "broker" and member.manifest is not None


def test_a_v0_answer_without_member_type_leaves_the_type_to_the_other_signals() -> None:
    (member,) = infer_members("g", "consumer", "uniform", [_svc(broker_type="unknown", member_epoch=4)])
    assert member.member_type.source == "inferred"
    assert member.member_epoch == 4


def test_epochs_and_targets_are_carried_through() -> None:
    (member,) = infer_members(
        "g",
        "consumer",
        "uniform",
        [_svc(broker_type="consumer", member_epoch=7, target_assignment=(("t", 0),), subscribed_regex="")],
    )
    assert (member.member_epoch, member.target_assignment, member.subscribed_regex) == (7, (("t", 0),), None)


def test_a_connect_group_is_not_read_as_the_consumer_protocol() -> None:
    connect = _svc("worker-1-0b5f4c1e-7d0a-4e4b-9a55-3f1f2d4b6c7e", subscription=b"connect-worker-metadata")
    (member,) = infer_members("g", "classic", "sessioned", [connect], protocol_type="connect")
    assert member.subscription is None and member.subscription_error is None
    assert member.rebalance_protocol.signal == "protocol type connect"


@pytest.mark.parametrize(
    ("group_type", "protocol_type", "simple", "kind"),
    [
        ("classic", "consumer", False, "classic"),
        ("classic", "connect", False, "connect"),
        ("consumer", "consumer", False, "consumer"),
        ("share", "share", False, "share"),
        ("streams", "streams", False, "streams"),
        ("classic", "", True, "simple"),
    ],
)
def test_each_group_kind_is_named_as_kafkas_tools_name_it(
    group_type: str, protocol_type: str, simple: bool, kind: str
) -> None:
    assert group_kind(group_type, protocol_type, simple) == kind


def test_group_version_comes_exactly_from_the_finalized_features() -> None:
    configs = {
        "group.consumer.migration.policy": "bidirectional",
        "group.coordinator.rebalance.protocols": "classic,consumer",
    }
    facts = broker_facts(1, configs, features={"group.version": 1, "metadata.version": 27})
    assert (facts.group_version.value, facts.group_version.source) == ("1", "broker")
    off = broker_facts(1, configs, features={"metadata.version": 21})
    assert off.group_version.value == "0" and "not finalized" in off.group_version.signal


def test_the_session_settings_and_the_groups_override_are_read() -> None:
    configs = {
        "group.consumer.session.timeout.ms": "45000",
        "group.consumer.min.session.timeout.ms": "6000",
        "group.consumer.max.session.timeout.ms": "60000",
        "group.consumer.heartbeat.interval.ms": "5000",
    }
    facts = broker_facts(1, configs, group_configs={"consumer.session.timeout.ms": "50000"})
    assert (facts.consumer_session_ms, facts.consumer_min_session_ms, facts.consumer_max_session_ms) == (
        45_000,
        6_000,
        60_000,
    )
    assert (facts.consumer_heartbeat_ms, facts.group_session_ms) == (5_000, 50_000)


def test_the_release_read_off_the_apis_beats_the_config_keys() -> None:
    """Kafka 3.8 has group.consumer.migration.policy and no group.coordinator.new.enable: by its config
    keys alone it read as 4.0+ (seen on a 3.8.1 sandbox)."""
    configs = {
        "group.consumer.migration.policy": "disabled",
        "group.coordinator.rebalance.protocols": "classic",
    }
    assert broker_facts(1, configs).kafka_version.value == "4.0+"
    facts = broker_facts(1, configs, release="3.8")
    assert (facts.kafka_version.value, facts.kafka_version.signal) == (
        "3.8",
        "ApiVersions: the APIs it serves",
    )

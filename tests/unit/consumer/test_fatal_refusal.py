"""A refused online upgrade is one sentence: librdkafka (2.15+) makes the broker's GROUP_ID_NOT_FOUND on
a ConsumerGroupHeartbeat fatal and passes on no broker message, so the consumer names the broker's
refusal rules and where the preflight names the one at hand."""

from __future__ import annotations

from dataclasses import replace

import pytest
from confluent_kafka import KafkaError

from kafka_coop.consumer._fatal import fatal_code_from_text, fatal_error
from kafka_coop.consumer._refusal import UpgradeFacts, refusal

LIBRDKAFKA_TEXT = (
    "[thrd:main]: Fatal error: Broker: The group id does not exist: ConsumerGroupHeartbeat fatal error: "
    "Broker: The group id does not exist"
)


def test_librdkafkas_fatal_heartbeat_text_reads_as_group_id_not_found() -> None:
    assert fatal_code_from_text(LIBRDKAFKA_TEXT) == KafkaError.GROUP_ID_NOT_FOUND


def test_a_refused_consumer_protocol_member_names_the_brokers_rules_and_the_preflight() -> None:
    failed = fatal_error(
        fatal_code_from_text(LIBRDKAFKA_TEXT),
        LIBRDKAFKA_TEXT,
        group="orders",
        instance_id=None,
        protocol="consumer",
    )
    assert failed.message.startswith("The broker refused this consumer-protocol member of group 'orders'")
    for rule in (
        "group.consumer.migration.policy",
        "protocol type is not 'consumer'",
        "group.consumer.max.size",
    ):
        assert rule in failed.message
    assert "userData" in failed.message
    assert failed.hint is not None and "kafka-coop upgrade-plan orders --to consumer" in failed.hint


def test_a_classic_members_group_id_not_found_keeps_the_plain_sentence() -> None:
    failed = fatal_error(
        KafkaError.GROUP_ID_NOT_FOUND, "x", group="orders", instance_id=None, protocol="eager"
    )
    assert "stopped on a fatal error: GROUP_ID_NOT_FOUND" in failed.message


FITS = UpgradeFacts(policy="bidirectional", protocol_type="consumer", members=2, max_size=10, user_data=())


@pytest.mark.parametrize(
    ("facts", "clause"),
    [
        (replace(FITS, policy="disabled"), "group.consumer.migration.policy is 'disabled'"),
        (replace(FITS, policy="downgrade"), "group.consumer.migration.policy is 'downgrade'"),
        (replace(FITS, protocol_type="connect"), "protocol type is 'connect', not 'consumer'"),
        (replace(FITS, members=11), "the group has 11 members, more than group.consumer.max.size = 10"),
        (replace(FITS, user_data=("rd-b", "rd-a")), "the assignment of 2 members (rd-a, rd-b) carries"),
    ],
    ids=["disabled", "downgrade-only", "protocol-type", "size", "user-data"],
)
def test_the_rule_that_refused_is_named(facts: UpgradeFacts, clause: str) -> None:
    found = refusal(facts)
    assert found is not None and clause in found.rule


def test_the_policy_is_named_first_as_the_broker_checks_it_first() -> None:
    found = refusal(replace(FITS, policy="disabled", protocol_type="connect", members=99))
    assert found is not None and "migration.policy" in found.rule


def test_a_group_the_rules_admit_names_no_rule() -> None:
    assert refusal(FITS) is None
    assert refusal(UpgradeFacts(policy=None, protocol_type=None, members=None, max_size=None)) is None


def test_a_refusal_read_from_the_group_is_one_sentence_with_its_remedy() -> None:
    found = refusal(replace(FITS, members=11))
    failed = fatal_error(
        KafkaError.GROUP_ID_NOT_FOUND,
        "x",
        group="orders",
        instance_id=None,
        protocol="consumer",
        refusal=found,
    )
    assert failed.message == (
        "The broker refused this consumer-protocol member of group 'orders' (GROUP_ID_NOT_FOUND): it will "
        "not convert the classic group online because the group has 11 members, more than "
        "group.consumer.max.size = 10."
    )
    assert failed.hint is not None and failed.hint.startswith(
        "To upgrade online, raise group.consumer.max.size"
    )

"""A refused online upgrade is one sentence: librdkafka (2.15+) makes the broker's GROUP_ID_NOT_FOUND on
a ConsumerGroupHeartbeat fatal and passes on no broker message, so the consumer names the broker's
refusal rules and where the preflight names the one at hand."""

from __future__ import annotations

from confluent_kafka import KafkaError

from kafka_coop.consumer._fatal import fatal_code_from_text, fatal_error

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

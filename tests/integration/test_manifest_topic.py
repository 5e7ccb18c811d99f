"""`kafka-coop manifest-topic` and `control-topic`: one command makes each compacted topic kafka-coop
owns and names the ACLs."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopConsumer
from kafka_coop.control import CONTROL_TOPIC, CONTROL_TOPIC_CONFIG
from kafka_coop.manifest import MANIFEST_TOPIC_CONFIG
from tests.conftest import CliResult
from tests.integration.members import wait_for


def test_manifest_topic_creates_a_compacted_topic_and_lists_member_acls(
    bootstrap: str, admin: ClusterAdmin, run_cli: Callable[..., CliResult], unique: Callable[[str], str]
) -> None:
    topic = unique("manifests")
    result = run_cli("manifest-topic", "--bootstrap-server", bootstrap, "--topic", topic, "-o", "json")
    assert result.code == 0, result.stderr
    body = result.json()
    assert body["created"] is True
    assert body["config"] == MANIFEST_TOPIC_CONFIG
    assert (body["partitions"], body["replication_factor"]) == (1, 1)
    assert {op for acl in body["acls"] for op in acl["operations"]} == {"DESCRIBE", "WRITE", "READ"}
    config = admin.topic_config(topic)
    assert config is not None
    assert config["cleanup.policy"] == "compact", "read back from the broker, not from our output"


def test_manifest_topic_twice_says_it_is_there_and_exits_0(
    bootstrap: str, run_cli: Callable[..., CliResult], unique: Callable[[str], str]
) -> None:
    topic = unique("manifests")
    assert run_cli("manifest-topic", "--bootstrap-server", bootstrap, "--topic", topic).code == 0
    again = run_cli("manifest-topic", "--bootstrap-server", bootstrap, "--topic", topic)
    assert again.code == 0
    assert again.stdout.startswith(f"Already there: topic {topic}")
    assert f"--operation Describe --operation Write --topic {topic}" in again.stdout


def test_manifest_topic_refuses_an_existing_topic_that_is_not_compacted(
    bootstrap: str, run_cli: Callable[..., CliResult], topic_factory: Callable[[int], str]
) -> None:
    topic = topic_factory(1)
    result = run_cli("manifest-topic", "--bootstrap-server", bootstrap, "--topic", topic)
    assert result.code == 1
    assert f"Topic '{topic}' exists with cleanup.policy=delete" in result.stderr
    assert "cleanup.policy=compact" in result.stderr


def test_manifest_topic_with_more_replicas_than_brokers_is_one_sentence_and_exit_2(
    bootstrap: str, run_cli: Callable[..., CliResult], unique: Callable[[str], str]
) -> None:
    topic = unique("manifests")
    result = run_cli(
        "manifest-topic", "--bootstrap-server", bootstrap, "--topic", topic, "--replication-factor", "3"
    )
    assert result.code == 2
    assert result.stderr.count("Error:") == 1
    assert f"The cluster refused topic '{topic}'" in result.stderr


def test_a_member_that_cannot_publish_says_once_which_command_fixes_it(
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic, missing = topic_factory(1), unique("no-manifests")
    with caplog.at_level(logging.WARNING, logger="kafka_coop"):
        consumer = CoopConsumer(
            {"bootstrap.servers": bootstrap, "group.id": unique("g"), "client.id": "svc"}, manifests=missing
        )
        consumer.subscribe([topic])
        wait_for(lambda: consumer.poll(0.1) is None and bool(consumer.owned), what="an assignment")
        consumer.close()
    warnings = [r.getMessage() for r in caplog.records if missing in r.getMessage()]
    assert len(warnings) == 1
    assert "`kafka-coop manifest-topic`" in warnings[0]
    assert warnings[0].count(". ") == 0, "one sentence"


def test_a_member_started_before_the_manifest_topic_publishes_once_it_appears(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The walk creates the topic after the fleet runs: its members must not stay silent until restarted."""
    import kafka_coop.manifest
    from kafka_coop.inspection._manifests import read_manifests

    monkeypatch.setattr(kafka_coop.manifest, "TOPIC_RECHECK_S", 0.5)  # a minute in production
    topic, later, group = topic_factory(1), unique("late-manifests"), unique("g")
    consumer = CoopConsumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "client.id": "svc"}, manifests=later
    )
    try:
        consumer.subscribe([topic])
        wait_for(lambda: consumer.poll(0.1) is None and bool(consumer.owned), what="an assignment")
        admin.ensure_topic(later, 1, config=MANIFEST_TOPIC_CONFIG)

        def published() -> bool:
            consumer.poll(0.1)
            manifests, _ = read_manifests(bootstrap, topic=later, timeout_s=5)
            return any(m.group == group for m in manifests)

        wait_for(published, what="the member's manifest on the topic created after it started", timeout_s=20)
    finally:
        consumer.close()


def test_control_topic_makes_the_compacted_control_topic_and_names_a_writer_and_readers(
    bootstrap: str, admin: ClusterAdmin, run_cli: Callable[..., CliResult]
) -> None:
    """The README's quick start runs it before `rollout run`: only the operator writes, members read."""
    result = run_cli("control-topic", "--bootstrap-server", bootstrap, "-o", "json")
    assert result.code == 0, result.stderr
    body = result.json()
    assert body["topic"] == CONTROL_TOPIC and body["config"] == CONTROL_TOPIC_CONFIG
    config = admin.topic_config(CONTROL_TOPIC)
    assert config is not None and config["cleanup.policy"] == "compact", "read back from the broker"
    again = run_cli(
        "control-topic", "--bootstrap-server", bootstrap, "--operator", "User:ops", "--principal", "User:svc"
    )
    assert again.code == 0 and again.stdout.startswith(f"Already there: topic {CONTROL_TOPIC}")
    assert f"User:ops --operation Describe --operation Write --topic {CONTROL_TOPIC}" in again.stdout
    assert f"User:svc --operation Describe --operation Read --topic {CONTROL_TOPIC}" in again.stdout

"""The size rule of the KIP-848 preflight on a broker with group.consumer.max.size set: a static member
bounced onto the consumer protocol finds its classic self still listed. Before Kafka 4.4 that made a
group at the limit full (GroupMetadataManager: validateOnlineUpgrade, then throwIfConsumerGroupIsFull);
from 4.4 (KAFKA-20601) the member takes its own place, and the plan says so (unit: test_kip848.py).
A group over the limit, and any group on a broker whose group.consumer.migration.policy is disabled,
is refused by the plan before any bounce and then by the broker, as predicted."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError

from kafka_coop.coordinator import CoordinatorClient
from kafka_coop.rollout import Plan
from kafka_coop.sandbox import Sandbox, free_port
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec
from tests.conftest import CliResult
from tests.integration.members import consumer_protocol_refusal, coop_consumer_refusal

LIMIT = 2


@pytest.fixture(scope="module")
def small_groups_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    box = Sandbox(
        dir=tmp_path_factory.mktemp("kafka-max-size"),
        port=free_port(),
        config={"group.consumer.max.size": str(LIMIT)},
    )
    box.start()
    try:
        yield box.bootstrap
    finally:
        box.stop()


def test_a_static_group_at_the_limit_converts_on_4_4_as_the_plan_says(
    small_groups_broker: str, tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    bootstrap, group, topic = small_groups_broker, "orders-app", "orders"
    with MemberProcesses(bootstrap, tmp_path / "members") as processes:
        processes.admin.ensure_topic(topic, 2)
        spec = MemberSpec(name="s0", kind="python", group=group, topics=(topic,), instance_id="s0")
        processes.add_many([spec, spec.replace(name="s1", instance_id="s1")])
        processes.wait_stable(group, members=LIMIT)

        result = run_cli(
            "upgrade-plan", group, "--to", "consumer", "--bootstrap-server", bootstrap, "-o", "json"
        )
        size = {c.name: c for c in Plan.model_validate(result.json()).preconditions}["group-size"]
        assert size.status == "pass", size.reason
        assert "would find" not in size.reason

        processes.stop("s0")  # a static member's close leaves it listed until its session ends
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer"}
            | {"group.instance.id": "s0"}
        )
        consumer.subscribe([topic])
        try:
            deadline = time.monotonic() + 20
            with CoordinatorClient(bootstrap) as client:
                while time.monotonic() < deadline:
                    msg = consumer.poll(0.2)
                    assert msg is None or msg.error() is None, msg.error()
                    if client.describe(group).status == "described":
                        break
                else:
                    raise AssertionError("the group was not converted to a consumer group within 20 s")
        finally:
            consumer.close()


def test_a_group_over_the_limit_is_refused_by_the_plan_and_then_by_the_broker(
    small_groups_broker: str, tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    """validateOnlineUpgrade: more members than group.consumer.max.size, and the group is not converted."""
    bootstrap, group, topic = small_groups_broker, "big-app", "big"
    with MemberProcesses(bootstrap, tmp_path / "members") as processes:
        processes.admin.ensure_topic(topic, 3)
        spec = MemberSpec(name="d0", kind="python", group=group, topics=(topic,))
        processes.add_many([spec, spec.replace(name="d1"), spec.replace(name="d2")])
        processes.wait_stable(group, members=LIMIT + 1)

        result = run_cli(
            "upgrade-plan", group, "--to", "consumer", "--bootstrap-server", bootstrap, "-o", "json"
        )
        assert result.code == 1, result.stdout + result.stderr
        blocker = {b.name: b for b in Plan.model_validate(result.json()).blockers}["group-size"]
        assert f"3 members, group.consumer.max.size = {LIMIT}" in blocker.reason, blocker.reason

        error = consumer_protocol_refusal(bootstrap, group, topic)
        assert error is not None and error.code() == KafkaError._FATAL, error
        assert "group id does not exist" in error.str(), "GROUP_ID_NOT_FOUND: the group stays classic"
        with CoordinatorClient(bootstrap) as client:
            assert client.describe(group).status == "not-a-consumer-group"
        failed = coop_consumer_refusal(bootstrap, group, topic)  # the one rule, in the consumer's sentence
        rule = f"because the group has 3 members, more than group.consumer.max.size = {LIMIT}"
        assert rule in failed.message, failed.message
        assert failed.hint is not None and "raise group.consumer.max.size to at least 3" in failed.hint


@pytest.fixture(scope="module")
def no_migration_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    box = Sandbox(
        dir=tmp_path_factory.mktemp("kafka-no-migration"),
        port=free_port(),
        config={"group.consumer.migration.policy": "disabled"},
    )
    box.start()
    try:
        yield box.bootstrap
    finally:
        box.stop()


def test_a_policy_that_forbids_the_upgrade_is_refused_by_the_plan_and_then_by_the_broker(
    no_migration_broker: str, tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    bootstrap, group, topic = no_migration_broker, "orders-app", "orders"
    with MemberProcesses(bootstrap, tmp_path / "members") as processes:
        processes.admin.ensure_topic(topic, 2)
        processes.add(MemberSpec(name="c0", kind="python", group=group, topics=(topic,)))
        processes.wait_stable(group, members=1)

        result = run_cli(
            "upgrade-plan", group, "--to", "consumer", "--bootstrap-server", bootstrap, "-o", "json"
        )
        assert result.code == 1, result.stdout + result.stderr
        blocker = {b.name: b for b in Plan.model_validate(result.json()).blockers}["migration-policy"]
        assert "disabled" in blocker.reason, blocker.reason

        error = consumer_protocol_refusal(bootstrap, group, topic)
        assert error is not None and error.code() == KafkaError._FATAL, error
        assert "group id does not exist" in error.str()
        with CoordinatorClient(bootstrap) as client:
            assert client.describe(group).status == "not-a-consumer-group"
        failed = coop_consumer_refusal(bootstrap, group, topic)
        assert "because its group.consumer.migration.policy is 'disabled'" in failed.message, failed.message
        assert failed.hint is not None and "set group.consumer.migration.policy to upgrade" in failed.hint

"""The size rule of the KIP-848 preflight on a broker with group.consumer.max.size set: a static member
bounced onto the consumer protocol finds its classic self still listed, so a group at the limit is
converted and then full (GroupMetadataManager: validateOnlineUpgrade, then throwIfConsumerGroupIsFull)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError

from kafka_coop.coordinator import CoordinatorClient
from kafka_coop.rollout import Plan
from kafka_coop.sandbox import MemberProcesses, MemberSpec, Sandbox, free_port
from tests.conftest import CliResult
from tests.integration.members import consumer_protocol_refusal

LIMIT = 2


@pytest.fixture
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


def test_a_static_group_at_the_limit_is_refused_by_the_plan_and_then_by_the_broker(
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
        assert result.code == 1, result.stdout + result.stderr
        blocker = {b.name: b for b in Plan.model_validate(result.json()).blockers}["group-size"]
        assert "would find 2 members and a full group" in blocker.reason, blocker.reason

        processes.stop("s0")  # a static member's close leaves it listed until its session ends
        error = consumer_protocol_refusal(bootstrap, group, topic, **{"group.instance.id": "s0"})
        assert error is not None and error.code() == KafkaError._FATAL, error
        assert "has reached maximum size" in error.str(), "GROUP_MAX_SIZE_REACHED, fatal for librdkafka"
        with CoordinatorClient(bootstrap) as client:
            assert client.describe(group).status == "not-a-consumer-group", "the group stays classic"

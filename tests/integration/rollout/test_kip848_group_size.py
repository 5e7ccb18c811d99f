"""The size rule of the KIP-848 preflight on a broker with group.consumer.max.size set: a static member
bounced onto the consumer protocol finds its classic self still listed. Before Kafka 4.4 that made a
group at the limit full (GroupMetadataManager: validateOnlineUpgrade, then throwIfConsumerGroupIsFull);
from 4.4 (KAFKA-20601) the member takes its own place, and the plan says so (unit: test_kip848.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from kafka_coop.coordinator import CoordinatorClient
from kafka_coop.rollout import Plan
from kafka_coop.sandbox import MemberProcesses, MemberSpec, Sandbox, free_port
from tests.conftest import CliResult

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

"""The cross-version lane on Kafka 4.0, 4.1 and 4.2 (3.7-3.9: test_kafka3_brokers.py; 4.4 runs the whole
suite): describe, both plans and the gate on a live classic group, and the consumer's offset contract on
one protocol per release. One worker starts each broker once (make test: --dist loadgroup)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopConsumer
from kafka_coop.inspection import GroupSnapshot
from kafka_coop.rollout import Plan
from kafka_coop.sandbox import Sandbox, free_port
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec
from testbed.interop import member_command
from tests.conftest import CliResult
from tests.integration.consumer.members import committed_offsets, consumer_conf, produce_keyed

pytestmark = pytest.mark.xdist_group("kafka-versions")

GROUP, TOPIC = "orders-app", "orders"
# The offset contract's protocol per release: each 4.x line runs one, so the lane covers all three.
CONTRACT_PROTOCOL = {"4.0.0": "consumer", "4.1.1": "cooperative-sticky", "4.2.0": "consumer"}


@pytest.fixture(scope="module", params=list(CONTRACT_PROTOCOL))
def kafka4(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """A Kafka 4.x broker with one classic group of two librdkafka members (eager, range)."""
    version: str = request.param
    box = Sandbox(dir=tmp_path_factory.mktemp(f"kafka-{version}"), port=free_port(), kafka_version=version)
    box.start()
    try:
        box.admin().ensure_topic(TOPIC, 4)
        with MemberProcesses(
            box.bootstrap, tmp_path_factory.mktemp("members"), families=member_command
        ) as processes:
            spec = MemberSpec(name="m0", kind="python", group=GROUP, topics=(TOPIC,), manifests=False)
            processes.add_many([spec, spec.replace(name="m1")])
            processes.wait_stable(GROUP, members=2)
            yield box
    finally:
        box.stop()


def test_describe_reads_the_release_and_the_classic_group(
    kafka4: Sandbox, run_cli: Callable[..., CliResult]
) -> None:
    result = run_cli("describe", GROUP, "--bootstrap-server", kafka4.bootstrap, "-o", "json")
    assert result.code == 0, result.stderr
    snap = GroupSnapshot.model_validate(result.json())
    assert (snap.group_type, snap.state, snap.selected_assignor) == ("classic", "stable", "range")
    assert snap.broker.kafka_version.value == kafka4.kafka_version.rsplit(".", 1)[0]
    assert snap.broker.group_version.source == "broker" and int(snap.broker.group_version.value) >= 1


def test_both_plans_route_on_what_the_release_can_do(
    kafka4: Sandbox, run_cli: Callable[..., CliResult]
) -> None:
    base = ("upgrade-plan", GROUP, "--bootstrap-server", kafka4.bootstrap, "-o", "json")
    to_consumer = run_cli(*base, "--to", "consumer")
    assert to_consumer.code == 0, to_consumer.stderr
    plan = Plan.model_validate(to_consumer.json())
    assert (plan.status, plan.migration) == ("ready", "classic-to-consumer")
    # a 4.0-4.2 broker has KAFKA-20640 (fixed in 4.4): the plan names it (migrations/brokers/brokers.yaml)
    assert any("KAFKA-20640" in w for w in plan.warnings), plan.warnings
    to_cooperative = run_cli(*base, "--to", "cooperative")
    assert to_cooperative.code == 0, to_cooperative.stderr
    assert Plan.model_validate(to_cooperative.json()).migration == "eager-to-cooperative-cutover"


def test_the_gate_judges_the_live_group(kafka4: Sandbox, run_cli: Callable[..., CliResult]) -> None:
    base = ("verify-group", GROUP, "--bootstrap-server", kafka4.bootstrap, "-o", "json")
    passing = run_cli(*base, "--expect-members", "2")
    assert passing.code == 0, passing.stderr
    looks = next(c for c in passing.json()["checks"] if c["name"] == "consistent-looks")
    assert looks["status"] == "pass", looks
    failing = run_cli(*base, "--expect-members", "3")
    assert failing.code == 1 and "Traceback" not in failing.stderr


def test_a_raised_record_is_not_committed_and_everything_before_it_is(kafka4: Sandbox) -> None:
    """The offset contract under librdkafka's defaults (test_contract_matrix.py, one protocol here)."""
    rebalance = CONTRACT_PROTOCOL[kafka4.kafka_version]
    topic, group = f"contract-{rebalance}", f"contract-{rebalance}"
    ClusterAdmin(kafka4.bootstrap).ensure_topic(topic, 2)
    produce_keyed(kafka4.bootstrap, topic, partitions=2, per_partition=10)
    processed: list[int] = []

    class Failed(Exception):
        pass

    def process(msg: Any) -> None:
        if (msg.partition(), msg.offset()) == (0, 6):
            raise Failed
        if msg.partition() == 0:
            processed.append(msg.offset())

    with (
        pytest.raises(Failed),
        CoopConsumer(consumer_conf(kafka4.bootstrap, group, rebalance, marks=False)) as c,
    ):
        c.subscribe([topic])
        while True:
            msg = c.poll(0.5)
            if msg is not None and not msg.error():
                process(msg)
    assert processed == list(range(6))
    assert committed_offsets(ClusterAdmin(kafka4.bootstrap), group)[(topic, 0)] == 6

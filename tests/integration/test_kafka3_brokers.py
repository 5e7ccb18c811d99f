"""Kafka 3.x brokers keep their own answers: no coordinator view (3.7 lists no ConsumerGroupDescribe, 3.8
and 3.9 answer it UNSUPPORTED_VERSION), describe as before, verify-group and both plans routed on what
the broker can do, and no KIP-848 path offered."""

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

# One worker starts these brokers and runs every test of the module, and of the 4.x lane
# (test_cross_version.py): make test runs --dist loadgroup.
pytestmark = pytest.mark.xdist_group("kafka-versions")
# The offset contract's protocol per release (no consumer protocol before 4.0).
CONTRACT_PROTOCOL = {"3.7.2": "eager-range", "3.8.1": "cooperative-sticky", "3.9.0": "eager-range"}

GROUP, TOPIC = "orders-app", "orders"


@pytest.fixture(scope="module", params=list(CONTRACT_PROTOCOL))
def kafka3(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """A Kafka 3.x broker with one classic group of two librdkafka members (eager, range)."""
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


def test_describe_keeps_the_classic_answer(kafka3: Sandbox, run_cli: Callable[..., CliResult]) -> None:
    result = run_cli("describe", GROUP, "--bootstrap-server", kafka3.bootstrap, "-o", "json")
    assert result.code == 0, result.stderr
    snap = GroupSnapshot.model_validate(result.json())
    assert (snap.group_type, snap.state, snap.selected_assignor) == ("classic", "stable", "range")
    assert snap.coordinator_view.api == "" and snap.coordinator_view.note.startswith("not-served")
    assert {(m.member_type.value, m.member_type.source) for m in snap.members} == {("classic", "inferred")}
    assert all(m.member_epoch is None and m.target_assignment is None for m in snap.members)
    assert snap.notes == ()
    assert snap.broker.group_version.source != "broker" or snap.broker.group_version.value == "0"
    table = run_cli("describe", GROUP, "--bootstrap-server", kafka3.bootstrap)
    assert table.code == 0
    assert "described by" not in table.stdout and "epoch" not in table.stdout and "^" not in table.stdout


def test_no_kip848_path_is_offered(kafka3: Sandbox, run_cli: Callable[..., CliResult]) -> None:
    base = ("upgrade-plan", GROUP, "--bootstrap-server", kafka3.bootstrap, "-o", "json")
    to_consumer = run_cli(*base, "--to", "consumer")
    assert to_consumer.code == 1
    plan = Plan.model_validate(to_consumer.json())
    assert plan.status == "blocked"
    assert "broker-version" in {b.name for b in plan.blockers}
    to_cooperative = run_cli(*base, "--to", "cooperative")
    assert to_cooperative.code == 0, to_cooperative.stderr
    cutover = Plan.model_validate(to_cooperative.json())
    assert cutover.migration == "eager-to-cooperative-cutover"
    assert "classic-to-consumer" not in {a.migration for a in cutover.alternatives}


def test_verify_group_judges_a_live_classic_group(kafka3: Sandbox, run_cli: Callable[..., CliResult]) -> None:
    base = ("verify-group", GROUP, "--bootstrap-server", kafka3.bootstrap, "-o", "json")
    passing = run_cli(*base, "--expect-members", "2")
    assert passing.code == 0, passing.stderr
    assert passing.json()["status"] in ("pass", "warn") and passing.json()["v"] == 2
    failing = run_cli(*base, "--expect-members", "3")
    assert failing.code == 1, failing.stderr
    assert "did not pass" in failing.stderr and "Traceback" not in failing.stderr


def test_downgrade_plans_route_on_the_classic_group(
    kafka3: Sandbox, run_cli: Callable[..., CliResult]
) -> None:
    """The eager group is where a downgrade ends: both targets say so, with nothing to do, exit 0."""
    base = ("downgrade-plan", GROUP, "--bootstrap-server", kafka3.bootstrap, "-o", "json")
    for target in ("eager", "classic"):
        result = run_cli(*base, "--to", target)
        assert result.code == 0, result.stderr
        plan = Plan.model_validate(result.json())
        assert (plan.status, plan.from_, plan.phases) == ("done", "eager", ()), plan
        assert "nothing to do" in " ".join(plan.warnings), plan


def test_a_raised_record_is_not_committed_and_everything_before_it_is(kafka3: Sandbox) -> None:
    """The offset contract under librdkafka's defaults (test_contract_matrix.py, one protocol here)."""
    rebalance = CONTRACT_PROTOCOL[kafka3.kafka_version]
    topic, group = f"contract-{rebalance}", f"contract-{rebalance}"
    ClusterAdmin(kafka3.bootstrap).ensure_topic(topic, 2)
    produce_keyed(kafka3.bootstrap, topic, partitions=2, per_partition=10)
    processed: list[int] = []

    class Failed(Exception):
        pass

    def process(msg: Any) -> None:
        if (msg.partition(), msg.offset()) == (0, 6):
            raise Failed
        if msg.partition() == 0:
            processed.append(msg.offset())

    conf = consumer_conf(kafka3.bootstrap, group, rebalance, marks=False)
    with pytest.raises(Failed), CoopConsumer(conf) as consumer:
        consumer.subscribe([topic])
        while True:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                process(msg)
    assert processed == list(range(6))
    assert committed_offsets(ClusterAdmin(kafka3.bootstrap), group)[(topic, 0)] == 6

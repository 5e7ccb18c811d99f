"""Plans for families beyond Java and librdkafka, executed on the sandbox behind their printed gates.

franz-go accepts a mixed eager+cooperative list, so its fleet takes the live two-bounce; kafka-python
refuses one, so a fleet holding it is sent to the gated cutover instead, each family configured in its
own terms. Both walks produce continuously and end with the record audit: 0 lost.
"""

from __future__ import annotations

from collections.abc import Callable

from kafka_coop.admin import ClusterAdmin
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec, SteadyProducer
from tests.conftest import CliResult
from tests.e2e.test_rollout_plans import PARTITIONS, _assert_nothing_lost, _describe, _members, _plan, _walk
from tests.integration.members import wait_declared

AS_NEVER_SET = {"client_id": "default"}  # the library's own default, as a service that never sets one


def test_franz_go_fleet_takes_the_live_two_bounce_to_cooperative_losing_nothing(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    topic, group = topic_factory(PARTITIONS), unique("walk-franz")
    with SteadyProducer(bootstrap, topic, PARTITIONS, rate=100) as producer:
        members = processes.add_many(
            _members("franz-go", group, topic, 3, "franz-go-", **AS_NEVER_SET, assignors=("range",))
        )
        processes.wait_stable(group, joined=members)
        up = _plan(run_cli, "upgrade-plan", group, "cooperative", bootstrap)
        assert (up.migration, up.status) == ("eager-to-cooperative", "ready")
        assert up.fleet.families == {"franz-go": 3}
        assert "franz-go" in up.phases[0].config
        _walk(processes, admin, up)
        assert admin.describe_group(group).selected_assignor == "cooperative-sticky"
        _assert_nothing_lost(processes, topic, producer)


def test_kafka_python_blocks_the_live_path_and_the_cutover_runs_for_it_and_java_losing_nothing(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    bootstrap: str,
    manifests_topic: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    topic, group = topic_factory(PARTITIONS), unique("walk-kpy")
    with SteadyProducer(bootstrap, topic, PARTITIONS, rate=100) as producer:
        specs = _members(
            "kafka-python", group, topic, 2, "kafka-python-", **AS_NEVER_SET, assignors=("range",)
        )
        specs.append(MemberSpec(name="java-0", kind="java", group=group, topics=(topic,), record_log=True))
        members = processes.add_many(specs)
        processes.wait_stable(group, joined=members)
        # the kafka-python members publish no manifest
        wait_declared(_describe(run_cli, group, bootstrap), ["java-0"])
        plan = _plan(run_cli, "upgrade-plan", group, "cooperative", bootstrap)
        assert plan.migration == "eager-to-cooperative-cutover"
        assert any("kafka-python refuses a list mixing eager and cooperative" in w for w in plan.warnings)
        assert set(plan.phases[-1].config) == {"java", "kafka-python"}
        _walk(processes, admin, plan)
        final = admin.describe_group(group)
        assert final.selected_assignor == "cooperative-sticky"
        assert sorted(final.instance_ids) == ["java-0", "kafka-python-0", "kafka-python-1"]
        _assert_nothing_lost(processes, topic, producer)

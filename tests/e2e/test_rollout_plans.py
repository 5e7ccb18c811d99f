"""Plans executed end to end: the CLI prints a plan as JSON, the runner walks it behind its printed gates.

Every test produces continuously, executes the plan phase by phase with the fleet runner (each phase
only after the gate the plan printed exits 0), checks after each phase that the group looks as the plan
said (type, selected assignor, the protocol each member's callbacks ran), and at the end that every
produced record was processed: 0 lost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_coop.admin import ClusterAdmin
from kafka_coop.analytics import unavailability, unavailable_ms
from kafka_coop.errors import GateFailed
from kafka_coop.rollout import Plan, PlanPhase
from kafka_coop.sandbox import Sandbox, free_port
from kafka_coop.sandbox.testing import (
    MemberProcesses,
    MemberSpec,
    PhaseRun,
    PlanRunner,
    SteadyProducer,
    audit_when_drained,
)
from tests.conftest import CliResult
from tests.integration.members import wait_declared

PARTITIONS = 6
RATE = 100.0


def _plan(run_cli: Callable[..., CliResult], verb: str, group: str, to: str, bootstrap: str) -> Plan:
    result = run_cli(verb, group, "--to", to, "--bootstrap-server", bootstrap, "-o", "json")
    assert result.code == 0, result.stdout + result.stderr
    return Plan.model_validate(result.json())


def _describe(run_cli: Callable[..., CliResult], group: str, bootstrap: str) -> Callable[[], Any]:
    def describe() -> Any:
        result = run_cli("describe", group, "--bootstrap-server", bootstrap, "-o", "json")
        return result.json() if result.code == 0 else None

    return describe


def _assert_as_planned(admin: ClusterAdmin, processes: MemberProcesses, group: str, phase: PlanPhase) -> None:
    expect = phase.expect
    # A phase can end while one more rebalance is under way (a member's rejoin after the gate): judge
    # the group once it is Stable again, not in PreparingRebalance with no assignor selected yet.
    live = admin.describe_group(group) if expect.empty else processes.wait_stable(group)
    if expect.empty:
        assert not live.members, f"phase {phase.n}: group still has members"
        return
    if expect.group_type is not None:
        assert live.group_type == expect.group_type, f"phase {phase.n}: group type {live.group_type}"
    if expect.selected_assignor is not None and live.group_type == "classic":
        assert live.selected_assignor in expect.selected_assignor, (
            f"phase {phase.n}: selected {live.selected_assignor}"
        )
    if expect.rebalance_protocol is not None:
        protocols = {
            e["protocol"]
            for m in processes.group_members(group)
            for e in m.events_since_start()
            if e["kind"] in ("assigned", "revoked", "lost")
        }
        assert protocols == {expect.rebalance_protocol}, f"phase {phase.n}: callbacks ran {protocols}"


def _walk(processes: MemberProcesses, admin: ClusterAdmin, plan: Plan) -> list[PhaseRun]:
    runner = PlanRunner(processes, plan)
    runs = []
    for phase in plan.phases:
        if phase.status == "done":
            continue
        runs.append(runner.run_phase(phase))
        _assert_as_planned(admin, processes, plan.group, phase)
    assert plan.final_gate is not None
    runner.gate(plan.final_gate_spec)
    return runs


def _assert_nothing_lost(
    processes: MemberProcesses, topic: str, producer: SteadyProducer, timeout_s: float = 60.0
) -> None:
    producer.stop()
    result = audit_when_drained(
        topic,
        producer.acked,
        lambda: [m.records_path for m in processes.members.values()],
        timeout_s=timeout_s,
    )
    assert result.produced > 0
    assert result.lost == 0, f"{result.lost} records never processed, e.g. {result.lost_examples}"


@pytest.fixture
def produce(bootstrap: str) -> Iterator[Callable[[str], SteadyProducer]]:
    started: list[SteadyProducer] = []

    def start(topic: str) -> SteadyProducer:
        producer = SteadyProducer(bootstrap, topic, PARTITIONS, rate=RATE).start()
        started.append(producer)
        return producer

    yield start
    for producer in started:
        producer.stop()


def _members(kind: str, group: str, topic: str, n: int, prefix: str, **kw: object) -> list[MemberSpec]:
    return [
        MemberSpec(name=f"{prefix}{i}", kind=kind, group=group, topics=(topic,), record_log=True, **kw)  # type: ignore[arg-type]
        for i in range(n)
    ]


def test_java_fleet_walks_the_printed_two_bounce_upgrade_and_the_reverse_downgrade_losing_nothing(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    bootstrap: str,
    manifests_topic: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
    produce: Callable[[str], SteadyProducer],
) -> None:
    topic, group = topic_factory(PARTITIONS), unique("plan-java")
    producer = produce(topic)
    members = processes.add_many(_members("java", group, topic, 3, "j", assignors=("range",)))
    processes.wait_stable(group, joined=members)
    wait_declared(_describe(run_cli, group, bootstrap), [m.spec.name for m in members])

    up = _plan(run_cli, "upgrade-plan", group, "cooperative", bootstrap)
    assert (up.migration, up.from_, up.status) == ("eager-to-cooperative", "eager", "ready")
    assert [p.action for p in up.phases] == ["rolling-bounce", "rolling-bounce"]
    _walk(processes, admin, up)
    assert admin.describe_group(group).selected_assignor == "cooperative-sticky"

    down = _plan(run_cli, "downgrade-plan", group, "eager", bootstrap)
    assert (down.migration, down.from_) == ("cooperative-to-eager", "cooperative")
    _walk(processes, admin, down)
    assert admin.describe_group(group).selected_assignor == "range"
    _assert_nothing_lost(processes, topic, producer)


def test_librdkafka_fleet_moves_live_to_kip848_and_back_to_classic_losing_nothing(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    bootstrap: str,
    manifests_topic: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
    produce: Callable[[str], SteadyProducer],
) -> None:
    topic, group = topic_factory(PARTITIONS), unique("plan-848")
    producer = produce(topic)
    members = processes.add_many(_members("python", group, topic, 3, "py", assignors=("range",)))
    processes.wait_stable(group, joined=members)

    up = _plan(run_cli, "upgrade-plan", group, "consumer", bootstrap)
    assert (up.migration, up.status) == ("classic-to-consumer", "ready")
    assert {c.name: c.status for c in up.preconditions}["migration-policy"] == "pass"
    _walk(processes, admin, up)
    assert admin.describe_group(group).group_type == "consumer"

    down = _plan(run_cli, "downgrade-plan", group, "classic", bootstrap)
    assert (down.migration, down.from_) == ("consumer-to-classic", "consumer")
    _walk(processes, admin, down)
    final = admin.describe_group(group)
    assert (final.group_type, final.selected_assignor) == ("classic", "cooperative-sticky")
    _assert_nothing_lost(processes, topic, producer)


def test_librdkafka_eager_fleet_is_offered_kip848_and_cuts_over_with_its_pause_measured(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    bootstrap: str,
    manifests_topic: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
    produce: Callable[[str], SteadyProducer],
) -> None:
    topic, group = topic_factory(PARTITIONS), unique("plan-cutover")
    producer = produce(topic)
    members = processes.add_many(_members("python", group, topic, 3, "py", assignors=("range",)))
    processes.wait_stable(group, joined=members)

    plan = _plan(run_cli, "upgrade-plan", group, "cooperative", bootstrap)
    assert plan.migration == "eager-to-cooperative-cutover"
    assert any(w.startswith("eager-to-cooperative does not fit") and "librdkafka" in w for w in plan.warnings)
    assert "classic-to-consumer" in [a.migration for a in plan.alternatives]
    assert [p.pause for p in plan.phases] == ["full-stop", "full-stop"], "the pause is stated up front"

    runs = _walk(processes, admin, plan)
    final = admin.describe_group(group)
    assert final.selected_assignor == "cooperative-sticky"
    assert sorted(final.instance_ids) == ["py0", "py1", "py2"], "the cutover starts static members"
    events = [e for m in processes.members.values() for e in m.events()]
    paused = unavailable_ms(unavailability(events), since_ms=runs[0].started_ms, until_ms=runs[-1].ended_ms)
    assert paused > 0, "a full stop leaves partitions unowned, and the events show it"
    print(f"cutover: {paused} partition-unavailable ms over {PARTITIONS} partitions")
    _assert_nothing_lost(processes, topic, producer)


def test_mixed_java_and_librdkafka_fleet_gets_a_cutover_safe_for_both_and_it_runs(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    bootstrap: str,
    manifests_topic: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
    produce: Callable[[str], SteadyProducer],
) -> None:
    topic, group = topic_factory(PARTITIONS), unique("plan-mixed")
    producer = produce(topic)
    members = processes.add_many(
        _members("java", group, topic, 2, "j", assignors=("range",))
        + _members("python", group, topic, 2, "py", assignors=("range",))
    )
    processes.wait_stable(group, joined=members)
    wait_declared(_describe(run_cli, group, bootstrap), [m.spec.name for m in members])

    plan = _plan(run_cli, "upgrade-plan", group, "cooperative", bootstrap)
    assert plan.fleet.families == {"java": 2, "librdkafka": 2}
    assert plan.migration == "eager-to-cooperative-cutover"
    assert set(plan.phases[1].config) == {"java", "librdkafka"}
    _walk(processes, admin, plan)
    assert admin.describe_group(group).selected_assignor == "cooperative-sticky"
    _assert_nothing_lost(processes, topic, producer)


def test_a_phase_run_early_is_stopped_by_its_gate_which_names_why(
    processes: MemberProcesses,
    bootstrap: str,
    manifests_topic: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    topic, group = topic_factory(PARTITIONS), unique("plan-early")
    members = processes.add_many(_members("python", group, topic, 2, "py", assignors=("range",)))
    processes.wait_stable(group, joined=members)
    plan = _plan(run_cli, "upgrade-plan", group, "cooperative", bootstrap)
    start_all = plan.phases[1]
    assert start_all.action == "start-all"

    runner = PlanRunner(processes, plan, gate_timeout_s=3)
    with pytest.raises(GateFailed) as failed:
        runner.run_phase(start_all)  # phase 2 before phase 1 stopped anyone
    assert "group-empty" in (failed.value.hint or "")
    assert all(m.alive and m.starts == 1 for m in members), "a failed gate changes nothing"


@pytest.fixture(scope="module")
def policy_disabled_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    box = Sandbox(
        dir=tmp_path_factory.mktemp("kafka-policy"),
        port=free_port(),
        config={"group.consumer.migration.policy": "disabled"},
    )
    box.start()
    try:
        yield box.bootstrap
    finally:
        box.stop()


def test_broker_policy_disabled_blocks_the_kip848_path_with_that_reason(
    policy_disabled_broker: str, tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    admin = ClusterAdmin(policy_disabled_broker)
    admin.ensure_topic("orders", 2)
    with MemberProcesses(policy_disabled_broker, tmp_path / "fleet") as processes:
        member = processes.add(MemberSpec(name="py0", kind="python", group="orders", topics=("orders",)))
        processes.wait_stable("orders", joined=[member])
        result = run_cli(
            "upgrade-plan",
            "orders",
            "--to",
            "consumer",
            "--bootstrap-server",
            policy_disabled_broker,
            "-o",
            "json",
        )
    assert result.code == 1, "a blocked plan exits 1"
    plan = Plan.model_validate(result.json())
    assert plan.status == "blocked"
    blocker = {b.name: b for b in plan.blockers}["migration-policy"]
    assert "disabled" in blocker.reason


def _verify(run_cli: Callable[..., CliResult], group: str, bootstrap: str, phase: int) -> dict[str, Any]:
    result = run_cli(
        "verify-group",
        group,
        "--bootstrap-server",
        bootstrap,
        "--migration",
        "classic-to-consumer",
        "--phase",
        str(phase),
        "--wait",
        "--timeout",
        "120",
        "-o",
        "json",
    )
    assert result.code == 0, result.stdout[-3000:] + result.stderr
    return {c["name"]: c for c in result.json()["checks"]}


def test_a_static_java_and_librdkafka_fleet_walks_to_kip848_behind_the_broker_rules_losing_nothing(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    bootstrap: str,
    manifests_topic: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
    produce: Callable[[str], SteadyProducer],
) -> None:
    """classic -> consumer with static members of both families: every bounced member takes its classic
    self's place (the broker replaces it across protocols), each printed gate passes with the
    preflight's broker rules at phase 0 and the coordinator's member types and epochs after."""
    topic, group = topic_factory(PARTITIONS), unique("walk-848")
    producer = produce(topic)
    specs = [
        MemberSpec(
            name=f"py{i}",
            kind="python",
            group=group,
            topics=(topic,),
            assignors=("range",),
            instance_id=f"py{i}",
            record_log=True,
        )
        for i in range(2)
    ]
    specs.append(specs[0].replace(name="jv0", kind="java", instance_id="jv0"))
    members = processes.add_many(specs)
    processes.wait_stable(group, joined=members)
    wait_declared(_describe(run_cli, group, bootstrap), [m.spec.name for m in members])

    result = run_cli(
        "upgrade-plan",
        group,
        "--to",
        "consumer",
        "--bootstrap-server",
        bootstrap,
        "--restart-time",
        "5",
        "-o",
        "json",
    )
    assert result.code == 0, result.stdout + result.stderr
    plan = Plan.model_validate(result.json())
    assert (plan.migration, plan.status) == ("classic-to-consumer", "ready")
    pre = {c.name: c for c in plan.preconditions}
    assert all(
        pre[n].status == "pass"
        for n in (
            "protocol-type",
            "metadata-decodes",
            "no-custom-user-data",
            "migration-policy",
            "group-size",
            "consumer-protocol-enabled",
        )
    )
    assert "within it" in pre["session-timeout"].reason
    assert "librdkafka" in pre["refusal-outcome"].reason and "java" in pre["refusal-outcome"].reason

    before = _verify(run_cli, group, bootstrap, 0)
    assert before["member-type"]["status"] == "pass" and before["refusal-outcome"]["status"] == "pass"
    assert "members-reconciled" not in before, "a classic group has no epochs to judge"
    _walk(processes, admin, plan)
    after = _verify(run_cli, group, bootstrap, 1)
    assert after["member-type"]["status"] == "pass"
    assert after["members-reconciled"]["status"] == "pass"
    described = _describe(run_cli, group, bootstrap)()
    assert {
        (m["instance_id"], m["member_type"]["value"], m["member_type"]["source"])
        for m in described["members"]
    } == {
        ("py0", "consumer", "broker"),
        ("py1", "consumer", "broker"),
        ("jv0", "consumer", "broker"),
    }
    _assert_nothing_lost(processes, topic, producer)

"""`upgrade-plan` against a live broker: what the planner sees of a real group, and the error paths."""

from __future__ import annotations

from collections.abc import Callable

from kafka_coop.sandbox import free_port
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec
from tests.conftest import CliResult


def test_a_live_java_fleet_on_the_default_list_is_planned_from_phase_two(
    processes: MemberProcesses,
    bootstrap: str,
    manifests_topic: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    topic, group = topic_factory(4), unique("plan-default")
    members = processes.add_many(
        MemberSpec(
            name=f"j{i}", kind="java", group=group, topics=(topic,), assignors=("range", "cooperative-sticky")
        )
        for i in range(2)
    )
    processes.wait_stable(group, joined=members)
    result = run_cli(
        "upgrade-plan", group, "--to", "cooperative", "--bootstrap-server", bootstrap, "-o", "json"
    )
    assert result.code == 0, result.stderr
    plan = result.json()
    assert (plan["migration"], plan["position"], plan["status"]) == ("eager-to-cooperative", 1, "in-progress")
    assert [p["status"] for p in plan["phases"]] == ["done", "todo"]
    assert plan["fleet"]["lists_declared"] == 2, "the members' manifests declared their lists"


def test_planning_an_unknown_group_is_exit_2(bootstrap: str, run_cli: Callable[..., CliResult]) -> None:
    result = run_cli(
        "upgrade-plan", "no-such-group-xyz", "--to", "cooperative", "--bootstrap-server", bootstrap
    )
    assert result.code == 2
    assert "does not exist" in result.stderr


def test_planning_against_an_unreachable_cluster_is_exit_3(run_cli: Callable[..., CliResult]) -> None:
    result = run_cli(
        "upgrade-plan",
        "g",
        "--to",
        "cooperative",
        "--bootstrap-server",
        f"127.0.0.1:{free_port()}",
        "--timeout",
        "3",
    )
    assert result.code == 3
    assert "Nothing is listening at" in result.stderr

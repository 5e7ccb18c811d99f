"""`kafka-coop remove-members` on the sandbox: stopped static members leave at once, running ones stay."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from importlib.resources import files

import jsonschema

from kafka_coop.admin import ClusterAdmin
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec
from tests.conftest import CliResult

# long enough that only remove-members can empty the group within the test
SLOW_SESSION = {"session.timeout.ms": "45000", "heartbeat.interval.ms": "3000"}


def _static_fleet(processes: MemberProcesses, group: str, topic: str, n: int) -> None:
    members = processes.add_many(
        MemberSpec(
            name=f"svc-{i}",
            kind="python",
            group=group,
            topics=(topic,),
            assignors=("cooperative-sticky",),
            instance_id=f"svc-{i}",
            properties=SLOW_SESSION,
        )
        for i in range(n)
    )
    processes.wait_stable(group, joined=members)


def test_stopped_static_members_are_removed_and_the_group_is_empty_at_once(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    manifests_topic: str,
    run_cli: Callable[..., CliResult],
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic, group = topic_factory(4), unique("static")
    _static_fleet(processes, group, topic, 2)
    processes.stop_all(group=group)
    assert sorted(admin.describe_group(group).instance_ids) == ["svc-0", "svc-1"], "static: still listed"
    started = time.monotonic()
    result = run_cli(
        "remove-members", group, "--bootstrap-server", bootstrap_of(admin), "--all-static", "-o", "json"
    )
    assert result.code == 0, result.stderr
    body = result.json()
    published = json.loads((files("kafka_coop") / "schemas" / "remove-members.v1.json").read_text())
    jsonschema.validate(body, published)  # what a pipeline parses is what `kafka-coop schema` publishes
    assert sorted(body["removed"]) == ["svc-0", "svc-1"]
    assert (body["state_after"], body["members_after"]) == ("empty", 0)
    assert admin.describe_group(group).state == "empty", "read back from the broker"
    assert time.monotonic() - started < 30, "well inside the 45 s session timeout"


def test_a_running_static_member_is_refused_with_exit_1_and_stays(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    manifests_topic: str,
    run_cli: Callable[..., CliResult],
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic, group = topic_factory(2), unique("running")
    _static_fleet(processes, group, topic, 1)
    result = run_cli(
        "remove-members", group, "--bootstrap-server", bootstrap_of(admin), "--instance-id", "svc-0"
    )
    assert result.code == 1
    assert "Static member(s) 'svc-0' of group" in result.stderr and "still run" in result.stderr
    assert result.stderr.count("Error:") == 1
    assert admin.describe_group(group).instance_ids == ["svc-0"]


def test_an_unknown_instance_id_is_exit_2_and_nothing_is_sent(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    run_cli: Callable[..., CliResult],
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic, group = topic_factory(2), unique("unknown")
    _static_fleet(processes, group, topic, 1)
    processes.stop_all(group=group)
    result = run_cli(
        "remove-members", group, "--bootstrap-server", bootstrap_of(admin), "--instance-id", "svc-7"
    )
    assert result.code == 2
    assert f"Group '{group}' has no static member with group.instance.id 'svc-7'" in result.stderr
    assert admin.describe_group(group).instance_ids == ["svc-0"]


def bootstrap_of(admin: ClusterAdmin) -> str:
    return admin.bootstrap


def test_wait_stopped_started_with_the_stop_removes_members_as_soon_as_they_closed(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    manifests_topic: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    from kafka_coop.rollout import RemoveStaticSpec
    from kafka_coop.sandbox._rollout import finish_command, start_command

    topic, group = topic_factory(4), unique("waiting")
    _static_fleet(processes, group, topic, 2)
    running = start_command(RemoveStaticSpec(group=group, bootstrap=admin.bootstrap, wait_stopped_s=60))
    processes.stop_all(group=group)  # whether it reads the manifests before or after they closed
    run = finish_command(running)
    assert run.exit_code == 0, run.output
    assert admin.describe_group(group).state == "empty"

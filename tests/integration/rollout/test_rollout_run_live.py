"""`kafka-coop rollout run` on a fleet of six kafka-coop members, with no restart hook: every step live.

The members are the test bed's python members following the control topic (`kafka-coop consume
--control`, static): the runner changes them through control records and reads their answers on their
manifests. No member process restarts in any walk, and every produced record is processed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka_coop.admin import ClusterAdmin
from kafka_coop.control import CONTROL_TOPIC, CONTROL_TOPIC_CONFIG, CONTROL_TOPIC_PARTITIONS
from kafka_coop.rollout import read_journal
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec, SteadyProducer
from tests.conftest import CliResult
from tests.integration.members import wait_declared
from tests.integration.rollout.audit import assert_nothing_lost
from tests.integration.rollout.hook import HOOK, Deployment

PARTITIONS = 6
MEMBERS = 6


def _member(name: str, group: str, topic: str, **kw: Any) -> MemberSpec:
    return MemberSpec.model_validate(
        {"name": name, "group": group, "topics": (topic,), "record_log": True, "assignors": ("range",), **kw}
    )


def _walk(
    run_cli: Callable[..., CliResult], bootstrap: str, group: str, to: str, journal: Path, *more: str
) -> list[dict[str, object]]:
    result = run_cli(
        "rollout", "run", group, "--to", to, "--bootstrap-server", bootstrap, "--journal", str(journal),
        "--gate-timeout", "90", "--apply-timeout", "90", "--unprotected-control", "-o", "json", *more,
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    assert [e.kind for e in read_journal(journal)][-1] == "done"
    return [json.loads(line) for line in result.stdout.splitlines()]


def _refused_without_an_authorizer(
    run_cli: Callable[..., CliResult], bootstrap: str, group: str, journal: Path
) -> None:
    """The sandbox has no authorizer: anyone may write its control topic, so a live walk needs
    --unprotected-control, and without it is bad input before any step."""
    refused = run_cli(
        "rollout", "run", group, "--to", "cooperative", "--bootstrap-server", bootstrap,
        "--journal", str(journal), "-o", "json",
    )  # fmt: skip
    assert refused.code == 2, refused.stdout + refused.stderr
    error = json.loads(refused.stdout)["error"]
    assert error["message"].startswith("No ACL applies to the control topic"), error
    assert "--unprotected-control" in error["hint"], error
    assert not journal.exists()


def _control_topic(admin: ClusterAdmin) -> None:
    admin.ensure_topic(CONTROL_TOPIC, CONTROL_TOPIC_PARTITIONS, config=CONTROL_TOPIC_CONFIG)


def _passed(progress: list[dict[str, object]]) -> list[object]:
    return [p["members"] for p in progress if p["event"] == "gate-passed"]


def test_six_kafka_coop_members_are_walked_with_no_restart_by_cutovers_and_live_rolling_steps(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    bootstrap: str,
    manifests_topic: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
    tmp_path: Path,
) -> None:
    del manifests_topic  # made: the members answer on their manifests
    _control_topic(admin)
    group, topic = unique("run-live"), topic_factory(PARTITIONS)
    names = [f"{group}-m{i}" for i in range(MEMBERS)]
    with SteadyProducer(bootstrap, topic, PARTITIONS, rate=100) as producer:
        members = processes.add_many(
            _member(f"m{i}", group, topic, kind="python", instance_id=names[i], control=True)
            for i in range(MEMBERS)
        )
        processes.wait_stable(group, joined=members)
        _refused_without_an_authorizer(run_cli, bootstrap, group, tmp_path / "refused.jsonl")

        up = _walk(run_cli, bootstrap, group, "cooperative", tmp_path / "up.jsonl")
        assert _passed(up) == [names], "one coordinated cutover of every member"
        assert admin.describe_group(group).selected_assignor == "cooperative-sticky"

        back = _walk(run_cli, bootstrap, group, "eager", tmp_path / "back.jsonl")
        assert _passed(back) == [names]
        assert admin.describe_group(group).selected_assignor == "range"

        consumer = _walk(run_cli, bootstrap, group, "consumer", tmp_path / "consumer.jsonl")
        assert _passed(consumer) == [[n] for n in names], "a live rolling step per member"
        assert admin.describe_group(group).group_type == "consumer"

        classic = _walk(run_cli, bootstrap, group, "classic", tmp_path / "classic.jsonl")
        assert _passed(classic) == [[n] for n in names]
        live = processes.wait_stable(group)
        assert (live.group_type, live.selected_assignor) == ("classic", "cooperative-sticky")

        # where cooperative-sticky assignments carry userData the broker refuses the online path and the
        # planner offers the cutover (tests/unit/rollout/test_planner.py); the plan is asked for by name
        # here, as the sandbox's assignments may carry none
        plan = tmp_path / "cutover.plan.json"
        planned = run_cli(
            "upgrade-plan", group, "--to", "consumer", "--migration", "cooperative-to-consumer-cutover",
            "--bootstrap-server", bootstrap, "-o", "json",
        )  # fmt: skip
        assert planned.json()["status"] == "ready", planned.stdout + planned.stderr
        plan.write_text(planned.stdout)
        cutover = _walk(
            run_cli, bootstrap, group, "consumer", tmp_path / "cutover.jsonl", "--plan", str(plan)
        )
        assert _passed(cutover) == [names], "one coordinated cutover to the consumer protocol"
        assert admin.describe_group(group).group_type == "consumer"
        rolled_back = _walk(run_cli, bootstrap, group, "consumer", tmp_path / "cutover.jsonl", "--rollback")
        assert _passed(rolled_back) == [names]
        live = processes.wait_stable(group)
        assert (live.group_type, live.selected_assignor) == ("classic", "cooperative-sticky")

        assert all(m.starts == 1 and m.alive for m in processes.members.values()), "no member restarted"
        reconfigured = [e for m in members for e in m.events() if e["kind"] == "reconfigured"]
        assert len(reconfigured) == 2 * MEMBERS + 2 * MEMBERS + 2 * MEMBERS
        assert_nothing_lost(processes, topic, producer)


def test_a_mixed_fleet_is_cut_over_java_members_by_the_hook_and_kafka_coop_members_live(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    bootstrap: str,
    manifests_topic: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
    tmp_path: Path,
) -> None:
    del manifests_topic
    _control_topic(admin)
    group, topic = unique("run-mixed"), topic_factory(PARTITIONS)
    requests = tmp_path / "requests"
    requests.mkdir()
    (tmp_path / "hook.py").write_text(HOOK)
    hook = f"{sys.executable} {tmp_path / 'hook.py'} {requests} {{member}} {{phase}} {{settings}}"
    with (
        SteadyProducer(bootstrap, topic, PARTITIONS, rate=100) as producer,
        Deployment(processes, requests) as deployment,
    ):
        java = processes.add_many(_member(f"j{i}", group, topic, kind="java") for i in range(2))
        coop = processes.add_many(
            _member(f"m{i}", group, topic, kind="python", instance_id=f"{group}-m{i}", control=True)
            for i in range(2)
        )
        processes.wait_stable(group, joined=[*java, *coop])

        def describe() -> Any:
            result = run_cli("describe", group, "--bootstrap-server", bootstrap, "-o", "json")
            return result.json() if result.code == 0 else None

        wait_declared(describe, ["j0", "j1", "m0", "m1"])
        progress = _walk(run_cli, bootstrap, group, "cooperative", tmp_path / "walk.jsonl", "--restart", hook)
        assert _passed(progress) == [["j0", "j1", f"{group}-m0", f"{group}-m1"]], "one cutover of all four"
        assert sorted(deployment.restarts) == [
            ("j0", ("cooperative-sticky",)),
            ("j1", ("cooperative-sticky",)),
        ]
        assert all(m.starts == 1 for m in coop), "the kafka-coop members were changed live"
        live = processes.wait_stable(group)
        assert (live.group_type, live.selected_assignor) == ("classic", "cooperative-sticky")
        assert_nothing_lost(processes, topic, producer)

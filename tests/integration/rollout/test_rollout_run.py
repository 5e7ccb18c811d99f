"""`kafka-coop rollout run` on the sandbox, with real Java members restarted through a --restart hook.

The hook is a script written here, as a user writes one: it asks for a restart of {member} on
{settings} and returns once the member runs again. What answers it stands for the user's deployment
(`kubectl rollout restart`): a thread of the test that restarts the test bed's member process with the
settings the hook passed. Every walk produces all along and ends with every record processed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_coop.admin import ClusterAdmin
from kafka_coop.rollout import read_journal
from kafka_coop.sandbox import free_port
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec, SteadyProducer
from tests.conftest import CliResult
from tests.integration.members import wait_declared, wait_for
from tests.integration.rollout.audit import assert_nothing_lost
from tests.integration.rollout.hook import HOOK, Deployment

PARTITIONS = 4
RATE = 50.0


@pytest.fixture
def fleet(
    processes: MemberProcesses,
    bootstrap: str,
    manifests_topic: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
    tmp_path: Path,
) -> Iterator[tuple[str, str, SteadyProducer, Deployment, str]]:
    """Two eager Java members, producing; the group, topic, producer, deployment and the hook command."""
    del manifests_topic  # made: the members publish their manifests, the runner reads them
    topic, group = topic_factory(PARTITIONS), unique("run-java")
    producer = SteadyProducer(bootstrap, topic, PARTITIONS, rate=RATE).start()
    members = processes.add_many(
        MemberSpec(
            name=f"j{i}", kind="java", group=group, topics=(topic,), assignors=("range",), record_log=True
        )
        for i in range(2)
    )
    processes.wait_stable(group, joined=members)

    def describe() -> Any:
        result = run_cli("describe", group, "--bootstrap-server", bootstrap, "-o", "json")
        return result.json() if result.code == 0 else None

    wait_declared(describe, ["j0", "j1"])
    requests = tmp_path / "requests"
    requests.mkdir()
    script = tmp_path / "hook.py"
    script.write_text(HOOK)
    hook = f"{sys.executable} {script} {requests} {{member}} {{phase}} {{settings}}"
    with Deployment(processes, requests) as deployment:
        try:
            yield group, topic, producer, deployment, hook
        finally:
            producer.stop()


def _run(bootstrap: str, group: str, journal: Path, *more: str, gate_timeout: int = 60) -> list[str]:
    return [
        sys.executable, "-m", "kafka_coop.cli", "rollout", "run", group, "--to", "cooperative",
        "--bootstrap-server", bootstrap, "--journal", str(journal),
        "--gate-timeout", str(gate_timeout), *more,
    ]  # fmt: skip


def _finished(journal: Path) -> list[int]:
    """The steps whose gate passed (or whose re-check did), in journal order, over every run."""
    return [e.step for e in read_journal(journal) if e.event in ("gate-passed", "rechecked")]


def test_a_java_fleet_is_walked_eager_to_cooperative_through_the_restart_hook_and_watched_losing_nothing(
    fleet: tuple[str, str, SteadyProducer, Deployment, str],
    processes: MemberProcesses,
    admin: ClusterAdmin,
    bootstrap: str,
    run_cli: Callable[..., CliResult],
    tmp_path: Path,
) -> None:
    group, topic, producer, deployment, hook = fleet
    journal = tmp_path / "walk.jsonl"
    refused = run_cli(*_run(bootstrap, group, journal)[3:])
    assert refused.code == 2, refused.stderr
    assert "j0, j1 do not run kafka-coop" in refused.stderr and not journal.exists()

    result = run_cli(*_run(bootstrap, group, journal, "--restart", hook, "-o", "json")[3:])
    assert result.code == 0, result.stdout + result.stderr
    progress = [json.loads(line) for line in result.stdout.splitlines()]
    _valid(run_cli, "rollout-progress", progress, 1)
    assert [(p["step"], p["members"]) for p in progress if p["event"] == "gate-passed"] == [
        (1, ["j0"]), (2, ["j1"]), (3, ["j0"]), (4, ["j1"])
    ]  # fmt: skip
    assert deployment.restarts == [
        ("j0", ("range", "cooperative-sticky")),
        ("j1", ("range", "cooperative-sticky")),
        ("j0", ("cooperative-sticky",)),
        ("j1", ("cooperative-sticky",)),
    ]
    assert admin.describe_group(group).selected_assignor == "cooperative-sticky"
    assert _finished(journal) == [1, 2, 3, 4]
    _watch_shows_a_settled_group(run_cli, bootstrap, group)
    assert_nothing_lost(processes, topic, producer)


def _valid(run_cli: Callable[..., CliResult], schema: str, records: list[Any], version: int) -> None:
    """Every JSON line validates against the schema `kafka-coop schema NAME` publishes, at `version`."""
    import jsonschema

    published = json.loads(run_cli("schema", schema).stdout)
    for record in records:
        jsonschema.validate(record, published)
    assert {r["v"] for r in records} == {version}


def _watch_shows_a_settled_group(run_cli: Callable[..., CliResult], bootstrap: str, group: str) -> None:
    """`kafka-coop watch -o json`: one versioned record per look, every partition owned."""
    result = run_cli(
        "watch", group, "--bootstrap-server", bootstrap, "-o", "json", "--count", "2", "--interval", "0.5"
    )
    assert result.code == 0, result.stderr
    looks = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(looks) == 2
    _valid(run_cli, "watch", looks, 2)
    last = looks[-1]
    assert [(m["name"], m["client_family"]) for m in last["members"]] == [("j0", "java"), ("j1", "java")]
    assert sum(m["partitions"] for m in last["members"]) == PARTITIONS
    assert last["state"] == "stable" and last["group_type"] == "classic" and last["unowned"] == []


def test_a_runner_killed_mid_walk_is_resumed_without_repeating_or_skipping_a_step(
    fleet: tuple[str, str, SteadyProducer, Deployment, str],
    processes: MemberProcesses,
    admin: ClusterAdmin,
    bootstrap: str,
    run_cli: Callable[..., CliResult],
    tmp_path: Path,
) -> None:
    group, topic, producer, deployment, hook = fleet
    journal = tmp_path / "walk.jsonl"
    runner = subprocess.Popen(
        _run(bootstrap, group, journal, "--restart", hook),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def step_two_applied() -> bool:
            return journal.exists() and any(
                e.step == 2 and e.event == "applied" for e in read_journal(journal)
            )

        wait_for(step_two_applied, timeout_s=120, what="step 2 applied")
        runner.send_signal(signal.SIGKILL)  # in step 2's gate: applied, not finished
        runner.wait(10)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert _finished(journal) == [1]
    resumed = run_cli(
        "rollout", "resume", group, "--bootstrap-server", bootstrap, "--journal", str(journal),
        "--restart", hook, "--gate-timeout", "60",
    )  # fmt: skip
    assert resumed.code == 0, resumed.stdout + resumed.stderr
    entries = read_journal(journal)
    assert _finished(journal) == [1, 2, 3, 4], "each step finished once, in order"
    assert [e.step for e in entries if e.event == "started"] == [1, 2, 3, 4], "no step begun twice"
    assert [e.step for e in entries if e.event == "rechecked"] == [2]
    assert [name for name, _ in deployment.restarts] == ["j0", "j1", "j0", "j1"]
    assert admin.describe_group(group).selected_assignor == "cooperative-sticky"
    again = run_cli("rollout", "resume", group, "--bootstrap-server", bootstrap, "--journal", str(journal))
    assert again.code == 2 and "nothing to resume" in again.stderr
    assert_nothing_lost(processes, topic, producer)


def test_a_frozen_member_fails_the_gate_and_the_rollback_recovers_the_group(
    fleet: tuple[str, str, SteadyProducer, Deployment, str],
    processes: MemberProcesses,
    admin: ClusterAdmin,
    bootstrap: str,
    run_cli: Callable[..., CliResult],
    tmp_path: Path,
) -> None:
    group, topic, producer, deployment, hook = fleet
    journal = tmp_path / "walk.jsonl"
    frozen = processes["j1"].proc
    assert frozen is not None
    os.kill(frozen.pid, signal.SIGSTOP)  # j0's restart then waits for a member that cannot answer
    try:
        failed = run_cli(*_run(bootstrap, group, journal, "--restart", hook, gate_timeout=12)[3:])
    finally:
        os.kill(frozen.pid, signal.SIGCONT)
    assert failed.code == 1, failed.stdout + failed.stderr
    assert "The gate after step 1 of 4 (j0, phase 1) failed" in failed.stderr
    assert "--rollback" in failed.stderr
    assert [e.event for e in read_journal(journal) if e.kind == "step"] == [
        "started",
        "applied",
        "gate-failed",
    ]

    back = run_cli(*_run(bootstrap, group, journal, "--restart", hook, "--rollback")[3:])
    assert back.code == 0, back.stdout + back.stderr
    assert deployment.restarts == [("j0", ("range", "cooperative-sticky")), ("j0", ("range",))]
    walks = [e.mode for e in read_journal(journal) if e.kind == "walk"]
    assert walks == ["forward", "rollback"]
    assert admin.describe_group(group).selected_assignor == "range"
    assert_nothing_lost(processes, topic, producer)


def test_bad_input_is_one_sentence_exit_2_and_no_step(
    bootstrap: str, run_cli: Callable[..., CliResult], unique: Callable[[str], str], tmp_path: Path
) -> None:
    """Each refusal comes before the first step (and before any look at the group)."""
    group = unique("run-bad")
    fleet = tmp_path / "fleet.json"
    members = [{"family": "java", "assignors": ["range"], "count": 2}]
    fleet.write_text(json.dumps({"group": group, "members": members}))
    planned = run_cli("upgrade-plan", "--fleet", str(fleet), "--to", "cooperative", "-o", "json")
    assert planned.code == 0, planned.stderr
    plan = planned.json()
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**plan, "group": "payments"}))
    journal = tmp_path / "walk.jsonl"
    hook = "true"

    wrong_group = run_cli(*_run(bootstrap, group, journal, "--restart", hook, "--plan", str(other))[3:])
    assert wrong_group.code == 2 and "The plan is for group 'payments'" in wrong_group.stderr

    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps({**plan, "phases": [{**plan["phases"][0], "n": 9}, *plan["phases"][1:]]}))
    unknown = run_cli(*_run(bootstrap, group, journal, "--restart", hook, "--plan", str(edited))[3:])
    assert unknown.code == 2 and "names phase 9, which migration" in unknown.stderr
    assert not journal.exists()

    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps(plan))
    journal.write_text(
        json.dumps({"v": 1, "kind": "walk", "plan_id": "0123456789abcdef", "group": group, "mode": "forward",
                    "at_ms": 1, "plan_file": str(mine), "steps": 4}) + "\n"
    )  # fmt: skip
    another_plan = run_cli(
        "rollout",
        "resume",
        group,
        "--bootstrap-server",
        bootstrap,
        "--journal",
        str(journal),
        "--restart",
        hook,
    )
    assert another_plan.code == 2 and "walk of another plan" in another_plan.stderr
    assert len(journal.read_text().splitlines()) == 1, "nothing was appended"

    nowhere = tmp_path / "none.jsonl"
    unreachable = run_cli(
        *_run(
            f"127.0.0.1:{free_port()}", group, nowhere, "--restart", hook, "--plan", str(mine), gate_timeout=3
        )[3:]
    )
    assert unreachable.code == 3, unreachable.stderr
    assert not nowhere.exists()
    for result in (wrong_group, unknown, another_plan, unreachable):
        assert len([line for line in result.stderr.splitlines() if line.startswith("Error:")]) == 1


def test_ctrl_c_stops_the_walk_after_the_step_in_hand_with_exit_130(
    fleet: tuple[str, str, SteadyProducer, Deployment, str],
    processes: MemberProcesses,
    bootstrap: str,
    tmp_path: Path,
) -> None:
    group, topic, producer, deployment, hook = fleet
    journal = tmp_path / "walk.jsonl"
    runner = subprocess.Popen(
        _run(bootstrap, group, journal, "--restart", hook),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(
            lambda: journal.exists() and any(e.event == "started" for e in read_journal(journal)),
            timeout_s=60,
            what="step 1 started",
        )
        runner.send_signal(signal.SIGINT)
        _, stderr = runner.communicate(timeout=120)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 130, stderr
    assert "Stopped before step 2 of 4" in stderr and "rollout resume" in stderr
    entries = read_journal(journal)
    assert [e.event for e in entries if e.kind == "step"] == ["started", "applied", "gate-passed"]
    assert entries[-1].kind == "stopped"
    assert [name for name, _ in deployment.restarts] == ["j0"], "the step in hand finished, no other began"
    assert_nothing_lost(processes, topic, producer)

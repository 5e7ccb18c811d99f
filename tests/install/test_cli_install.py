"""`pip install 'kafka-coop[cli]'`, as an operator gets it: every command from the installed wheel, run
outside the checkout against the session broker (the plot, Spark and metrics extras left out)."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import jsonschema
import pytest

from kafka_coop.admin import ClusterAdmin
from kafka_coop.sandbox import free_port
from tests.install.conftest import REPO, Installed
from tests.integration.members import wait_for

NoTraceback = Callable[[subprocess.CompletedProcess[str]], None]
MEMBERS = 2

# Every command path of the installed CLI, read from the installed package itself.
_COMMAND_TREE = """
import json
import click
from kafka_coop.cli.main import cli

def walk(group, prefix):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        yield [*prefix, name]
        if isinstance(command, click.Group):
            yield from walk(command, [*prefix, name])

print(json.dumps(list(walk(cli, []))))
"""


def _command_paths(install: Installed) -> list[list[str]]:
    proc = install.run("python", "-c", _COMMAND_TREE)
    assert proc.returncode == 0, proc.stderr
    paths: list[list[str]] = json.loads(proc.stdout)
    return paths


@pytest.fixture(scope="module")
def live_group(
    cli_install: Installed, bootstrap: str, admin: ClusterAdmin, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, list[Path]]]:
    """Two `kafka-coop consume` members of the installed package in one group, Stable."""
    group, topic = "install-tier-group", "install-tier-topic"
    admin.ensure_topic(topic, 4)
    events_dir = tmp_path_factory.mktemp("install-events")
    events = [events_dir / f"m{i}.events.jsonl" for i in range(MEMBERS)]
    members = [
        cli_install.popen(
            "kafka-coop",
            "consume",
            group,
            topic,
            "--bootstrap-server",
            bootstrap,
            "--events",
            str(path),
            "--quiet",
            "--conf",
            f"client.id=install-m{i}",
            "--rebalance",
            "eager-range",  # as most fleets still run: the plan has phases to show
        )
        for i, path in enumerate(events)
    ]
    try:

        def stable() -> bool:
            live = admin.describe_group(group)
            return live.state == "stable" and len(live.members) == MEMBERS

        wait_for(stable, timeout_s=90, what=f"{MEMBERS} installed members to form {group}")
        yield group, events
    finally:
        for member in members:
            member.send_signal(signal.SIGTERM)
        for member in members:
            try:
                member.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                member.kill()
                member.communicate()


def test_every_command_and_subcommand_has_help(cli_install: Installed, no_traceback: NoTraceback) -> None:
    paths = _command_paths(cli_install)
    assert ["describe"] in paths and ["sandbox", "start"] in paths
    for path in paths:
        proc = cli_install.run("kafka-coop", *path, "--help")
        no_traceback(proc)
        assert proc.returncode == 0, (path, proc.stderr)
        assert proc.stdout.startswith(f"Usage: kafka-coop {' '.join(path)}"), (path, proc.stdout[:200])


def test_describe_lists_the_members_of_a_live_group(
    cli_install: Installed, bootstrap: str, live_group: tuple[str, list[Path]], no_traceback: NoTraceback
) -> None:
    group, _ = live_group
    proc = cli_install.run("kafka-coop", "describe", group, "--bootstrap-server", bootstrap, "-o", "json")
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    snapshot = json.loads(proc.stdout)
    assert sorted(m["client_id"] for m in snapshot["members"]) == ["install-m0", "install-m1"]


def test_upgrade_plan_as_json_plans_the_live_group(
    cli_install: Installed, bootstrap: str, live_group: tuple[str, list[Path]], no_traceback: NoTraceback
) -> None:
    group, _ = live_group
    proc = cli_install.run(
        "kafka-coop",
        "upgrade-plan",
        group,
        "--to",
        "cooperative",
        "--bootstrap-server",
        bootstrap,
        "-o",
        "json",
    )
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert (plan["group"], plan["from"], plan["to"]) == (group, "eager", "cooperative")
    assert [p["gate"] for p in plan["phases"]], plan


def test_verify_group_passes_on_the_live_group(
    cli_install: Installed, bootstrap: str, live_group: tuple[str, list[Path]], no_traceback: NoTraceback
) -> None:
    group, _ = live_group
    proc = cli_install.run("kafka-coop", "verify-group", group, "--bootstrap-server", bootstrap)
    no_traceback(proc)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_report_with_the_python_engine_runs_without_the_plot_extra_and_says_so(
    cli_install: Installed, live_group: tuple[str, list[Path]], tmp_path: Path, no_traceback: NoTraceback
) -> None:
    _, events = live_group
    out = tmp_path / "report"
    proc = cli_install.run("kafka-coop", "report", *map(str, events), "--engine", "python", "--out", str(out))
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert (out / "summary.json").exists() and not (out / "unowned.png").exists()
    assert "note: No unowned.png: matplotlib is not installed." in proc.stderr
    assert "pip install 'kafka-coop[plot]'" in proc.stderr


def test_the_demo_plans_and_walks_the_upgrade_and_the_way_back_losing_nothing_and_reports_it(
    cli_install: Installed, bootstrap: str, no_traceback: NoTraceback
) -> None:
    """`make demo`'s job, from the installed wheel, on the session broker."""
    proc = cli_install.run(
        "kafka-coop",
        "demo",
        "--bootstrap-server",
        bootstrap,
        "--members",
        "2",
        "--partitions",
        "4",
        "-o",
        "json",
        timeout=600,
    )
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr[-3000:]
    demo = json.loads(proc.stdout)
    jsonschema.validate(demo, json.loads(cli_install.run("kafka-coop", "schema", "demo").stdout))
    assert [p["migration"] for p in demo["plans"]] == [
        "eager-to-cooperative-cutover",
        "cooperative-to-eager-cutover",
    ]
    assert [s["name"] for s in demo["steps"]] == [
        "start",
        "eager-bounce",
        "upgrade-1",
        "upgrade-2",
        "cooperative-bounce",
        "downgrade-1",
        "downgrade-2",
    ]
    assert demo["records"]["produced"] > 0
    assert demo["records"]["lost"] == 0
    assert "gate PASS" in proc.stderr, "every phase ran behind its printed gate"
    assert "ran OK" in proc.stderr and "remove-members" in proc.stderr, "the stop removed static members"
    report = demo["report"]
    assert {Path(p).name for p in report["paths"]} == {"summary.json"}, "no plot without the plot extra"
    by_phase = {p["name"]: p for p in report["summary"]["phases"]}
    assert by_phase["eager-bounce"]["revoked_partitions"] > 0
    steps = {s["name"]: s for s in demo["steps"]}
    down = steps["downgrade-2"]  # its gate waits for the stopped static members to leave the group
    assert down["ended_ms"] - down["started_ms"] < 45_000, "not the 45 s session timeout of the first wave"
    assert (
        steps["eager-bounce"]["partition_unavailable_ms"]
        == by_phase["eager-bounce"]["partition_unavailable_ms"]
    )


def _quick_start_lines() -> list[str]:
    """The commands of the README's "A live group, a plan, a gate" block, comments dropped."""
    readme = (REPO / "README.md").read_text()
    block = readme.split("## A live group, a plan, a gate", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.strip().splitlines()]


def test_the_readmes_quick_start_runs_as_written_on_a_free_port(
    cli_install: Installed, tmp_path: Path, no_traceback: NoTraceback
) -> None:
    port = free_port()
    address = f"127.0.0.1:{port}"
    lines = _quick_start_lines()
    assert lines[0].startswith("kafka-coop sandbox start") and "127.0.0.1:9092" in lines[1], lines
    env = {"KAFKA_COOP_SANDBOX_DIR": str(tmp_path / "sandbox"), "KAFKA_BOOTSTRAP_SERVERS": address}
    member: subprocess.Popen[str] | None = None
    try:
        for line in lines:
            argv = shlex.split(line.rstrip("&").replace("127.0.0.1:9092", address))
            if argv[0] == "export":
                continue  # given to every command through `env`
            starts = argv[:3] == ["kafka-coop", "sandbox", "start"]
            if starts:
                argv += ["--port", str(port), "-o", "json"]
            if line.endswith("&"):
                member = cli_install.popen(*argv, **env)
                continue
            if argv[1] == "describe":  # the member needs a moment to join: describe until it shows
                wait_for(
                    lambda argv=argv: cli_install.run(*argv, **env).returncode == 0,
                    timeout_s=60,
                    what="the quick start's member to join",
                )
            proc = cli_install.run(*argv, timeout=300, **env)
            no_traceback(proc)
            assert proc.returncode == 0, (line, proc.stdout[-2000:], proc.stderr[-2000:])
            if starts:
                published = cli_install.run("kafka-coop", "schema", "sandbox-start").stdout
                jsonschema.validate(json.loads(proc.stdout), json.loads(published))
    finally:
        if member is not None:
            member.send_signal(signal.SIGTERM)
            member.communicate(timeout=60)
        cli_install.run("kafka-coop", "sandbox", "stop", **env)

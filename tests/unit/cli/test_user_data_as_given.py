"""What the CLI prints of group ids, client ids, instance ids, assignor names, phase names and paths
is exactly what the cluster or the user gave.

Rich reads `[...]` in a printed string as console markup (an unknown tag is dropped, a known one
restyles what follows, a stray closing tag raises) and `:name:` as an emoji code; Kafka allows any
string as a group id or client.id (and an assignor's name), and paths may hold either. Each case renders one
command's table output the way the command does (its render function on the CLI's own consoles, or
the command in this process where it needs no broker) and looks for the values whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_coop.admin import GroupDescription, ListedGroup
from kafka_coop.analytics import SparkPrepared
from kafka_coop.cli._context import Terminal
from kafka_coop.inspection import MemberSnapshot
from kafka_coop.rollout import Check, GateReport, GateTarget, all_migrations, load_fleet, make_plan
from kafka_coop.sandbox import SandboxState
from kafka_coop.sandbox._broker import NodeState
from tests.conftest import CliResult
from tests.unit.analytics.test_engine import EAGER
from tests.unit.builders import group_snapshot, member_snapshot

GROUP = "orders[prod]"  # an unknown style tag: rich drops it
CLIENT = "[bold]svc:id:7"  # a known style restyles what follows; ':id:' is the emoji code of 🆔
INSTANCE = "pod-7"  # group.instance.id: Kafka allows only a-z, A-Z, 0-9, '.', '_' and '-'
ASSIGNOR = "sticky[v2]"  # a custom assignor's name, as the group's protocol
PHASE = "canary[eu]"
DIR = "kafka[dev]"  # a directory the user chose

WALKABLE_FLEET = f"""
group: "{GROUP}"
broker: {{version: "4.1", migration_policy: bidirectional, rebalance_protocols: [classic, consumer]}}
members:
  - {{family: java, count: 2, assignors: [range]}}
"""
FLEET = WALKABLE_FLEET.replace("broker:", f'selected_assignor: "{ASSIGNOR}"\nbroker:')

Shown = Callable[[Path, pytest.MonkeyPatch, Callable[..., CliResult]], str]


def _member_of_odd_names() -> MemberSnapshot:
    # offers range only (the builder's default), so the group's selected assignor shows only in the head
    return member_snapshot(instance_id=INSTANCE, client_id=CLIENT, host="/10.0.0.7", assignment=(("t", 0),))


def describe_group(_tmp: Path, _mp: pytest.MonkeyPatch, _cli: Callable[..., CliResult]) -> str:
    from kafka_coop.cli.describe import render_snapshot

    snap = group_snapshot(_member_of_odd_names(), group=GROUP, selected_assignor=ASSIGNOR)
    render_snapshot(Terminal(), snap)
    return ""


def describe_all(_tmp: Path, _mp: pytest.MonkeyPatch, _cli: Callable[..., CliResult]) -> str:
    from kafka_coop.cli.describe import render_groups

    listed = ListedGroup(group=GROUP, group_type="classic", state="stable", is_simple=False)
    live = GroupDescription(
        group=GROUP,
        state="stable",
        group_type="classic",
        selected_assignor=ASSIGNOR,
        coordinator=1,
        members=(),
    )
    render_groups(Terminal(), [(listed, live)])
    return ""


def verify_group(_tmp: Path, _mp: pytest.MonkeyPatch, _cli: Callable[..., CliResult]) -> str:
    from kafka_coop.cli.verify import render_report

    check = Check(
        name="static-members", status="warn", reason=f"{CLIENT} rejoined", members=(CLIENT, INSTANCE)
    )
    render_report(
        Terminal(), GateReport(group=GROUP, target=GateTarget(), status="warn", checks=(check,), taken_ms=0)
    )
    return ""


def upgrade_plan(tmp: Path, _mp: pytest.MonkeyPatch, cli: Callable[..., CliResult]) -> str:
    (tmp / "fleet.yaml").write_text(FLEET)
    result = cli("upgrade-plan", "--fleet", str(tmp / "fleet.yaml"), "--to", "cooperative")
    assert result.code == 1, "blocked: no migration starts from a custom assignor; the plan still shows"
    return result.stdout


def report(tmp: Path, _mp: pytest.MonkeyPatch, cli: Callable[..., CliResult]) -> str:
    events = [
        {**e, "group": GROUP, "client_id": CLIENT if e["client_id"] == "a" else e["client_id"]} for e in EAGER
    ]
    source = tmp / "events.jsonl"
    source.write_text("".join(json.dumps(e) + "\n" for e in events) + "{torn\n")
    phases = tmp / "phases.json"
    phases.write_text(json.dumps([{"name": PHASE, "start_ms": 0, "end_ms": 100_000}]))
    out = tmp / DIR / "out"
    result = cli(
        "report", str(source), "--phases", str(phases), "--out", str(out), "--engine", "python", "--no-plot"
    )
    assert result.code == 0, result.stderr
    return result.stdout + result.stderr


def remove_members(_tmp: Path, _mp: pytest.MonkeyPatch, _cli: Callable[..., CliResult]) -> str:
    from kafka_coop.cli.remove_members import RemovalReport, _render

    removal = RemovalReport(
        group=GROUP,
        removed=(INSTANCE,),
        already_gone=(),
        failed={"pod-8": "FENCED_INSTANCE_ID"},
        state_after="empty",
        members_after=0,
        notes=(f"{INSTANCE} of {GROUP} published no manifest",),
    )
    _render(Terminal(), removal)
    return ""


def sandbox_status(tmp: Path, _mp: pytest.MonkeyPatch, _cli: Callable[..., CliResult]) -> str:
    from kafka_coop.cli.sandbox import _nodes_table, _state_table

    box = tmp / DIR
    node = NodeState(
        node_id=1,
        pid=1,
        port=9092,
        controller_port=9093,
        dir=str(box / "node-1"),
        log=str(box / "node-1.log"),
        started_at=0.0,
    )
    state = SandboxState(
        pid=1,
        kafka_version="4.1.0",
        bootstrap="127.0.0.1:9092",
        port=9092,
        controller_port=9093,
        cluster_id="c",
        started_at=0.0,
        dir=str(box),
        log=str(box / "node-1.log"),
        config={},
        nodes=[node],
        client_properties={"app": str(box / "app.properties")},
    )
    term = Terminal()
    term.out.print(_state_table(state))
    term.out.print(_nodes_table(state))
    return ""


def prepare_spark(tmp: Path, mp: pytest.MonkeyPatch, cli: Callable[..., CliResult]) -> str:
    cache = tmp / DIR
    made = SparkPrepared(
        decoder_jar=cache / "decoder.jar",
        kafka_connector=cache / "connector",
        kafka_connector_made=True,
        class_archive=cache / "driver.jsa",
        class_archive_made=False,
    )
    mp.setattr("kafka_coop.cli.prepare_spark.prepare", lambda **_: made)
    result = cli("prepare-spark")
    assert result.code == 0, result.stderr
    return result.stdout


def progress(_tmp: Path, _mp: pytest.MonkeyPatch, _cli: Callable[..., CliResult]) -> str:
    Terminal().progress(f"Inspecting group {GROUP} …")
    return ""


CASES: list[tuple[Shown, tuple[str, ...]]] = [
    (describe_group, (GROUP, ASSIGNOR, CLIENT, INSTANCE)),
    (describe_all, (GROUP, ASSIGNOR)),
    (verify_group, (f"verify-group {GROUP}", f"{CLIENT} rejoined", f"{CLIENT}, {INSTANCE}")),
    (upgrade_plan, (f"upgrade-plan {GROUP}", f"selected assignor {ASSIGNOR}")),
    (report, (GROUP, CLIENT, PHASE, f"{DIR}/out/malformed.jsonl")),
    (
        remove_members,
        (f"remove-members {GROUP}", f"{INSTANCE} of {GROUP} published", f"group {GROUP} is now"),
    ),
    (sandbox_status, (f"{DIR}/node-1.log", f"{DIR}/app.properties")),
    (prepare_spark, (f"{DIR}/decoder.jar", f"{DIR}/connector", f"{DIR}/driver.jsa")),
    (progress, (f"Inspecting group {GROUP} …",)),
]


@pytest.fixture(autouse=True)
def wide_plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wide enough that no cell wraps, and no colour codes between the characters looked for."""
    monkeypatch.setenv("COLUMNS", "250")
    for forcing in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(forcing, raising=False)


@pytest.mark.parametrize(("shown", "values"), CASES, ids=[case.__name__ for case, _ in CASES])
def test_table_output_shows_ids_names_and_paths_as_given(
    shown: Shown,
    values: tuple[str, ...],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    invoke_cli: Callable[..., CliResult],
    capsys: pytest.CaptureFixture[str],
) -> None:
    printed = shown(tmp_path, monkeypatch, invoke_cli)
    captured = capsys.readouterr()
    text = printed + captured.out + captured.err
    missing = [v for v in values if v not in text]
    assert not missing, f"{missing} not shown whole in:\n{text}"


def test_the_demo_names_each_phase_action_in_its_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Phase 1: … [rolling-bounce]`: the action in brackets was read as a style and dropped."""
    from kafka_coop.cli.demo import narration

    (tmp_path / "fleet.yaml").write_text(WALKABLE_FLEET)
    migrations = [(spec.name, spec) for spec in all_migrations()]
    plan = make_plan(load_fleet(tmp_path / "fleet.yaml"), "upgrade", "cooperative", migrations)
    hooks = narration(Terminal(), table=False)
    assert hooks.on_phase is not None
    for phase in plan.phases:
        hooks.on_phase(phase)
    err = capsys.readouterr().err
    assert plan.phases, plan.blockers
    assert [f"Phase {p.n}: {p.title} [{p.action}]" in err for p in plan.phases] == [True] * len(plan.phases)


@pytest.mark.parametrize("directory", ["runs[prod]", "runs:id:"])
def test_an_error_quoting_a_path_shows_the_path_as_given(
    tmp_path: Path, invoke_cli: Callable[..., CliResult], directory: str
) -> None:
    """An error quotes what the user typed: '[prod]' was dropped as a style and ':id:' became 🆔."""
    missing = tmp_path / directory / "events.jsonl"
    result = invoke_cli("report", str(missing), "--out", str(tmp_path / "out"))
    assert result.code == 2
    assert str(missing) in result.stderr


def test_a_group_id_with_a_closing_tag_is_printed_not_raised(capsys: pytest.CaptureFixture[str]) -> None:
    """`[/x]` with no open tag made rich raise MarkupError: a traceback instead of the table."""
    from kafka_coop.cli.verify import render_report

    render_report(
        Terminal(), GateReport(group="a[/x]", target=GateTarget(), status="pass", checks=(), taken_ms=0)
    )
    assert "verify-group a[/x]" in capsys.readouterr().out

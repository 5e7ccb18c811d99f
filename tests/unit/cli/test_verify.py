"""verify-group's input errors: one sentence and exit 2, before any cluster call (so no broker here).

The commands run in this process through click's CliRunner; the bootstrap address is never contacted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kafka_coop.rollout import FleetSummary, Plan
from tests.conftest import CliResult

NOWHERE = "127.0.0.1:1"


def _plan_json(migration: str | None, status: str = "ready") -> str:
    summary = FleetSummary(
        source="file",
        group_type="classic",
        state="stable",
        selected_assignor="range",
        members=1,
        families={"java": 1},
        protocols={"eager": 1},
        member_types={"classic": 1},
        static=0,
        lists_declared=1,
    )
    plan = Plan.model_validate(
        {
            "group": "g",
            "direction": "upgrade",
            "to": "cooperative",
            "from": "eager",
            "status": status,
            "migration": migration,
            "fleet": summary,
        }
    )
    return plan.model_dump_json(by_alias=True)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not readable JSON"),
        (_plan_json(None, status="blocked"), "names no migration"),
        (_plan_json("x"), "No migration named"),
        ('{"phases": []}', "is not a plan: field group"),
        ('{"migration": "eager-to-cooperative", "group": "g"}', "is not a plan: field direction"),
    ],
)
def test_a_malformed_plan_is_one_sentence_and_exit_2(
    tmp_path: Path, invoke_cli: Callable[..., CliResult], content: str, message: str
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(content)
    result = invoke_cli(
        "verify-group", "g", "--bootstrap-server", NOWHERE, "--plan", str(plan), "--phase", "1"
    )
    assert result.code == 2
    assert message in result.stderr
    assert len([line for line in result.stderr.splitlines() if line.startswith("Error")]) == 1


def test_a_phase_the_migration_does_not_have_is_exit_2(invoke_cli: Callable[..., CliResult]) -> None:
    result = invoke_cli(
        "verify-group",
        "g",
        "--bootstrap-server",
        NOWHERE,
        "--migration",
        "eager-to-cooperative",
        "--phase",
        "7",
    )
    assert result.code == 2
    assert "no phase 7" in result.stderr


def _written_plan(tmp_path: Path, invoke_cli: Callable[..., CliResult], *more: str) -> dict[str, Any]:
    """The plan `upgrade-plan -o json` writes for a fleet file of group g (two Java members on range)."""
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("group: g\nmembers:\n  - {family: java, count: 2, assignors: [range]}\n")
    written = invoke_cli("upgrade-plan", "--fleet", str(fleet), "--to", "cooperative", *more, "-o", "json")
    assert written.code == 0, written.stderr
    document: dict[str, Any] = written.json()
    return document


def _plan_file(tmp_path: Path, document: dict[str, Any]) -> Path:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(document))
    return plan


def test_a_plan_written_by_upgrade_plan_is_read_back_through_the_plan_model(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    plan = _plan_file(tmp_path, _written_plan(tmp_path, invoke_cli))
    result = invoke_cli(
        "verify-group", "g", "--bootstrap-server", NOWHERE, "--plan", str(plan), "--phase", "9"
    )
    assert result.code == 2
    assert "Migration eager-to-cooperative has phases 0..2; there is no phase 9" in result.stderr


# --- the pause gate's inputs: each mistake is one sentence and exit 2, before any cluster call ---------
def _verify(invoke_cli: Callable[..., CliResult], *args: str) -> CliResult:
    return invoke_cli("verify-group", "g", "--bootstrap-server", NOWHERE, *args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--max-pause-ms", "100", "--since", "0"), "need the pause figures: give --pipeline-out"),
        (("--pipeline-out", ".", "--events", "kafka://e", "--max-pause-ms", "1"), "not both"),
        (("--events", "events.jsonl", "--max-pause-ms", "1", "--since", "0"), "is not an events topic"),
        (("--events", "kafka://", "--max-pause-ms", "1", "--since", "0"), "is not an events topic"),
        (("--events", "kafka://e", "--max-pause-ms", "1"), "judges a phase, and there is none"),
        (("--events", "kafka://e", "--since", "0"), "no budget judges them"),
        (("--events", "kafka://e", "--migration", "eager-to-cooperative", "--phase", "1"), "no budget"),
        (("--events", "kafka://e", "--max-pause-ms", "1", "--since", "soon"), "--since 'soon' is not a time"),
        (("--max-pause-ms", "-5", "--events", "kafka://e", "--since", "0"), "--max-pause-ms"),
    ],
)
def test_a_pause_gate_asked_wrongly_is_one_sentence_and_exit_2(
    invoke_cli: Callable[..., CliResult], args: tuple[str, ...], message: str
) -> None:
    result = _verify(invoke_cli, *args)
    assert (result.code, message in result.stderr) == (2, True), result.stderr


def test_a_plan_that_states_no_pause_budget_cannot_judge_a_phase(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    plan = _plan_file(tmp_path, _written_plan(tmp_path, invoke_cli))
    result = _verify(invoke_cli, "--plan", str(plan), "--phase", "1", "--events", "kafka://e")
    assert (result.code, "The plan states no pause budget for phase 1" in result.stderr) == (2, True)
    assert "--pause-budget-ms" in result.stderr


def test_a_plan_made_with_a_pause_budget_states_it_in_every_phase(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    plan = _written_plan(tmp_path, invoke_cli, "--pause-budget-ms", "2500")
    assert plan["v"] == 2
    assert [p["pause_budget_ms"] for p in plan["phases"]] == [2500] * len(plan["phases"]) != []


def test_a_plans_phase_gates_pass_the_pause_figures_and_judge_from_phase_1_on(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    """The gate before phase 1 (phase 0) writes the marker; the gates after phases 1.. judge them."""
    plan = _written_plan(tmp_path, invoke_cli, "--pause-budget-ms", "2500", "--pause-figures", "kafka://ev")
    specs = [p["gate_spec"] for p in plan["phases"]] + [plan["final_gate_spec"]]
    assert [(s["phase"], s["events"], s["max_pause_ms"]) for s in specs] == [
        (n, "kafka://ev", 2500 if n else None) for n in range(len(specs))
    ]
    assert "--events kafka://ev --max-pause-ms 2500" in plan["final_gate"]


def test_pause_figures_without_a_budget_is_exit_2(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("group: g\nmembers:\n  - {family: java, count: 2, assignors: [range]}\n")
    result = invoke_cli(
        "upgrade-plan", "--fleet", str(fleet), "--to", "cooperative", "--pause-figures", "kafka://ev"
    )
    assert (result.code, "no --pause-budget-ms judges them" in result.stderr) == (2, True), result.stderr


def test_a_v1_plan_without_budgets_is_still_read(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    document = _written_plan(tmp_path, invoke_cli)
    document["v"] = 1
    for phase in document["phases"]:
        del phase["pause_budget_ms"]
    result = _verify(invoke_cli, "--plan", str(_plan_file(tmp_path, document)), "--phase", "9")
    assert "there is no phase 9" in result.stderr  # read through the model, then refused for the phase


def test_a_missing_pipeline_output_is_exit_2(tmp_path: Path, invoke_cli: Callable[..., CliResult]) -> None:
    missing = tmp_path / "nowhere"
    result = _verify(invoke_cli, "--pipeline-out", str(missing), "--max-pause-ms", "1", "--since", "0")
    assert (result.code, f"Pipeline output {missing} does not exist" in result.stderr) == (2, True)


def test_a_directory_the_pipeline_did_not_write_is_exit_2(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    result = _verify(invoke_cli, "--pipeline-out", str(tmp_path), "--max-pause-ms", "1", "--since", "0")
    assert (result.code, "is not the output of `kafka-coop pipeline run`" in result.stderr) == (2, True)


def test_an_unreachable_cluster_is_told_within_one_timeout_not_two(
    monkeypatch: pytest.MonkeyPatch, invoke_cli: Callable[..., CliResult]
) -> None:
    """Against an unreachable cluster every read waits its whole timeout. `--timeout 2` used to wait
    2 s for a coordinator connection opened before the first look, then give the look its own 2 s."""
    from kafka_coop.errors import ClusterUnavailable

    waited: list[float] = []

    def no_connection(_bootstrap: str, _conf: Any, *, timeout_s: float) -> None:
        waited.append(timeout_s)

    def no_answer(*_args: Any, timeout_s: float, **_kwargs: Any) -> Any:
        waited.append(timeout_s)
        raise ClusterUnavailable(f"Could not reach the Kafka cluster at {NOWHERE}.")

    monkeypatch.setattr("kafka_coop.rollout.live._verify.open_client", no_connection)
    monkeypatch.setattr("kafka_coop.rollout.live._verify.snapshot_with_lag_trend", no_answer)
    monkeypatch.setattr("kafka_coop.rollout.live._verify.take_snapshot", no_answer)
    result = invoke_cli("verify-group", "g", "--bootstrap-server", NOWHERE, "--timeout", "2")
    assert result.code == 3, result.stderr
    assert sum(waited) <= 2.0, waited

"""verify-group's input errors: one sentence and exit 2, before any cluster call (so no broker here).

The commands run in this process through click's CliRunner; the bootstrap address is never contacted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

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


def test_a_plan_written_by_upgrade_plan_is_read_back_through_the_plan_model(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("group: g\nmembers:\n  - {family: java, count: 2, assignors: [range]}\n")
    written = invoke_cli("upgrade-plan", "--fleet", str(fleet), "--to", "cooperative", "-o", "json")
    assert written.code == 0, written.stderr
    plan = tmp_path / "plan.json"
    plan.write_text(written.stdout)
    result = invoke_cli(
        "verify-group", "g", "--bootstrap-server", NOWHERE, "--plan", str(plan), "--phase", "9"
    )
    assert result.code == 2
    assert "Migration eager-to-cooperative has phases 0..2; there is no phase 9" in result.stderr

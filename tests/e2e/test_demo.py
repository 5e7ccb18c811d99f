"""`kafka-coop demo` as `make demo` runs it (on the session broker here): the walk, its gates, its report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult


def test_demo_plans_and_walks_the_upgrade_and_the_way_back_losing_nothing_and_reports_it(
    bootstrap: str, run_cli: Callable[..., CliResult]
) -> None:
    result = run_cli(
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
    assert result.code == 0, result.stderr[-3000:]
    demo = result.json()
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
    assert "gate PASS" in result.stderr, "every phase ran behind its printed gate"
    assert "ran OK" in result.stderr and "remove-members" in result.stderr, "the stop removed static members"
    report = demo["report"]
    assert {Path(p).name for p in report["paths"]} >= {"summary.json"}
    by_phase = {p["name"]: p for p in report["summary"]["phases"]}
    assert by_phase["eager-bounce"]["revoked_partitions"] > 0
    steps = {s["name"]: s for s in demo["steps"]}
    down = steps["downgrade-2"]  # its gate waits for the stopped static members to leave the group
    assert down["ended_ms"] - down["started_ms"] < 45_000, "not the 45 s session timeout of the first wave"
    assert (
        steps["eager-bounce"]["partition_unavailable_ms"]
        == by_phase["eager-bounce"]["partition_unavailable_ms"]
    )

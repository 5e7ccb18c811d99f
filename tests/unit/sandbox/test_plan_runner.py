"""Executing a plan without a broker: config onto member specs, gates called in-process on scripted
looks, the commands it still starts, the record audit."""

from __future__ import annotations

import sys
from collections import Counter
from types import SimpleNamespace
from typing import Any, cast

import pytest
from pydantic import ValidationError

from kafka_coop.analytics import PauseFigures, PhaseMarker
from kafka_coop.analytics._pause_gate import PhaseSpan
from kafka_coop.errors import GateFailed
from kafka_coop.rollout import GateSpec, MemberConfig, Plan, load_migration
from kafka_coop.rollout._plan import family_config
from kafka_coop.sandbox import CommandRun, GateRun
from kafka_coop.sandbox._rollout import apply_config, command_argv
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec, PlanRunner, audit
from tests.unit.rollout.test_gate import COOP, member, snapshot
from tests.unit.rollout.test_gate_run import Looks

BASE = MemberSpec(
    name="py0",
    kind="python",
    group="g",
    topics=("t",),
    assignors=("range",),
    properties={"session.timeout.ms": "6000", "fetch.min.bytes": "1"},
)


def test_a_consumer_protocol_phase_drops_the_classic_only_keys_it_lists() -> None:
    config = MemberConfig(
        group_protocol="consumer", remote_assignor="uniform", remove=("session.timeout.ms",)
    )
    spec = apply_config(BASE, family_config("librdkafka", config))
    assert (spec.group_protocol, spec.remote_assignor) == ("consumer", "uniform")
    assert dict(spec.properties) == {"fetch.min.bytes": "1"}


def test_a_static_phase_gives_each_member_its_own_name_as_instance_id_and_keeps_an_existing_one() -> None:
    config = family_config(
        "librdkafka", MemberConfig(assignors=("cooperative-sticky",), static_membership=True)
    )
    assert apply_config(BASE, config).instance_id == "py0"
    assert apply_config(BASE.replace(instance_id="kept"), config).instance_id == "kept"


def test_a_classic_phase_without_a_list_keeps_the_members_list() -> None:
    spec = apply_config(BASE.replace(group_protocol="consumer"), family_config("librdkafka", MemberConfig()))
    assert (spec.group_protocol, spec.assignors) == ("classic", ("range",))


def _runner(**options: Any) -> tuple[PlanRunner, list[GateRun | CommandRun]]:
    seen: list[GateRun | CommandRun] = []
    processes = cast(MemberProcesses, SimpleNamespace(bootstrap="localhost:1"))
    plan = Plan.model_construct(group="orders", blockers=())
    return PlanRunner(processes, plan, on_gate=seen.append, **options), seen


def test_a_gate_is_called_in_process_and_its_run_carries_the_typed_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    Looks(monkeypatch, snapshot(*COOP))
    runner, seen = _runner()
    run = runner.gate(GateSpec(group="orders", expect_members=2, timeout_s=30))
    assert (run.report.status, run.command, seen) == (
        "pass",
        "kafka-coop verify-group orders --expect-members 2 --wait --timeout 30",
        [run],
    )
    assert {c.name: c.status for c in run.report.checks}["member-count"] == "pass"


def test_a_gate_that_does_not_pass_in_time_raises_with_the_checks_that_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    Looks(monkeypatch, snapshot(*COOP))
    runner, seen = _runner(gate_timeout_s=1)
    with pytest.raises(GateFailed) as failed:
        runner.gate(GateSpec(group="orders", expect_members=3))
    assert "member-count fail" in (failed.value.hint or "")
    assert seen == []


class Figures:
    """The events topic's pause figures (scripted) and the markers written, instead of a cluster."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *pauses_ms: int) -> None:
        self.markers: list[PhaseMarker] = []
        span = PhaseSpan(start_ms=0, end_ms=1_000, what="phase 1 of eager-to-cooperative")
        figures = PauseFigures(
            source="events", location="kafka://ev", group="orders", span=span, events=4, pauses_ms=pauses_ms
        )
        monkeypatch.setattr("kafka_coop.analytics._pause_figures.from_events", lambda *_a, **_k: figures)
        monkeypatch.setattr(
            "kafka_coop.analytics._pause_figures.write_marker",
            lambda _b, marker, *_a: self.markers.append(marker),
        )


PAUSE_GATE = GateSpec(
    group="orders", migration="eager-to-cooperative", phase=1, events="kafka://ev", max_pause_ms=500
)


def _phase_1(monkeypatch: pytest.MonkeyPatch) -> None:
    phase_1 = tuple(member(n, assignors=("range", "cooperative-sticky")) for n in "ab")
    Looks(monkeypatch, snapshot(*phase_1))


def test_a_pause_gate_within_its_budget_passes_and_writes_the_marker_that_begins_the_next_phase(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _phase_1(monkeypatch)
    figures = Figures(monkeypatch, 100, 200)
    run = _runner()[0].gate(PAUSE_GATE)
    assert {c.name: c.status for c in run.report.checks}["pause-budget"] == "pass"
    phases = len(load_migration("eager-to-cooperative").phases)
    assert [(m.group, m.migration, m.phase, m.phases) for m in figures.markers] == [
        ("orders", "eager-to-cooperative", 1, phases)
    ]


def test_a_pause_gate_over_its_budget_fails_and_writes_no_marker(monkeypatch: pytest.MonkeyPatch) -> None:
    _phase_1(monkeypatch)
    figures = Figures(monkeypatch, 100, 9_000)
    with pytest.raises(GateFailed) as failed:
        _runner()[0].gate(PAUSE_GATE)
    assert ("pause-budget fail" in (failed.value.hint or ""), figures.markers) == (True, [])


def test_printed_gates_run_with_this_interpreter_and_nothing_else_is_accepted() -> None:
    argv = command_argv(GateSpec(group="my group", migration="m", phase=1, timeout_s=5))
    assert argv == [
        sys.executable,
        "-m",
        "kafka_coop.cli",
        "verify-group",
        "my group",
        *("--migration", "m", "--phase", "1", "--wait", "--timeout", "5"),
    ]
    with pytest.raises(ValidationError):
        GateSpec.model_validate({"command": "rm -rf /", "group": "g"})


def test_the_audit_counts_lost_offsets_and_duplicate_deliveries() -> None:
    processed = Counter({("t", 0, 0): 1, ("t", 0, 1): 2, ("t", 1, 0): 1, ("other", 0, 0): 1})
    result = audit("t", {0: 3, 1: 1}, processed)
    assert (result.produced, result.processed, result.duplicates, result.lost) == (4, 3, 1, 1)
    assert result.lost_examples == [("t", 0, 2)]

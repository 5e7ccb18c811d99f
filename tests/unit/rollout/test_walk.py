"""`rollout run`'s walk (pure): the steps a plan makes, the loop that takes them, resume and rollback.

The effects are fakes: a clock that moves only when told, an applier that records what it changed, a
gate whose verdict the test sets. The journal is the loop's `record` callback, kept as a list.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kafka_coop.errors import InvalidInput
from kafka_coop.rollout import (
    FleetDescription,
    GateCommand,
    GateReport,
    GateTarget,
    Plan,
    Progress,
    Step,
    StepFailed,
    WalkMember,
    WalkStopped,
    all_migrations,
    execute,
    make_plan,
    plan_id,
    resume_point,
    rollback_walk,
    walk_steps,
)
from kafka_coop.rollout._walk import refuse_live_static_without_id, refuse_missing_hook
from tests.unit.builders import fleet_member

MIGRATIONS = [(spec.name, spec) for spec in all_migrations()]
NAMES = ("j0", "j1", "j2")


def _java_plan() -> Plan:
    fleet = FleetDescription(
        group="orders",
        group_type="classic",
        selected_assignor="range",
        members=(fleet_member(family="java", protocol="eager", assignors=("range",), count=3),),
    )
    return make_plan(fleet, "upgrade", "cooperative", MIGRATIONS, gate=GateCommand(bootstrap="b:9092"))


def _rdk_plan() -> Plan:
    fleet = FleetDescription(
        group="orders",
        group_type="classic",
        selected_assignor="range",
        members=(fleet_member(family="librdkafka", protocol="eager", assignors=("range",), count=3),),
    )
    return make_plan(fleet, "upgrade", "cooperative", MIGRATIONS, gate=GateCommand(bootstrap="b:9092"))


def _members(family: str = "java", via: str = "hook") -> list[WalkMember]:
    return [WalkMember(name=n, family=family, via=via) for n in NAMES]  # type: ignore[arg-type]


def _report(ok: bool) -> GateReport:
    return GateReport(
        group="orders", target=GateTarget(), status="pass" if ok else "fail", checks=(), taken_ms=0
    )


class Fakes:
    """WalkEffects with a hand-moved clock; `fail_gate_at` / `fail_apply_at` name a step that fails."""

    def __init__(self, *, fail_gate_at: int | None = None, fail_apply_at: int | None = None) -> None:
        self.clock = 1_000
        self.applied: list[int] = []
        self.gated: list[int] = []
        self.fail_gate_at = fail_gate_at
        self.fail_apply_at = fail_apply_at
        self.stop_after: int | None = None
        self.in_place: set[int] = set()

    def apply(self, step: Step) -> None:
        self.clock += 500
        if step.n == self.fail_apply_at:
            raise InvalidInput("the restart hook failed for j1 (exit 7)")
        self.applied.append(step.n)
        self.in_place.add(step.n)

    def gate(self, step: Step) -> GateReport:
        self.clock += 250
        self.gated.append(step.n)
        return _report(step.n != self.fail_gate_at)

    def already_applied(self, step: Step) -> bool:
        return step.n in self.in_place

    def now_ms(self) -> int:
        return self.clock

    def stop_requested(self) -> bool:
        return self.stop_after is not None and len(self.applied) >= self.stop_after


def _journal() -> tuple[list[tuple[int, str]], object]:
    kept: list[tuple[int, str]] = []

    def record(step: int, event: str, detail: str | None) -> None:
        kept.append((step, event))

    return kept, record


def test_a_rolling_phase_is_one_step_per_member_and_only_its_last_step_is_judged_against_the_phase() -> None:
    walk = walk_steps(_java_plan(), _members())
    assert [(s.phase, s.members) for s in walk.steps] == [
        (1, ("j0",)),
        (1, ("j1",)),
        (1, ("j2",)),
        (2, ("j0",)),
        (2, ("j1",)),
        (2, ("j2",)),
    ]
    assert [s.gate.phase for s in walk.steps] == [None, None, 1, None, None, 2]
    assert {s.gate.expect_members for s in walk.steps} == {3}


def test_a_step_carries_the_phase_settings_of_the_members_family() -> None:
    walk = walk_steps(_java_plan(), _members())
    first, last = walk.steps[0].changes[0], walk.steps[-1].changes[0]
    assert "RangeAssignor" in first.settings["partition.assignment.strategy"]
    assert "CooperativeStickyAssignor" in first.settings["partition.assignment.strategy"]
    assert last.config.assignors == ("cooperative-sticky",)


def test_a_stop_all_and_the_start_all_after_it_are_one_cutover_step_for_every_member() -> None:
    walk = walk_steps(_rdk_plan(), _members("librdkafka"))
    assert [(s.kind, s.members, s.gate.phase) for s in walk.steps] == [("cutover", NAMES, 2)]
    assert walk.steps[0].changes[0].config.assignors == ("cooperative-sticky",)


def test_members_already_on_the_first_phase_are_not_changed_again() -> None:
    members = _members()
    members[0] = members[0].model_copy(
        update={"group_protocol": "classic", "assignors": ("range", "cooperative-sticky")}
    )
    walk = walk_steps(_java_plan(), members)
    assert [s.members for s in walk.steps if s.phase == 1] == [("j1",), ("j2",)]


def test_a_walk_that_needs_the_restart_hook_without_one_is_refused_naming_the_members() -> None:
    walk = walk_steps(_java_plan(), _members())
    with pytest.raises(InvalidInput, match="j0, j1, j2 do not run kafka-coop"):
        refuse_missing_hook(walk, hook=None)
    refuse_missing_hook(walk_steps(_java_plan(), _members(via="live")), hook=None)


def test_a_live_walk_onto_static_membership_of_members_without_an_instance_id_is_refused_up_front() -> None:
    """A control record keeps a member's group.instance.id and cannot give it one: a walk whose phase
    runs static members would apply, then wait out its gate's timeout on a check no step can pass."""
    walk = walk_steps(_rdk_plan(), _members("librdkafka", via="live"))
    with pytest.raises(InvalidInput, match=r"j0, j1, j2 have no group\.instance\.id"):
        refuse_live_static_without_id(walk)
    static = [WalkMember(name=n, instance_id=n, family="librdkafka", via="live") for n in NAMES]
    refuse_live_static_without_id(walk_steps(_rdk_plan(), static))
    refuse_live_static_without_id(walk_steps(_rdk_plan(), _members("librdkafka", via="hook")))


def test_a_plan_setting_a_credential_is_refused_before_any_step() -> None:
    plan = _java_plan()
    phase = plan.phases[0]
    java = phase.config["java"].model_copy(update={"set": {**phase.config["java"].set, "sasl.password": "x"}})
    bad = plan.model_copy(
        update={"phases": (phase.model_copy(update={"config": {"java": java}}), *plan.phases[1:])}
    )
    with pytest.raises(InvalidInput, match=r"sasl\.password, a credential"):
        walk_steps(bad, _members())


def test_the_plan_id_changes_with_the_plan() -> None:
    assert plan_id(_java_plan()) == plan_id(_java_plan())
    assert plan_id(_java_plan()) != plan_id(_rdk_plan())


def test_every_step_is_applied_then_gated_and_journalled_in_order() -> None:
    walk, fakes = walk_steps(_java_plan(), _members()), Fakes()
    kept, record = _journal()
    progress: list[Progress] = []
    assert execute(walk, fakes, record, on_progress=progress.append) == 6  # type: ignore[arg-type]
    assert fakes.applied == fakes.gated == [1, 2, 3, 4, 5, 6]
    assert kept[:3] == [(1, "started"), (1, "applied"), (1, "gate-passed")]
    assert [p.seconds for p in progress[:3]] == [0.0, 0.5, 0.75]  # the fake clock's own steps


def test_the_walk_stops_at_the_first_failed_gate_saying_what_to_do() -> None:
    walk, fakes = walk_steps(_java_plan(), _members()), Fakes(fail_gate_at=2)
    kept, record = _journal()
    with pytest.raises(StepFailed, match="gate after step 2 of 6") as failed:
        execute(walk, fakes, record)  # type: ignore[arg-type]
    assert failed.value.exit_code == 1 and "rollout resume" in (failed.value.hint or "")
    assert "--rollback" in (failed.value.hint or "")
    assert fakes.applied == [1, 2] and kept[-1] == (2, "gate-failed")


def test_a_failed_apply_stops_the_walk_with_the_hooks_own_words() -> None:
    walk, fakes = walk_steps(_java_plan(), _members()), Fakes(fail_apply_at=3)
    kept, record = _journal()
    with pytest.raises(StepFailed, match=r"exit 7"):
        execute(walk, fakes, record)  # type: ignore[arg-type]
    assert kept[-1] == (3, "apply-failed") and fakes.gated == [1, 2]


def test_ctrl_c_stops_between_steps_and_says_where() -> None:
    walk, fakes = walk_steps(_java_plan(), _members()), Fakes()
    fakes.stop_after = 2
    kept, record = _journal()
    with pytest.raises(WalkStopped, match="before step 3 of 6") as stopped:
        execute(walk, fakes, record)  # type: ignore[arg-type]
    assert stopped.value.exit_code == 130 and kept[-1] == (2, "gate-passed")


def _resume(events: Sequence[tuple[int, str]]) -> tuple[int, str | None]:
    return resume_point(walk_steps(_java_plan(), _members()), events)  # type: ignore[arg-type]


def test_resume_starts_after_the_last_step_whose_gate_passed() -> None:
    assert _resume([(1, "started"), (1, "applied"), (1, "gate-passed")]) == (2, None)
    assert _resume([]) == (1, None)
    assert _resume([(s, "gate-passed") for s in range(1, 7)]) == (7, None)


def test_a_step_begun_but_not_finished_is_resumed_as_begun() -> None:
    assert _resume([(1, "gate-passed"), (2, "started")]) == (2, "started")
    assert _resume([(1, "gate-passed"), (2, "applied")]) == (2, "applied")
    assert _resume([(1, "gate-passed"), (2, "gate-failed")]) == (2, "gate-failed")


def test_a_step_applied_before_the_kill_is_rechecked_by_its_gate_not_redone() -> None:
    walk, fakes = walk_steps(_java_plan(), _members()), Fakes()
    kept, record = _journal()
    execute(walk, fakes, record, start=2, begun="applied")  # type: ignore[arg-type]
    assert fakes.applied == [3, 4, 5, 6] and fakes.gated == [2, 3, 4, 5, 6]
    assert kept[0] == (2, "rechecked")


def test_a_step_only_started_is_rechecked_when_one_look_finds_it_in_place() -> None:
    walk, fakes = walk_steps(_java_plan(), _members()), Fakes()
    fakes.in_place = {1, 2}
    kept, record = _journal()
    execute(walk, fakes, record, start=2, begun="started")  # type: ignore[arg-type]
    assert fakes.applied == [3, 4, 5, 6] and kept[0] == (2, "rechecked")


def test_a_step_only_started_and_not_in_place_is_redone_without_waiting_for_its_gate() -> None:
    walk, fakes = walk_steps(_java_plan(), _members()), Fakes()
    fakes.in_place = {1}
    kept, record = _journal()
    execute(walk, fakes, record, start=2, begun="started")  # type: ignore[arg-type]
    assert fakes.applied == [2, 3, 4, 5, 6] and fakes.gated == [2, 3, 4, 5, 6]
    assert kept[0] == (2, "started")


def test_a_begun_step_whose_gate_fails_on_the_recheck_is_redone() -> None:
    walk, fakes = walk_steps(_java_plan(), _members()), Fakes(fail_gate_at=None)
    calls: list[int] = []
    gate = fakes.gate

    def gate_failing_once(step: Step) -> GateReport:
        calls.append(step.n)
        return _report(False) if len(calls) == 1 else gate(step)

    fakes.gate = gate_failing_once  # type: ignore[method-assign]
    kept, record = _journal()
    execute(walk, fakes, record, start=2, begun="gate-failed")  # type: ignore[arg-type]
    assert fakes.applied == [2, 3, 4, 5, 6] and kept[0] == (2, "started")


def test_a_rollback_undoes_each_change_newest_first_back_to_the_config_before_it() -> None:
    plan = _java_plan()
    forward = walk_steps(plan, _members())
    back = rollback_walk(forward, 4, plan)
    assert back.mode == "rollback"
    assert [(s.members, s.changes[0].config.assignors) for s in back.steps] == [
        (("j0",), ("range", "cooperative-sticky")),
        (("j2",), ("range",)),
        (("j1",), ("range",)),
        (("j0",), ("range",)),
    ]
    assert back.steps[-1].gate.phase == 0 and back.steps[0].gate.phase is None


def test_a_rollback_of_a_cutover_returns_every_member_to_what_it_ran_before_in_one_step() -> None:
    plan = _rdk_plan()
    members = [
        m.model_copy(update={"group_protocol": "classic", "assignors": ("range",)})
        for m in _members("librdkafka")
    ]
    back = rollback_walk(walk_steps(plan, members), 1, plan)
    assert [(s.kind, s.changes[0].config.assignors, s.gate.phase) for s in back.steps] == [
        ("cutover", ("range",), 0)
    ]

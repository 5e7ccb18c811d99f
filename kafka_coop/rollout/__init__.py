"""Rollouts: migration paths as data (migrations/*.yaml), gates on live groups, and plans.

- `_spec`: a migration (MigrationSpec) as the YAML files write it.
- `_fleet`: one fleet description (FleetDescription), from a live GroupSnapshot or a fleet file.
- `_match`: the phase-matching engine: is a fleet in the state phase N leaves it in? The planner and
  the gate both ask it, so a plan and its own gates cannot disagree.
- `_requirements`: a migration's broker/group prerequisites as checks, on facts built once.
- `_gate`: verify-group's checks on a snapshot; `_plan`: the planner; `_plan_model`: the Plan it writes;
  `_wording`: the config and pause wording of a phase; `_checks`: the Check every one of them returns.
- `_watch`: what `watch` shows of a group, one record per look.
- `_walk`: a plan as a walk of steps, and the loop that takes them; `_journal`: the walk's journal file.
- `live/`: the shell, loaded on first use, so the planner and the gate import this face without
  loading a client: a gate run (`run_gate`: looks on a live group, `--wait`) and `rollout run`'s
  effects (the restart hook, the control topic, the gates). Every other module here is pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_coop._lazy import lazy_attributes
from kafka_coop._vocab import Direction
from kafka_coop.rollout._checks import Check, worst
from kafka_coop.rollout._commands import GateSpec, PlanSpec, RemoveStaticSpec, argv, consume_flags, render
from kafka_coop.rollout._fleet import (
    FleetDescription,
    FleetMember,
    fleet_from_snapshot,
    load_fleet,
    parse_fleet,
)
from kafka_coop.rollout._gate import GateReport, GateTarget, evaluate
from kafka_coop.rollout._journal import JournalEntry, default_journal, read_journal
from kafka_coop.rollout._match import (
    detect_state,
    locate,
    match_phase,
    phase_match,
)
from kafka_coop.rollout._plan import make_plan
from kafka_coop.rollout._plan_model import (
    PLAN_HINT,
    TARGETS,
    FamilyConfig,
    FleetSummary,
    GateCommand,
    Plan,
    PlanPhase,
    Target,
    load_plan,
)
from kafka_coop.rollout._spec import (
    MemberConfig,
    MigrationSpec,
    all_migrations,
    load_migration,
    migration_names,
    parse_migration,
)
from kafka_coop.rollout._walk import (
    Progress,
    Step,
    StepFailed,
    WalkMember,
    WalkStopped,
    execute,
    plan_id,
    resume_point,
    rollback_walk,
    walk_steps,
)
from kafka_coop.rollout._watch import PauseTally, WatchRecord, unowned_now, watch_record
from kafka_coop.rollout._wording import config_lines

if TYPE_CHECKING:
    from kafka_coop.rollout.live import GateProgress, Runner, group_missing, resume_walk, run_gate, start_walk

# name -> the shell package that exports it, imported on first use
_LAZY: dict[str, str] = {
    "GateProgress": "kafka_coop.rollout.live",
    "group_missing": "kafka_coop.rollout.live",
    "run_gate": "kafka_coop.rollout.live",
    "Runner": "kafka_coop.rollout.live",
    "resume_walk": "kafka_coop.rollout.live",
    "start_walk": "kafka_coop.rollout.live",
}


__getattr__ = lazy_attributes(__name__, _LAZY)

__all__ = [
    "PLAN_HINT",
    "TARGETS",
    "Check",
    "Direction",
    "FamilyConfig",
    "FleetDescription",
    "FleetMember",
    "FleetSummary",
    "GateCommand",
    "GateProgress",
    "GateReport",
    "GateSpec",
    "GateTarget",
    "JournalEntry",
    "MemberConfig",
    "MigrationSpec",
    "PauseTally",
    "Plan",
    "PlanPhase",
    "PlanSpec",
    "Progress",
    "RemoveStaticSpec",
    "Runner",
    "Step",
    "StepFailed",
    "Target",
    "WalkMember",
    "WalkStopped",
    "WatchRecord",
    "all_migrations",
    "argv",
    "config_lines",
    "consume_flags",
    "default_journal",
    "detect_state",
    "evaluate",
    "execute",
    "fleet_from_snapshot",
    "group_missing",
    "load_fleet",
    "load_migration",
    "load_plan",
    "locate",
    "make_plan",
    "match_phase",
    "migration_names",
    "parse_fleet",
    "parse_migration",
    "phase_match",
    "plan_id",
    "read_journal",
    "render",
    "resume_point",
    "resume_walk",
    "rollback_walk",
    "run_gate",
    "start_walk",
    "unowned_now",
    "walk_steps",
    "watch_record",
    "worst",
]

"""Rollouts: migration paths as data (migrations/*.yaml), gates on live groups, and plans.

- `_spec`: a migration (MigrationSpec) as the YAML files write it.
- `_fleet`: one fleet description (FleetDescription), from a live GroupSnapshot or a fleet file.
- `_match`: the phase-matching engine: is a fleet in the state phase N leaves it in? The planner and
  the gate both ask it, so a plan and its own gates cannot disagree.
- `_requirements`: a migration's broker/group prerequisites as checks, on facts built once.
- `_gate`: verify-group's checks on a snapshot; `_plan`: the planner; `_contract`: the Plan it writes;
  `_wording`: the config and pause wording of a phase; `_checks`: the Check every one of them returns.
"""

from kafka_coop.rollout._checks import Check, worst
from kafka_coop.rollout._commands import GateSpec, PlanSpec, RemoveStaticSpec, argv, consume_flags, render
from kafka_coop.rollout._contract import (
    PLAN_HINT,
    TARGETS,
    Direction,
    FamilyConfig,
    FleetSummary,
    GateCommand,
    Plan,
    PlanPhase,
    Target,
    load_plan,
)
from kafka_coop.rollout._fleet import (
    BrokerInfo,
    FleetDescription,
    FleetMember,
    fleet_from_snapshot,
    load_fleet,
    parse_fleet,
)
from kafka_coop.rollout._gate import GateReport, GateTarget, evaluate
from kafka_coop.rollout._match import (
    detect_state,
    locate,
    match_phase,
    phase_match,
)
from kafka_coop.rollout._plan import make_plan
from kafka_coop.rollout._spec import (
    MemberConfig,
    MigrationSpec,
    all_migrations,
    load_migration,
    migration_names,
    parse_migration,
)
from kafka_coop.rollout._wording import config_lines

__all__ = [
    "PLAN_HINT",
    "TARGETS",
    "BrokerInfo",
    "Check",
    "Direction",
    "FamilyConfig",
    "FleetDescription",
    "FleetMember",
    "FleetSummary",
    "GateCommand",
    "GateReport",
    "GateSpec",
    "GateTarget",
    "MemberConfig",
    "MigrationSpec",
    "Plan",
    "PlanPhase",
    "PlanSpec",
    "RemoveStaticSpec",
    "Target",
    "all_migrations",
    "argv",
    "config_lines",
    "consume_flags",
    "detect_state",
    "evaluate",
    "fleet_from_snapshot",
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
    "render",
    "worst",
]

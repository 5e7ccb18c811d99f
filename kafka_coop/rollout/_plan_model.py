"""The Plan: what `upgrade-plan --output json` writes and `verify-group --plan` and runners read.

A published contract (docs/contracts.md): the group, where it starts (`from`), the target, the
chosen migration and its phases, each with its config per client family, the gate to run before it,
what the group must look like after it, the pause it costs and how to roll it back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kafka_coop._vocab import Direction, KnownFamily
from kafka_coop.errors import InvalidInput
from kafka_coop.rollout._checks import Check
from kafka_coop.rollout._commands import GATE_TIMEOUT_S, GateSpec, PlanSpec, RemoveStaticSpec
from kafka_coop.rollout._match import FleetState
from kafka_coop.rollout._spec import Action, Expect, MemberConfig, PauseClass

Target = Literal["cooperative", "consumer", "eager", "classic"]
PlanStatus = Literal["ready", "in-progress", "done", "blocked"]

TARGETS: dict[Direction, tuple[Target, ...]] = {
    "upgrade": ("cooperative", "consumer"),
    "downgrade": ("eager", "classic"),
}
PLAN_HINT = "Write it with `kafka-coop upgrade-plan ... --output json > plan.json`."


class FamilyConfig(BaseModel):
    """One client family's config in a phase: the typed form, and what to set and remove."""

    model_config = ConfigDict(frozen=True)

    member: MemberConfig
    set: dict[str, str]
    remove: tuple[str, ...] = ()
    kafka_coop: dict[str, str] | None = None  # CoopConsumer settings (librdkafka family)


class PlanPhase(BaseModel):
    model_config = ConfigDict(frozen=True)

    n: int
    title: str
    action: Action
    status: Literal["done", "in-progress", "todo"]
    progress: str | None = None
    gate: str  # the verify-group command that must pass before this phase starts, as printed
    config: dict[KnownFamily, FamilyConfig]  # every family in the fleet, each in its own terms
    expect: Expect
    pause: PauseClass
    pause_note: str
    # The most a member pause may take in this phase (its p95, ms), as the planner was told
    # (--pause-budget-ms); `verify-group --plan --phase N` fails the phase above it. None: not stated.
    pause_budget_ms: int | None = None
    rollback: str
    notes: tuple[str, ...] = ()
    then: tuple[str, ...] = ()  # commands to run right after the action, before the next gate
    alongside: tuple[str, ...] = ()  # commands to start with the action (they wait for what they need)
    # What a runner executes: the commands above as specs (None / empty in plans of before 0.1.1).
    gate_spec: GateSpec | None = None
    then_specs: tuple[RemoveStaticSpec, ...] = ()
    alongside_specs: tuple[RemoveStaticSpec, ...] = ()


class Blocker(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    reason: str
    hint: str = ""


class Alternative(BaseModel):
    model_config = ConfigDict(frozen=True)

    migration: str
    command: str
    why: str


class FleetSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: Literal["live", "file"]
    group_type: str
    state: str | None
    selected_assignor: str | None
    members: int
    families: dict[str, int]
    protocols: dict[str, int]
    member_types: dict[str, int]
    static: int
    lists_declared: int  # members whose assignor list is known (manifest or fleet file)


class Plan(BaseModel):
    """The contract `upgrade-plan --output json` writes and `verify-group --plan` and runners read.
    v2 added each phase's `pause_budget_ms`; a v1 plan (no budgets) is still read."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    v: Literal[2, 1] = 2
    group: str
    direction: Direction
    to: Target
    from_: FleetState = Field(alias="from")
    status: PlanStatus
    migration: str | None = None
    title: str | None = None
    summary: str | None = None
    fleet: FleetSummary
    position: int = 0  # phases already done
    preconditions: tuple[Check, ...] = ()
    phases: tuple[PlanPhase, ...] = ()
    final_gate: str | None = None
    final_gate_spec: GateSpec | None = None
    warnings: tuple[str, ...] = ()
    blockers: tuple[Blocker, ...] = ()
    alternatives: tuple[Alternative, ...] = ()

    @property
    def blocked(self) -> bool:
        return bool(self.blockers)


class GateCommand(BaseModel):
    """How the commands a plan prints reach the cluster, and how long its gates may wait."""

    model_config = ConfigDict(frozen=True)

    bootstrap: str | None = None
    command_config: str | None = None
    timeout_s: int = GATE_TIMEOUT_S
    # The pause gate's figures (kafka://TOPIC, else the live pipeline's output directory) and budget.
    pause_figures: str | None = None
    pause_budget_ms: int | None = None

    def gate(self, group: str, migration: str | None, phase: int | None, members: int | None) -> GateSpec:
        """The gate; without a migration it checks health only (mid-bounce, no phase holds). With pause
        figures, every phase gate passes them (its pass writes the marker that starts the next phase)
        and, after phase 1 and later, judges the phase's pause against the budget."""
        figures = self.pause_figures if migration is not None and phase is not None else None
        judged = figures is not None and phase is not None and phase >= 1
        return GateSpec(
            group=group,
            migration=migration,
            phase=phase,
            expect_members=members,
            timeout_s=self.timeout_s,
            bootstrap=self.bootstrap,
            command_config=self.command_config,
            events=figures if figures is not None and figures.startswith("kafka://") else None,
            pipeline_out=figures if figures is not None and not figures.startswith("kafka://") else None,
            max_pause_ms=self.pause_budget_ms if judged else None,
        )

    def remove_static(self, group: str, *, wait_stopped: bool = False) -> RemoveStaticSpec:
        """remove-members for every static member still listed (a no-op for a dynamic fleet)."""
        return RemoveStaticSpec(
            group=group,
            wait_stopped_s=self.timeout_s if wait_stopped else None,
            bootstrap=self.bootstrap,
            command_config=self.command_config,
        )

    def plan(self, direction: Direction, group: str, to: Target, migration: str | None = None) -> PlanSpec:
        verb: Literal["upgrade-plan", "downgrade-plan"] = (
            "upgrade-plan" if direction == "upgrade" else "downgrade-plan"
        )
        return PlanSpec(command=verb, group=group, to=to, migration=migration, bootstrap=self.bootstrap)


def load_plan(path: Path) -> Plan:
    """Read a plan file through the contract; anything else is one sentence (InvalidInput, exit 2)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInput(f"Plan file {str(path)!r} does not exist.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"Plan file {str(path)!r} is not readable JSON: {exc}.", hint=PLAN_HINT) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"Plan file {str(path)!r} is not readable JSON: {exc}.", hint=PLAN_HINT) from None
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise InvalidInput(
            f"Plan file {str(path)!r} is not a plan: field {where}: {first['msg']}.", hint=PLAN_HINT
        ) from None

"""Executing a Plan on the test bed's members, phase by phase, each behind the gate the plan printed.

This is what a deploy pipeline does with `upgrade-plan --output json`: run the phase's gate, go on only
when it passes, apply the phase's config to every member, perform the action (rolling bounce, stop
all, start all), and finally run the plan's final gate. A gate is called in-process (rollout's
`run_gate`, the call `verify-group` renders), so the runner holds its typed GateReport; the other
commands (remove-members) run as the plan printed them, rendered by the one renderer (rollout's
`argv`), so nothing parses a printed command back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from kafka_coop._vocab import connection_conf
from kafka_coop.admin import ClusterAdmin
from kafka_coop.analytics import Judged, judge_pause
from kafka_coop.errors import GateFailed
from kafka_coop.events import now_ms
from kafka_coop.families import catalog
from kafka_coop.rollout import (
    FamilyConfig,
    GateReport,
    GateSpec,
    Plan,
    PlanPhase,
    RemoveStaticSpec,
    argv,
    group_missing,
    load_migration,
    render,
    run_gate,
)
from kafka_coop.sandbox._members import MemberProcess, MemberProcessError, MemberProcesses, MemberSpec
from kafka_coop.settings import read_properties, refuse_java_only

# The client family (families.yaml) each member kind belongs to: `kafka-coop consume` is librdkafka.
FAMILY_OF_KIND = {"python": "librdkafka", **{f.member_kind: f.family for f in catalog().families}}
GATE_GRACE_S = 60.0


class GateRun(BaseModel):
    """A gate the runner called: the command a user would type for it, and its typed report."""

    command: str
    seconds: float
    report: GateReport


class CommandRun(BaseModel):
    """A command the runner started (remove-members): its exit code and the tail of its output."""

    command: str
    exit_code: int
    seconds: float
    output: str


class PhaseRun(BaseModel):
    n: int
    title: str
    action: str
    started_ms: int
    ended_ms: int
    gate: GateRun | None


def apply_config(spec: MemberSpec, config: FamilyConfig) -> MemberSpec:
    """The member spec a phase's config turns `spec` into (its name doubles as a static id)."""
    member = config.member
    properties = {k: v for k, v in spec.properties.items() if k not in member.remove}
    changes: dict[str, object] = {"group_protocol": member.group_protocol, "properties": properties}
    if member.group_protocol == "consumer":
        changes["remote_assignor"] = member.remote_assignor
    else:
        changes["remote_assignor"] = None
        if member.assignors:
            changes["assignors"] = member.assignors
    if member.static_membership and not spec.instance_id:
        changes["instance_id"] = spec.name
    return spec.replace(**changes)


Runnable = GateSpec | RemoveStaticSpec


def command_argv(spec: Runnable) -> list[str]:
    """A plan's command, run with this interpreter (no PATH lookup)."""
    return [sys.executable, "-m", "kafka_coop.cli", *argv(spec)[1:]]


def _timeout_s(spec: Runnable) -> float:
    """The command's own waiting (--timeout, --wait-stopped) and a grace for start and output."""
    return GATE_GRACE_S + (spec.timeout_s if isinstance(spec, GateSpec) else spec.wait_stopped_s or 0)


class RunningCommand(BaseModel):
    """A command started in the background (`alongside` an action)."""

    model_config = {"arbitrary_types_allowed": True}

    command: str
    proc: subprocess.Popen[str]
    started: float
    timeout_s: float


def start_command(spec: Runnable) -> RunningCommand:
    proc = subprocess.Popen(command_argv(spec), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return RunningCommand(
        command=render(spec), proc=proc, started=time.monotonic(), timeout_s=_timeout_s(spec)
    )


def finish_command(running: RunningCommand) -> CommandRun:
    """Wait for a command started with `start_command`; GateFailed (with its output) unless it exits 0."""
    try:
        output, _ = running.proc.communicate(timeout=running.timeout_s)
    except subprocess.TimeoutExpired:
        running.proc.kill()
        output, _ = running.proc.communicate()
    run = CommandRun(
        command=running.command,
        exit_code=running.proc.returncode,
        seconds=round(time.monotonic() - running.started, 3),
        output=(output or "")[-4000:],
    )
    if running.proc.returncode != 0:
        raise GateFailed(
            f"Command failed (exit {running.proc.returncode}): {running.command}", hint=run.output[-1500:]
        )
    return run


def run_command(spec: Runnable) -> CommandRun:
    """Run a plan's command after an action (remove-members); GateFailed (with its output) unless it
    exits 0."""
    start = time.monotonic()
    command = render(spec)
    proc = subprocess.run(
        command_argv(spec), capture_output=True, text=True, timeout=_timeout_s(spec), check=False
    )
    run = CommandRun(
        command=command,
        exit_code=proc.returncode,
        seconds=round(time.monotonic() - start, 3),
        output=(proc.stdout + proc.stderr)[-4000:],
    )
    if proc.returncode != 0:
        raise GateFailed(f"Command failed (exit {proc.returncode}): {command}", hint=run.output[-1500:])
    return run


def gate_report(spec: GateSpec, *, bootstrap: str | None = None) -> GateReport:
    """The report of a plan's gate, called in-process as `verify-group` calls it (`bootstrap` when the
    spec names none); a pause gate (its figures, its budget) adds the pause check and writes the
    marker that begins the next phase, as verify-group does."""
    where = spec.bootstrap or bootstrap or os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if not where:
        raise MemberProcessError(f"The gate of {spec.group} names no bootstrap server.", hint=render(spec))
    conf: dict[str, str] = {}
    if spec.command_config is not None:
        settings = read_properties(Path(spec.command_config))
        refuse_java_only(settings, source=f"--command-config {spec.command_config}")
        conf = connection_conf(settings)
    migration = load_migration(spec.migration) if spec.migration is not None else None
    target, phase = (
        (migration, spec.phase) if migration is not None and spec.phase is not None else (None, None)
    )
    report = run_gate(
        ClusterAdmin(where, conf),
        spec.group,
        conf=conf,
        spec=target,
        phase=phase,
        expect_members=spec.expect_members,
        wait=True,
        timeout_s=spec.timeout_s,
    )
    source = Path(spec.pipeline_out) if spec.pipeline_out is not None else spec.events
    if source is None or group_missing(report):
        return report
    judged = Judged(spec.group, target.name if target else None, phase)
    report, _figures, _marker = judge_pause(
        report, judged, spec.max_pause_ms, source=source, bootstrap=where, conf=conf, spec=target, phase=phase
    )
    return report


def _gate_failed(command: str, report: GateReport) -> GateFailed:
    """The runner's GateFailed: the checks that did not pass, and their hints."""
    if group_missing(report):
        return GateFailed(f"Gate failed: group {report.group} did not appear: {command}")
    hints = " ".join(dict.fromkeys(c.hint for c in report.checks if c.status == "fail" and c.hint))
    return GateFailed(f"Gate failed: {command}", hint=f"{report.summary()}. {hints}".strip())


class PlanRunner:
    """Walks a Plan's phases on the members of `plan.group` among `processes`."""

    def __init__(
        self,
        processes: MemberProcesses,
        plan: Plan,
        *,
        gate_timeout_s: int | None = None,
        on_phase: Callable[[PlanPhase], None] | None = None,
        on_member: Callable[[MemberProcess], None] | None = None,
        on_gate: Callable[[GateRun | CommandRun], None] | None = None,
        stable_timeout_s: float = 120.0,
    ) -> None:
        if plan.blocked:
            raise MemberProcessError(f"The plan for {plan.group} is blocked: {plan.blockers[0].reason}.")
        self.processes = processes
        self.plan = plan
        self.group = plan.group
        self.gate_timeout_s = gate_timeout_s
        self.on_phase = on_phase
        self.on_member = on_member
        self.on_gate = on_gate
        self.stable_timeout_s = stable_timeout_s

    def _members(self) -> list[MemberProcess]:
        return self.processes.group_members(self.group)

    def _reconfigure(self, phase: PlanPhase) -> Callable[[MemberSpec], MemberSpec]:
        def change(spec: MemberSpec) -> MemberSpec:
            config = phase.config.get(FAMILY_OF_KIND[spec.kind])  # type: ignore[call-overload]
            if config is None:
                raise MemberProcessError(f"Phase {phase.n} has no config for {spec.kind} member {spec.name}.")
            return apply_config(spec, config)

        return change

    def gate(self, spec: GateSpec | None) -> GateRun:
        """Run a gate of the plan (`gate_timeout_s`, when given, instead of the plan's --timeout)."""
        if spec is None:
            raise MemberProcessError(
                f"The plan for {self.group} carries no gate specs: an older kafka-coop wrote it.",
                hint="Write the plan again with this version (upgrade-plan ... --output json).",
            )
        if self.gate_timeout_s is not None:
            spec = spec.model_copy(update={"timeout_s": self.gate_timeout_s})
        start, command = time.monotonic(), render(spec)
        report = gate_report(spec, bootstrap=self.processes.bootstrap)
        if report.failed():
            raise _gate_failed(command, report)
        run = GateRun(command=command, seconds=round(time.monotonic() - start, 3), report=report)
        self._report(run)
        return run

    def _report(self, run: GateRun | CommandRun) -> None:
        if self.on_gate is not None:
            self.on_gate(run)

    def run_phase(self, phase: PlanPhase) -> PhaseRun:
        gate = self.gate(phase.gate_spec)
        if self.on_phase is not None:
            self.on_phase(phase)
        started = now_ms()
        action = phase.action
        if action == "rolling-bounce":
            self.processes.rolling_bounce(
                self.group,
                reconfigure=self._reconfigure(phase),
                timeout_s=self.stable_timeout_s,
                on_member=self.on_member,
            )
        if action in ("stop-all", "stop-all-start-all"):
            alongside = [start_command(c) for c in phase.alongside_specs]  # gate_timeout_s: gates only
            self.processes.stop_all(group=self.group)
            for running in alongside:  # e.g. remove-members --wait-stopped, started with the stop
                self._report(finish_command(running))
            for command in phase.then_specs:  # e.g. remove-members: static members leave now
                self._report(run_command(command))
        if action in ("start-all", "stop-all-start-all"):
            change = self._reconfigure(phase)
            members = self._members()
            for member in members:
                member.spec = change(member.spec)
                member.start()
            self.processes.wait_stable(self.group, joined=members, timeout_s=self.stable_timeout_s)
        return PhaseRun(
            n=phase.n, title=phase.title, action=action, started_ms=started, ended_ms=now_ms(), gate=gate
        )

    def run(self) -> list[PhaseRun]:
        runs = [self.run_phase(p) for p in self.plan.phases if p.status != "done"]
        if self.plan.final_gate is not None:
            self.gate(self.plan.final_gate_spec)
        return runs

"""Executing a Plan on a sandbox fleet, phase by phase, each behind the gate the plan printed.

This is what a deploy pipeline does with `upgrade-plan --output json`: run the phase's gate command,
go on only when it exits 0, apply the phase's config to every member, perform the action (rolling
bounce, stop all, start all), and finally run the plan's final gate. The demo, the e2e tests and the
benchmarks use it, so they exercise the very commands a user would copy.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel

from kafka_coop.errors import GateFailed
from kafka_coop.events import now_ms
from kafka_coop.families import catalog
from kafka_coop.rollout import FamilyConfig, Plan, PlanPhase
from kafka_coop.sandbox._members import MemberProcess, MemberProcessError, MemberProcesses, MemberSpec

# The client family (families.yaml) each member kind belongs to: `kafka-coop consume` is librdkafka.
FAMILY_OF_KIND = {"python": "librdkafka", **{f.member_kind: f.family for f in catalog().families}}
GATE_GRACE_S = 60.0


class GateRun(BaseModel):
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


def gate_argv(command: str) -> list[str]:
    """The printed `kafka-coop ...` command, run with this interpreter (no PATH lookup)."""
    argv = shlex.split(command)
    if not argv or argv[0] != "kafka-coop":
        raise ValueError(f"not a kafka-coop command: {command!r}")
    return [sys.executable, "-m", "kafka_coop.cli", *argv[1:]]


class RunningCommand(BaseModel):
    """A printed command started in the background (`alongside` an action)."""

    model_config = {"arbitrary_types_allowed": True}

    command: str
    proc: subprocess.Popen[str]
    started: float
    timeout_s: float


def _timeout_of(argv: list[str]) -> float:
    timeout = GATE_GRACE_S
    for flag in ("--timeout", "--wait-stopped"):
        if flag in argv:
            timeout += float(argv[argv.index(flag) + 1])
    return timeout


def start_command(command: str, *, extra: tuple[str, ...] = ()) -> RunningCommand:
    argv = gate_argv(command) + list(extra)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return RunningCommand(command=command, proc=proc, started=time.monotonic(), timeout_s=_timeout_of(argv))


def finish_command(running: RunningCommand) -> GateRun:
    """Wait for a command started with `start_command`; GateFailed (with its output) unless it exits 0."""
    try:
        output, _ = running.proc.communicate(timeout=running.timeout_s)
    except subprocess.TimeoutExpired:
        running.proc.kill()
        output, _ = running.proc.communicate()
    run = GateRun(
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


def run_gate(command: str, *, extra: tuple[str, ...] = ()) -> GateRun:
    """Run a printed gate; raise GateFailed (with its output) unless it exits 0."""
    start = time.monotonic()
    argv = gate_argv(command) + list(extra)
    timeout = GATE_GRACE_S
    if "--timeout" in argv:
        timeout += float(argv[argv.index("--timeout") + 1])
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    run = GateRun(
        command=command,
        exit_code=proc.returncode,
        seconds=round(time.monotonic() - start, 3),
        output=(proc.stdout + proc.stderr)[-4000:],
    )
    if proc.returncode != 0:
        raise GateFailed(f"Gate failed (exit {proc.returncode}): {command}", hint=run.output[-1500:])
    return run


class PlanRunner:
    """Walks a Plan's phases on the members of `plan.group` among `processes`."""

    def __init__(
        self,
        processes: MemberProcesses,
        plan: Plan,
        *,
        gate_extra: tuple[str, ...] = (),
        on_phase: Callable[[PlanPhase], None] | None = None,
        on_member: Callable[[MemberProcess], None] | None = None,
        on_gate: Callable[[GateRun], None] | None = None,
        stable_timeout_s: float = 120.0,
    ) -> None:
        if plan.blocked:
            raise MemberProcessError(f"The plan for {plan.group} is blocked: {plan.blockers[0].reason}.")
        self.processes = processes
        self.plan = plan
        self.group = plan.group
        self.gate_extra = gate_extra
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

    def gate(self, command: str) -> GateRun:
        return self._report(run_gate(command, extra=self.gate_extra))

    def _report(self, run: GateRun) -> GateRun:
        if self.on_gate is not None:
            self.on_gate(run)
        return run

    def run_phase(self, phase: PlanPhase) -> PhaseRun:
        gate = self.gate(phase.gate)
        if self.on_phase is not None:
            self.on_phase(phase)
        started = now_ms()
        action: Literal["none", "rolling-bounce", "stop-all", "start-all", "stop-all-start-all"] = (
            phase.action
        )
        if action == "rolling-bounce":
            self.processes.rolling_bounce(
                self.group,
                reconfigure=self._reconfigure(phase),
                timeout_s=self.stable_timeout_s,
                on_member=self.on_member,
            )
        if action in ("stop-all", "stop-all-start-all"):
            alongside = [start_command(c) for c in phase.alongside]  # gate_extra is for gates only
            self.processes.stop_all(group=self.group)
            for running in alongside:  # e.g. remove-members --wait-stopped, started with the stop
                self._report(finish_command(running))
            for command in phase.then:  # e.g. remove-members: static members leave now
                self._report(run_gate(command))
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
        if self.plan.final_gate:
            self.gate(self.plan.final_gate)
        return runs

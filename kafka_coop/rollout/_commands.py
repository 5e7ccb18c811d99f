"""The commands a plan prints, as specs, and the one renderer of their command-line syntax (pure).

The planner writes specs; `argv` and `render` turn a spec into the `kafka-coop ...` words a user copies
and a plan runner runs, so no one else spells a flag, and nothing parses a printed command back.
tests/unit/rollout/test_commands.py parses every rendered spec with the real click commands.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

PROGRAM = "kafka-coop"
GATE_TIMEOUT_S = 300


class _ClusterAccess(BaseModel):
    """How a printed command reaches the cluster: never secrets, only the file that holds them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bootstrap: str | None = None
    command_config: str | None = None


class GateSpec(_ClusterAccess):
    """`verify-group`: the gate before a phase (the state after phase `phase` of `migration`), or, mid
    bounce where no phase holds, health only."""

    command: Literal["verify-group"] = "verify-group"
    group: str
    migration: str | None = None
    phase: int | None = None
    expect_members: int | None = None
    timeout_s: int = GATE_TIMEOUT_S
    # The pause gate: where the figures are (one of the two) and the budget the phase is judged by.
    events: str | None = None  # kafka://TOPIC
    pipeline_out: str | None = None
    max_pause_ms: int | None = None


class RemoveStaticSpec(_ClusterAccess):
    """`remove-members --all-static`: static members leave now instead of after session.timeout.ms.
    With `wait_stopped_s` it is started with the stop and waits for the members' manifests to close."""

    command: Literal["remove-members"] = "remove-members"
    group: str
    wait_stopped_s: int | None = None


class PlanSpec(BaseModel):
    """`upgrade-plan` / `downgrade-plan`: another path, offered as an alternative."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    command: Literal["upgrade-plan", "downgrade-plan"]
    group: str
    to: str
    migration: str | None = None
    bootstrap: str | None = None


CommandSpec = GateSpec | RemoveStaticSpec | PlanSpec


def _access_flags(spec: _ClusterAccess) -> list[str]:
    out = ["--bootstrap-server", spec.bootstrap] if spec.bootstrap else []
    if spec.command_config:
        out += ["--command-config", spec.command_config]
    return out


def argv(spec: CommandSpec) -> list[str]:
    """The command's words, the program's name first."""
    if isinstance(spec, GateSpec):
        words = [PROGRAM, spec.command, spec.group, *_access_flags(spec)]
        if spec.migration is not None and spec.phase is not None:
            words += ["--migration", spec.migration, "--phase", str(spec.phase)]
        if spec.expect_members is not None:
            words += ["--expect-members", str(spec.expect_members)]
        if spec.events is not None:
            words += ["--events", spec.events]
        if spec.pipeline_out is not None:
            words += ["--pipeline-out", spec.pipeline_out]
        if spec.max_pause_ms is not None:
            words += ["--max-pause-ms", str(spec.max_pause_ms)]
        return [*words, "--wait", "--timeout", str(spec.timeout_s)]
    if isinstance(spec, RemoveStaticSpec):
        words = [PROGRAM, spec.command, spec.group, *_access_flags(spec), "--all-static"]
        if spec.wait_stopped_s is not None:
            words += ["--wait-stopped", str(spec.wait_stopped_s)]
        return words
    words = [PROGRAM, spec.command, spec.group, "--to", spec.to]
    if spec.migration is not None:
        words += ["--migration", spec.migration]
    return [*words, *(["--bootstrap-server", spec.bootstrap] if spec.bootstrap else [])]


def render(spec: CommandSpec) -> str:
    """The command as a user copies it into a shell."""
    return shlex.join(argv(spec))


# FamilyConfig.kafka_coop (CoopConsumer's settings) -> the `kafka-coop consume` flag that sets each
CONSUME_FLAGS = {
    "rebalance": "--rebalance",
    "remote_assignor": "--remote-assignor",
    "instance_id": "--instance-id",
}


def consume_flags(settings: Mapping[str, str]) -> str | None:
    """The `kafka-coop consume` flags that run a member on `settings`, as a user types them; None when
    no flag can (an assignor list: consume takes one --rebalance)."""
    if any(key not in CONSUME_FLAGS for key in settings):
        return None
    return shlex.join(word for key, value in settings.items() for word in (CONSUME_FLAGS[key], value))


def waits_s(spec: CommandSpec) -> int:
    """How long the command may wait by its own options (its --timeout or --wait-stopped)."""
    if isinstance(spec, GateSpec):
        return spec.timeout_s
    if isinstance(spec, RemoveStaticSpec):
        return spec.wait_stopped_s or 0
    return 0

"""Migration paths as data: migrations/*.yaml validated by `MigrationSpec`.

A path is a start state (phase 0) and phases 1..N, each an action with the config every client family
runs after it, what the group must look like once it is done (`expect`), the pause it costs and how to
roll it back. `verify-group --migration NAME --phase N` checks a live group against `expect` of phase N
(0 = the start), which is the gate to run before phase N+1.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kafka_coop._vocab import (
    JAVA_ASSIGNOR_CLASSES,
    ConfiguredFamily,
    Direction,
    GroupProtocol,
    RebalanceProtocol,
    mixes_protocols,
)
from kafka_coop.errors import InvalidInput

Action = Literal["none", "rolling-bounce", "stop-all", "start-all", "stop-all-start-all"]
PauseClass = Literal["none", "per-member", "full-stop"]


class MemberConfig(BaseModel):
    """What one client family runs in a phase; rendered to librdkafka conf or Java properties."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    group_protocol: GroupProtocol = "classic"
    assignors: tuple[str, ...] = ()  # empty on a classic member: any list (a start state that does not care)
    remote_assignor: str | None = None
    static_membership: bool = False
    remove: tuple[str, ...] = ()  # keys the member must drop (e.g. classic-only keys under KIP-848)

    @model_validator(mode="after")
    def _consistent(self) -> MemberConfig:
        if self.group_protocol == "consumer" and self.assignors:
            raise ValueError("a group.protocol=consumer member takes no assignors (use remote_assignor)")
        unknown = [a for a in self.assignors if a not in JAVA_ASSIGNOR_CLASSES]
        if unknown:
            raise ValueError(f"unknown assignor(s) {unknown}; known: {sorted(JAVA_ASSIGNOR_CLASSES)}")
        return self

    def librdkafka_conf(self) -> dict[str, str]:
        if self.group_protocol == "consumer":
            conf = {"group.protocol": "consumer"}
            if self.remote_assignor:
                conf["group.remote.assignor"] = self.remote_assignor
            return conf
        if not self.assignors:
            return {"group.protocol": "classic"}
        return {"group.protocol": "classic", "partition.assignment.strategy": ",".join(self.assignors)}

    def java_properties(self) -> dict[str, str]:
        if self.group_protocol == "consumer":
            props = {"group.protocol": "consumer"}
            if self.remote_assignor:
                props["group.remote.assignor"] = self.remote_assignor
            return props
        if not self.assignors:
            return {"group.protocol": "classic"}
        classes = ",".join(JAVA_ASSIGNOR_CLASSES[a] for a in self.assignors)
        return {"group.protocol": "classic", "partition.assignment.strategy": classes}


class Expect(BaseModel):
    """What the live group must look like; a field left out is not checked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    group_type: GroupProtocol | None = None
    selected_assignor: tuple[str, ...] | None = None  # any of these
    rebalance_protocol: RebalanceProtocol | None = None  # every member
    member_type: GroupProtocol | None = None  # every member
    empty: bool = False  # the group must have no members (between stop-all and start-all)


class MigrationPhase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int = Field(ge=1)
    title: str
    action: Action
    config: dict[ConfiguredFamily, MemberConfig]
    expect: Expect
    pause: PauseClass
    rollback: str
    notes: tuple[str, ...] = ()
    # After the action: send LeaveGroup for every static member the group still lists (they do not leave
    # on close), so the group empties at once instead of after session.timeout.ms.
    remove_static_members: bool = False


class Requirements(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    broker_min: tuple[int, int] | None = None
    policy_allows: Direction | None = None
    no_assignment_user_data: bool = False
    size_limit: Literal["group.max.size", "group.consumer.max.size"] | None = None
    # the broker converts the live group (KIP-848): its online-upgrade rules, the clients' answer to a
    # refusal and the consumer protocol's own rules apply (rollout/_kip848.py)
    online_upgrade: bool = False


class MigrationSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    title: str
    direction: Direction
    from_: RebalanceProtocol | Literal["classic"] = Field(alias="from")
    to: RebalanceProtocol | Literal["classic"]
    families: tuple[ConfiguredFamily, ...]
    summary: str
    excludes: dict[ConfiguredFamily, str] = Field(
        default_factory=dict
    )  # family -> why it cannot take this path
    requires: Requirements = Requirements()
    start: Expect
    start_config: dict[ConfiguredFamily, MemberConfig]
    phases: tuple[MigrationPhase, ...]

    @model_validator(mode="after")
    def _numbered(self) -> MigrationSpec:
        numbers = [p.n for p in self.phases]
        if numbers != list(range(1, len(numbers) + 1)):
            raise ValueError(f"phases must be numbered 1..{len(numbers)} in order, got {numbers}")
        for phase in self.phases:
            if phase.remove_static_members and phase.action not in ("stop-all", "stop-all-start-all"):
                raise ValueError(
                    f"phase {phase.n} removes static members but does not stop them ({phase.action})"
                )
            missing = [f for f in self.families if f not in phase.config and phase.action != "stop-all"]
            if missing:
                raise ValueError(f"phase {phase.n} has no config for {missing}")
        for where, configs in [("start_config", self.start_config)] + [
            (f"phase {p.n}", p.config) for p in self.phases
        ]:
            rdk = configs.get("librdkafka")
            if rdk is not None and mixes_protocols(rdk.assignors):
                raise ValueError(
                    f"{where} gives librdkafka members the mixed list {list(rdk.assignors)}: librdkafka "
                    "refuses lists that mix eager and cooperative assignors"
                )
        return self

    def expect_at(self, phase: int) -> Expect:
        if phase == 0:
            return self.start
        return self.phase(phase).expect

    def config_at(self, phase: int) -> dict[ConfiguredFamily, MemberConfig]:
        """The config members run once phase `phase` is done (stop-all phases keep the previous one)."""
        config = dict(self.start_config)
        for p in self.phases[:phase]:
            config.update(p.config)
        return config

    def phase(self, n: int) -> MigrationPhase:
        if not 1 <= n <= len(self.phases):
            raise InvalidInput(
                f"Migration {self.name} has phases 0..{len(self.phases)}; there is no phase {n}.",
                hint="Phase 0 is the starting state; phase N is the state after step N.",
            )
        return self.phases[n - 1]


def _format_error(path: str, exc: ValidationError) -> InvalidInput:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    return InvalidInput(
        f"{path}: field {where}: {first['msg']}.",
        hint=(
            "A migration file names its path (name, title, direction, from, to, families), its "
            "requirements and its phases (action, config per family, expect); the bundled ones in the "
            "kafka_coop/migrations folder of the installed package are complete examples."
        ),
    )


def parse_migration(text: str, source: str) -> MigrationSpec:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{source} is not valid YAML: {exc}.") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{source} must hold one mapping (a migration), not {type(data).__name__}.")
    try:
        return MigrationSpec.model_validate(data)
    except ValidationError as exc:
        raise _format_error(source, exc) from None


def _bundled() -> dict[str, str]:
    files = resources.files("kafka_coop.migrations")
    return {
        entry.name.removesuffix(".yaml"): entry.read_text()
        for entry in files.iterdir()
        if entry.name.endswith(".yaml")
    }


def migration_names() -> list[str]:
    return sorted(_bundled())


def load_migration(name_or_path: str) -> MigrationSpec:
    """A bundled migration by name, or a YAML file by path."""
    bundled = _bundled()
    if name_or_path in bundled:
        return parse_migration(bundled[name_or_path], f"migrations/{name_or_path}.yaml")
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return parse_migration(path.read_text(), str(path))
    raise InvalidInput(
        f"No migration named {name_or_path!r}.",
        hint=f"Known migrations: {', '.join(sorted(bundled))} (or pass a .yaml file).",
    )


def all_migrations() -> list[MigrationSpec]:
    return [load_migration(name) for name in migration_names()]

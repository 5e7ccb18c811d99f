"""Rollouts: migration paths as data (migrations/*.yaml), gates on live groups, and plans."""

from kafka_coop.rollout._gate import Check, GateReport, GateTarget, evaluate
from kafka_coop.rollout._spec import (
    JAVA_ASSIGNOR_CLASSES,
    Expect,
    MemberConfig,
    MigrationSpec,
    Phase,
    all_migrations,
    load_migration,
    migration_names,
    parse_migration,
)

__all__ = [
    "JAVA_ASSIGNOR_CLASSES",
    "Check",
    "Expect",
    "GateReport",
    "GateTarget",
    "MemberConfig",
    "MigrationSpec",
    "Phase",
    "all_migrations",
    "evaluate",
    "load_migration",
    "migration_names",
    "parse_migration",
]

"""The test bed driven from Python: member processes, a steady producer, the plan runner, the record audit.

Tests, benchmarks and tools start members and walk plans with these; `kafka_coop.sandbox` keeps what the
`kafka-coop sandbox` and `kafka-coop demo` commands use. The demo is built on the same code, which is why
it ships (docs/sandbox.md, "From Python").
"""

from __future__ import annotations

from kafka_coop.sandbox._java import JVM_OPTIONS
from kafka_coop.sandbox._members import (
    MemberProcessError,
    MemberProcesses,
    MemberSpec,
    read_events,
)
from kafka_coop.sandbox._ports import free_ports
from kafka_coop.sandbox._produce import SteadyProducer
from kafka_coop.sandbox._records import audit, audit_when_drained, read_processed
from kafka_coop.sandbox._rollout import PhaseRun, PlanRunner

__all__ = [
    "JVM_OPTIONS",
    "MemberProcessError",
    "MemberProcesses",
    "MemberSpec",
    "PhaseRun",
    "PlanRunner",
    "SteadyProducer",
    "audit",
    "audit_when_drained",
    "free_ports",
    "read_events",
    "read_processed",
]

"""The test bed: a local Apache Kafka broker, Java kafka-clients members and member fleets."""

from kafka_coop.sandbox._broker import (
    DEFAULT_KAFKA_VERSION,
    DEFAULT_PORT,
    Sandbox,
    SandboxState,
    free_port,
)

__all__ = ["DEFAULT_KAFKA_VERSION", "DEFAULT_PORT", "Sandbox", "SandboxState", "free_port"]

from kafka_coop.sandbox._fleet import Fleet, FleetError, Member, MemberSpec, read_events

__all__ += ["Fleet", "FleetError", "Member", "MemberSpec", "read_events"]

from kafka_coop.sandbox._produce import SteadyProducer  # noqa: E402

__all__ += ["SteadyProducer"]

from kafka_coop.errors import GateFailed  # noqa: E402  (one GateFailed, raised where a gate fails)
from kafka_coop.sandbox._records import RecordAudit, audit, audit_when_drained, read_processed  # noqa: E402
from kafka_coop.sandbox._rollout import (  # noqa: E402
    GateRun,
    PhaseRun,
    PlanRunner,
    apply_config,
    run_gate,
)

__all__ += [
    "GateFailed",
    "GateRun",
    "PhaseRun",
    "PlanRunner",
    "RecordAudit",
    "apply_config",
    "audit",
    "audit_when_drained",
    "read_processed",
    "run_gate",
]

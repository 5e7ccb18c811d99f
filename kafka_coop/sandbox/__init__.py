"""The test bed that ships: local Apache Kafka brokers, member processes of any client family, the plan
runner, the record audit, the demo. The library never imports it (docs/design/layout.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_coop._lazy import lazy_attributes
from kafka_coop.sandbox._broker import (
    DEFAULT_KAFKA_VERSION,
    DEFAULT_PORT,
    MAX_BROKERS,
    NodeState,
    Sandbox,
    SandboxState,
)
from kafka_coop.sandbox._node_config import SECURITY_CHOICES
from kafka_coop.sandbox._ports import free_port, free_ports

__all__ = [
    "DEFAULT_KAFKA_VERSION",
    "DEFAULT_PORT",
    "MAX_BROKERS",
    "SECURITY_CHOICES",
    "NodeState",
    "Sandbox",
    "SandboxState",
    "free_port",
    "free_ports",
]

from kafka_coop.sandbox._members import (
    MemberProcess,
    MemberProcessError,
    MemberProcesses,
    MemberSpec,
    read_events,
)

__all__ += ["MemberProcess", "MemberProcessError", "MemberProcesses", "MemberSpec", "read_events"]

from kafka_coop.sandbox._produce import SteadyProducer  # noqa: E402

__all__ += ["SteadyProducer"]

from kafka_coop.errors import GateFailed  # noqa: E402  (one GateFailed, raised where a gate fails)
from kafka_coop.sandbox._records import audit, audit_when_drained, read_processed  # noqa: E402
from kafka_coop.sandbox._rollout import (  # noqa: E402
    CommandRun,
    GateRun,
    PhaseRun,
    PlanRunner,
    apply_config,
)

__all__ += [
    "CommandRun",
    "GateFailed",
    "GateRun",
    "PhaseRun",
    "PlanRunner",
    "apply_config",
    "audit",
    "audit_when_drained",
    "read_processed",
]

from kafka_coop.sandbox._jars import (  # noqa: E402
    SUPPORTED_KAFKA_TEXT,
    check_kafka_version,
    resolve_kafka_jars,
)
from kafka_coop.sandbox._java import (  # noqa: E402
    JAVA_MEMBER_MIN_KAFKA,
    JVM_OPTIONS,
    has_java_member,
    java_member_archive,
    java_member_classpath,
)
from kafka_coop.sandbox._ports import port_is_free  # noqa: E402

__all__ += [
    "JAVA_MEMBER_MIN_KAFKA",
    "JVM_OPTIONS",
    "SUPPORTED_KAFKA_TEXT",
    "check_kafka_version",
    "has_java_member",
    "java_member_archive",
    "java_member_classpath",
    "port_is_free",
    "resolve_kafka_jars",
]

# The demo walks the planner, inspection and analytics: loaded on first use, not with the test bed.
if TYPE_CHECKING:
    from kafka_coop.sandbox._demo import DemoHooks, DemoResult, run_demo

_LAZY: dict[str, str] = {
    "DemoHooks": "kafka_coop.sandbox._demo",
    "DemoResult": "kafka_coop.sandbox._demo",
    "run_demo": "kafka_coop.sandbox._demo",
}
__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ += ["DemoHooks", "DemoResult", "run_demo"]

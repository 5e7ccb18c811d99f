"""The test bed that ships: local Apache Kafka brokers, member processes of any client family, the plan
runner, the record audit, the demo. The library never imports it (docs/design/layout.md).

This face holds what the `kafka-coop sandbox` and `kafka-coop demo` commands use; tests, benchmarks and
tools drive members, the producer, the plan runner and the audit through `kafka_coop.sandbox.testing`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_coop._lazy import lazy_attributes
from kafka_coop.sandbox._broker import (
    DEFAULT_KAFKA_VERSION,
    DEFAULT_PORT,
    MAX_BROKERS,
    Sandbox,
    SandboxState,
)
from kafka_coop.sandbox._jars import SUPPORTED_KAFKA_TEXT, check_kafka_version, resolve_kafka_jars
from kafka_coop.sandbox._java import (
    JAVA_MEMBER_MIN_KAFKA,
    has_java_member,
    java_member_archive,
    java_member_classpath,
)
from kafka_coop.sandbox._members import MemberProcess, MemberProcesses, MemberSpec
from kafka_coop.sandbox._node_config import SECURITY_CHOICES
from kafka_coop.sandbox._ports import free_port, port_is_free
from kafka_coop.sandbox._produce import SteadyProducer
from kafka_coop.sandbox._records import audit_when_drained
from kafka_coop.sandbox._rollout import CommandRun, GateRun, PlanRunner

# The demo walks the planner, inspection and analytics: loaded on first use, not with the test bed.
if TYPE_CHECKING:
    from kafka_coop.sandbox._demo import DemoHooks, DemoResult, run_demo

_LAZY: dict[str, str] = {
    "DemoHooks": "kafka_coop.sandbox._demo",
    "DemoResult": "kafka_coop.sandbox._demo",
    "run_demo": "kafka_coop.sandbox._demo",
}
__getattr__ = lazy_attributes(__name__, _LAZY)

__all__ = [
    "DEFAULT_KAFKA_VERSION",
    "DEFAULT_PORT",
    "JAVA_MEMBER_MIN_KAFKA",
    "MAX_BROKERS",
    "SECURITY_CHOICES",
    "SUPPORTED_KAFKA_TEXT",
    "CommandRun",
    "DemoHooks",
    "DemoResult",
    "GateRun",
    "MemberProcess",
    "Sandbox",
    "SandboxState",
    "check_kafka_version",
    "free_port",
    "has_java_member",
    "java_member_archive",
    "java_member_classpath",
    "port_is_free",
    "resolve_kafka_jars",
    "run_demo",
]

# kafka_coop.sandbox.testing's, here too until bench/rollout_live.py and bench/static_cutover.py take them
# from there (tests/unit/test_architecture.py's LEFT_FOR_BENCH fails once they do, and these go)
__all__ += ["MemberProcesses", "MemberSpec", "PlanRunner", "SteadyProducer", "audit_when_drained"]

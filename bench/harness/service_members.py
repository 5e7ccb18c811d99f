"""Service-shaped member processes on the test bed: the same processes, events and record logs as the idle
bed's, with real work per record and a commit after each batch.

- Python: `testbed/service_member.py` (CoopConsumer, `consume(num_messages=500)`, `--process-ms`
  per record, `commit(asynchronous=False)` after each batch) instead of `kafka-coop consume`;
- Java: the test bed's `CoopMember` with `--process-ms` and `--commit batch` (`commitSync` after each
  `poll()`'s batch; `max.poll.records` is the client's default, 500).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from bench.harness.frame import REPO_ROOT
from kafka_coop.sandbox import MemberProcess
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec

SERVICE_MEMBER = REPO_ROOT / "testbed" / "service_member.py"
BATCH = 500  # consume(num_messages=...) for Python; Java's max.poll.records default


def protocol_of(spec: MemberSpec) -> str:
    if spec.group_protocol == "consumer":
        return "consumer"
    return "cooperative" if spec.assignors == ("cooperative-sticky",) else "eager"


def python_command(spec: MemberSpec, bootstrap: str, events: Path, records: Path) -> list[str]:
    cmd = [
        sys.executable,
        str(SERVICE_MEMBER),
        "--bootstrap",
        bootstrap,
        "--group",
        spec.group,
        "--topics",
        ",".join(spec.topics),
        "--name",
        spec.name,
        "--protocol",
        protocol_of(spec),
        "--events",
        str(events),
        "--process-ms",
        str(spec.process_ms),
        "--batch",
        str(BATCH),
    ]
    if spec.record_log:
        cmd += ["--records", str(records)]
    if spec.instance_id:
        cmd += ["--instance-id", spec.instance_id]
    for key, value in spec.properties.items():
        cmd += ["--conf", f"{key}={value}"]
    return cmd


class ServiceMember(MemberProcess):
    """A member process whose program is the service-shaped one for its family."""

    def command(self) -> list[str]:
        if self.spec.kind == "java":
            return [*super().command(), "--commit", "batch"]
        if self.spec.kind == "python":
            return python_command(self.spec, self.bootstrap, self.events_path, self.records_path)
        raise ValueError(f"no service-shaped member for {self.spec.kind}")


def add_service_members(processes: MemberProcesses, specs: list[Any]) -> list[MemberProcess]:
    """Like `MemberProcesses.add_many`, with service-shaped processes."""
    added: list[MemberProcess] = []
    for spec in specs:
        if spec.name in processes.members:
            raise ValueError(f"a member named {spec.name!r} is already among the member processes")
        member = ServiceMember(spec, processes.workdir, processes.bootstrap, processes.kafka_version)
        processes.members[spec.name] = member
        member.start()
        added.append(member)
    return added

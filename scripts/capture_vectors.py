"""Capture real ConsumerProtocol member metadata from live members of every client family.

Run: `.venv/bin/python scripts/capture_vectors.py [KIND ...]` (starts its own sandbox; with kinds, only
their scenarios are captured again and the others kept). Writes
tests/unit/vectors/member_metadata.json: per scenario and moment (first join, after a rebalance), the
selected protocol and each member's raw subscription/assignment bytes (hex) with what we know to be
true of that member (family, configured assignors, rebalance protocol). The unit tests decode these
bytes and check the inference rules against the truth, so the rules rest on what clients really send.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from kafka_coop.admin import ClusterAdmin
from kafka_coop.sandbox import Sandbox, free_port
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec
from testbed.interop import member_command

OUT = Path(__file__).resolve().parent.parent / "tests" / "unit" / "vectors" / "member_metadata.json"

# (scenario name, kind, assignors, rebalance protocol the member follows). The other families' members
# run with their library's default client id: that default is part of how a family shows on the wire.
SCENARIOS: list[tuple[str, str, tuple[str, ...], str]] = [
    ("python-range", "python", ("range",), "eager"),
    ("python-roundrobin", "python", ("roundrobin",), "eager"),
    ("python-range-roundrobin", "python", ("range", "roundrobin"), "eager"),
    ("python-cooperative-sticky", "python", ("cooperative-sticky",), "cooperative"),
    ("java-range", "java", ("range",), "eager"),
    ("java-sticky", "java", ("sticky",), "eager"),
    ("java-range-cooperative-sticky", "java", ("range", "cooperative-sticky"), "eager"),
    ("java-cooperative-sticky", "java", ("cooperative-sticky",), "cooperative"),
    ("java-cooperative-sticky-range", "java", ("cooperative-sticky", "range"), "eager"),
    ("kafka-python-defaults", "kafka-python", ("range", "roundrobin"), "eager"),
    ("kafka-python-sticky", "kafka-python", ("sticky",), "eager"),
    ("kafka-python-cooperative-sticky", "kafka-python", ("cooperative-sticky",), "cooperative"),
    ("aiokafka-defaults", "aiokafka", ("roundrobin",), "eager"),
    ("aiokafka-range", "aiokafka", ("range",), "eager"),
    ("aiokafka-sticky", "aiokafka", ("sticky",), "eager"),
    ("franz-go-defaults", "franz-go", ("cooperative-sticky",), "cooperative"),
    ("franz-go-range", "franz-go", ("range",), "eager"),
    ("franz-go-sticky", "franz-go", ("sticky",), "eager"),
    ("franz-go-range-cooperative-sticky", "franz-go", ("range", "cooperative-sticky"), "eager"),
    ("sarama-defaults", "sarama", ("range",), "eager"),
    ("sarama-sticky", "sarama", ("sticky",), "eager"),
    ("sarama-cooperative-sticky", "sarama", ("cooperative-sticky",), "cooperative"),
    ("confluent-kafka-go-range", "confluent-kafka-go", ("range",), "eager"),
    ("confluent-kafka-go-cooperative-sticky", "confluent-kafka-go", ("cooperative-sticky",), "cooperative"),
    ("kafkajs-defaults", "kafkajs", ("RoundRobinAssigner",), "eager"),
    ("kafkajs-roundrobin", "kafkajs", ("roundrobin",), "eager"),
]
# The family a kind belongs to (migrations/families.yaml): confluent-kafka-go is librdkafka on the wire.
FAMILY_OF_KIND = {"python": "librdkafka", "confluent-kafka-go": "librdkafka"}


def _capture(admin: ClusterAdmin, group: str) -> dict[str, Any]:
    for _ in range(50):
        found = [g for g in admin.client.list_groups(group=group, timeout=10) if g.id == group]
        if found and found[0].state == "Stable" and found[0].members:
            g = found[0]
            return {
                "state": g.state,
                "protocol_type": g.protocol_type,
                "protocol": g.protocol,
                "members": [
                    {
                        "member_id": m.id,
                        "client_id": m.client_id,
                        "subscription_hex": bytes(m.metadata).hex(),
                        "assignment_hex": bytes(m.assignment).hex(),
                    }
                    for m in g.members
                ],
            }
        time.sleep(0.2)
    raise RuntimeError(f"group {group} never became Stable")


def _legacy_kind(vector: dict[str, Any]) -> str:
    return "python" if vector["family"] == "librdkafka" else "java"


def main() -> None:
    warnings.simplefilter("ignore", DeprecationWarning)
    kinds = set(sys.argv[1:]) or {kind for _, kind, _, _ in SCENARIOS}
    old = json.loads(OUT.read_text()) if OUT.exists() else []
    vectors: list[dict[str, Any]] = [v for v in old if v.get("kind", _legacy_kind(v)) not in kinds]
    with tempfile.TemporaryDirectory() as tmp, Sandbox(dir=Path(tmp) / "k", port=free_port()) as kafka:
        admin = ClusterAdmin(kafka.bootstrap)
        with MemberProcesses(kafka.bootstrap, Path(tmp) / "fleet", families=member_command) as processes:
            for name, kind, assignors, protocol in SCENARIOS:
                if kind not in kinds:
                    continue
                topic = f"vec-{name}"
                admin.ensure_topic(topic, 4)
                group = f"vec-{name}"
                spec = MemberSpec(
                    name=f"{name}-0",
                    kind=kind,
                    group=group,
                    topics=(topic,),
                    assignors=assignors,
                    client_id=None if kind in ("java", "python") else "default",
                )
                processes.add_many([spec, spec.replace(name=f"{name}-1")])
                processes.wait_stable(group, members=2)
                first = _capture(admin, group)
                processes.add(spec.replace(name=f"{name}-2"))
                processes.wait_stable(group, members=3)
                time.sleep(1.0)
                after = _capture(admin, group)
                for moment, snap in (("first-join", first), ("after-rebalance", after)):
                    vectors.append(
                        {
                            "scenario": name,
                            "moment": moment,
                            "kind": kind,
                            "family": FAMILY_OF_KIND.get(kind, kind),
                            "assignors": list(assignors),
                            "rebalance_protocol": protocol,
                            **snap,
                        }
                    )
                for member_name in (f"{name}-0", f"{name}-1", f"{name}-2"):
                    processes.stop(member_name)
                print(f"captured {name}: selected {after['protocol']}")  # noqa: T201
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(vectors, indent=1) + "\n")
    print(f"wrote {len(vectors)} vectors to {OUT}")  # noqa: T201


if __name__ == "__main__":
    main()

"""Capture real ConsumerProtocol member metadata from live members of both client families.

Run: `.venv/bin/python scripts/capture_vectors.py` (starts its own sandbox). Writes
tests/unit/vectors/member_metadata.json: per scenario and moment (first join, after a rebalance), the
selected protocol and each member's raw subscription/assignment bytes (hex) with what we know to be
true of that member (family, configured assignors, rebalance protocol). The unit tests decode these
bytes and check the inference rules against the truth, so the rules rest on what clients really send.
"""

from __future__ import annotations

import json
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from kafka_coop.admin import ClusterAdmin
from kafka_coop.sandbox import Fleet, MemberSpec, Sandbox, free_port

OUT = Path(__file__).resolve().parent.parent / "tests" / "unit" / "vectors" / "member_metadata.json"

# (scenario name, kind, assignors, rebalance protocol the member follows)
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
]


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


def main() -> None:
    warnings.simplefilter("ignore", DeprecationWarning)
    vectors: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, Sandbox(dir=Path(tmp) / "k", port=free_port()) as kafka:
        admin = ClusterAdmin(kafka.bootstrap)
        with Fleet(kafka.bootstrap, Path(tmp) / "fleet") as fleet:
            for name, kind, assignors, protocol in SCENARIOS:
                topic = f"vec-{name}"
                admin.ensure_topic(topic, 4)
                group = f"vec-{name}"
                spec = MemberSpec(
                    name=f"{name}-0", kind=kind, group=group, topics=(topic,), assignors=assignors
                )  # type: ignore[arg-type]
                fleet.add_many([spec, spec.replace(name=f"{name}-1")])
                fleet.wait_stable(group, members=2)
                first = _capture(admin, group)
                fleet.add(spec.replace(name=f"{name}-2"))
                fleet.wait_stable(group, members=3)
                time.sleep(1.0)
                after = _capture(admin, group)
                for moment, snap in (("first-join", first), ("after-rebalance", after)):
                    vectors.append(
                        {
                            "scenario": name,
                            "moment": moment,
                            "family": "librdkafka" if kind == "python" else "java",
                            "assignors": list(assignors),
                            "rebalance_protocol": protocol,
                            **snap,
                        }
                    )
                for member_name in (f"{name}-0", f"{name}-1", f"{name}-2"):
                    fleet.stop(member_name)
                print(f"captured {name}: selected {after['protocol']}")  # noqa: T201
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(vectors, indent=1) + "\n")
    print(f"wrote {len(vectors)} vectors to {OUT}")  # noqa: T201


if __name__ == "__main__":
    main()

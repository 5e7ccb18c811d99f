"""The other client families' members (testbed/interop/) run in the fleet like the Java and Python ones.

Each is a real program on its registry package; these tests hold them to the Java member's contract:
they join, write RebalanceEvent lines, hand partitions over when one leaves, close cleanly on SIGTERM,
and lose no record (bounces under a plan: tests/e2e/test_family_walks.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from kafka_coop.events import RebalanceEvent
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec, SteadyProducer, audit_when_drained
from testbed.interop import INTEROP_KINDS
from tests.conftest import CliResult
from tests.integration.looks import snapshot_via_cli

PARTITIONS = 4
# The assignor each family runs by itself here: its cooperative one where it ships one, else eager.
OWN_ASSIGNORS: dict[str, tuple[str, ...]] = {
    "kafka-python": ("cooperative-sticky",),
    "aiokafka": ("roundrobin",),
    "franz-go": ("cooperative-sticky",),
    "sarama": ("cooperative-sticky",),
    "confluent-kafka-go": ("cooperative-sticky",),
    "kafkajs": ("RoundRobinAssigner",),
}
EXPECTED_PROTOCOL = {
    kind: "eager" if kind in ("aiokafka", "kafkajs") else "cooperative" for kind in OWN_ASSIGNORS
}


@pytest.mark.parametrize("kind", INTEROP_KINDS)
def test_member_joins_and_closes_cleanly_with_no_record_lost(
    kind: str,
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic = topic_factory(PARTITIONS)
    group = unique(f"interop-{kind}")
    spec = MemberSpec(
        name=f"{kind}-0",
        kind=kind,
        group=group,
        topics=(topic,),
        assignors=OWN_ASSIGNORS[kind],
        record_log=True,
    )
    with SteadyProducer(bootstrap, topic, PARTITIONS, rate=100) as producer:
        members = processes.add_many([spec, spec.replace(name=f"{kind}-1")])
        processes.wait_stable(group, joined=members)
        processes.stop(members[0].spec.name)  # one leaves: the other takes its partitions over
        processes.wait_stable(group, members=1)
        producer.stop()
        result = audit_when_drained(topic, producer.acked, lambda: [m.records_path for m in members])
    processes.stop_all(group=group)
    assert [m.proc.returncode for m in members if m.proc is not None] == [0, 0]
    events = [RebalanceEvent.model_validate(e) for m in members for e in m.events()]
    assert {e.protocol for e in events} == {EXPECTED_PROTOCOL[kind]}
    assert {e.kind for e in events} >= {"assigned", "revoked"}
    assert result.produced > 0
    assert result.lost == 0, result.lost_examples


def test_two_kafka_python_members_with_defaults_and_a_kafka_coop_member_are_described_apart(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    """The reported case, live: kafka-python's defaults (range, roundrobin; its own client id)."""
    topic, group = topic_factory(4), unique("kpy-defaults")
    kpy = MemberSpec(
        name="kpy-0", kind="kafka-python", group=group, topics=(topic,), assignors=(), client_id="default"
    )
    members = processes.add_many(
        [
            kpy,
            kpy.replace(name="kpy-1"),
            MemberSpec(name="coop", kind="python", group=group, topics=(topic,), manifests=False),
        ]
    )
    processes.wait_stable(group, joined=members)
    snap = snapshot_via_cli(run_cli, bootstrap, group)
    families = sorted((m.client_family.value, m.client_family.source) for m in snap.members)
    assert families == [
        ("kafka-python", "inferred"),
        ("kafka-python", "inferred"),
        ("librdkafka", "inferred"),
    ]


def test_eight_members_of_seven_families_in_one_group_are_each_named_and_planned_for(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    """Every family on roundrobin (KafkaJS runs its RoundRobinAssigner under that name), each with its
    library's default client id (Java: an empty client.id makes its consumer-<group>-<n>)."""
    topic, group = topic_factory(12), unique("seven-families")
    specs = [
        MemberSpec(
            name=kind, kind=kind, group=group, topics=(topic,), assignors=("roundrobin",), client_id="default"
        )  # type: ignore[arg-type]
        for kind in INTEROP_KINDS
    ]
    specs.append(
        MemberSpec(
            name="java",
            kind="java",
            group=group,
            topics=(topic,),
            assignors=("roundrobin",),
            properties={"client.id": ""},
            manifests=False,
        )
    )
    specs.append(
        MemberSpec(
            name="coop",
            kind="python",
            group=group,
            topics=(topic,),
            assignors=("roundrobin",),
            manifests=False,
        )
    )
    members = processes.add_many(specs)
    live = processes.wait_stable(group, joined=members)
    assert live.selected_assignor == "roundrobin"
    assert sorted(tp for m in live.members for tp in m.assignment) == [(topic, p) for p in range(12)]
    snap = snapshot_via_cli(run_cli, bootstrap, group)
    named = Counter(m.client_family.value for m in snap.members)
    assert named == {
        "librdkafka": 2,  # confluent-kafka-go and kafka-coop consume
        "kafka-python": 1,
        "aiokafka": 1,
        "franz-go": 1,
        "sarama": 1,
        "kafkajs": 1,
        "java": 1,
    }
    assert {m.client_family.source for m in snap.members} == {"inferred"}
    assert {m.rebalance_protocol.value for m in snap.members} == {"eager"}

    up = run_cli("upgrade-plan", group, "--to", "cooperative", "--bootstrap-server", bootstrap)
    assert up.code == 1, "no path to cooperative while aiokafka and KafkaJS members are in the group"
    assert "aiokafka ships no cooperative-sticky assignor" in up.stdout
    down = run_cli("downgrade-plan", group, "--to", "eager", "--bootstrap-server", bootstrap)
    assert down.code == 0, down.stdout + down.stderr

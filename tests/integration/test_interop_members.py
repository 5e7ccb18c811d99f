"""The other client families' members (interop/) run in the fleet like the Java and Python ones.

Each is a real program on its registry package; these tests hold them to the Java member's contract:
they join, write RebalanceEvent lines, survive a bounce, close cleanly on SIGTERM, and lose no record.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafka_coop.events import RebalanceEvent
from kafka_coop.sandbox import Fleet, MemberSpec, SteadyProducer, audit_when_drained
from kafka_coop.sandbox._interop import INTEROP_KINDS

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
def test_member_joins_bounces_and_closes_cleanly_with_no_record_lost(
    kind: str,
    fleet: Fleet,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic = topic_factory(PARTITIONS)
    group = unique(f"interop-{kind}")
    spec = MemberSpec(
        name=f"{kind}-0",
        kind=kind,  # type: ignore[arg-type]
        group=group,
        topics=(topic,),
        assignors=OWN_ASSIGNORS[kind],
        record_log=True,
    )
    with SteadyProducer(bootstrap, topic, PARTITIONS, rate=100) as producer:
        members = fleet.add_many([spec, spec.replace(name=f"{kind}-1")])
        fleet.wait_stable(group, joined=members)
        fleet.rolling_bounce(group)
        producer.stop()
        result = audit_when_drained(topic, producer.acked, lambda: [m.records_path for m in members])
    fleet.stop_all(group=group)
    assert [m.proc.returncode for m in members if m.proc is not None] == [0, 0]
    events = [RebalanceEvent.model_validate(e) for m in members for e in m.events()]
    assert {e.protocol for e in events} == {EXPECTED_PROTOCOL[kind]}
    assert {e.kind for e in events} >= {"assigned", "revoked"}
    assert result.produced > 0
    assert result.lost == 0, result.lost_examples


def test_six_families_share_one_group_on_the_roundrobin_protocol(
    fleet: Fleet, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    topic = topic_factory(12)
    group = unique("six-families")
    members = fleet.add_many(
        MemberSpec(name=kind, kind=kind, group=group, topics=(topic,), assignors=("roundrobin",))  # type: ignore[arg-type]
        for kind in INTEROP_KINDS
    )
    live = fleet.wait_stable(group, joined=members)
    assert live.assignor == "roundrobin"
    assert sorted(tp for m in live.members for tp in m.assignment) == [(topic, p) for p in range(12)]

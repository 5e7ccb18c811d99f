"""KAFKA-21648 reproduced on the sandbox's broker, and the gate's answer to it: a classic group held in
a rebalance (its two members stop polling, so they never rejoin) is described with its members' last
assignment, and the phase-0 gate of classic -> consumer (the look an upgrade starts from, KAFKA-21582)
does not pass on it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer

from kafka_coop.admin import ClusterAdmin
from kafka_coop.families import broker_defects
from kafka_coop.inspection import take_snapshot
from kafka_coop.rollout import load_migration, run_gate
from tests.integration.members import wait_for


@pytest.fixture
def consumers() -> Iterator[list[Consumer]]:
    made: list[Consumer] = []
    yield made
    for consumer in made:
        consumer.close()


def test_a_rebalancing_classic_group_shows_its_last_assignment_and_the_phase_zero_gate_does_not_pass(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    consumers: list[Consumer],
) -> None:
    topic, group = topic_factory(4), unique("kafka-21648")
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "partition.assignment.strategy": "range"}
    for n in range(2):
        consumers.append(Consumer({**conf, "group.instance.id": f"{group}-{n}"}))
        consumers[-1].subscribe([topic])

    def assigned() -> bool:
        for consumer in consumers:
            consumer.poll(0.1)
        return sum(len(c.assignment()) for c in consumers) == 4

    wait_for(assigned, what="two classic members holding the four partitions")
    consumers.append(Consumer({**conf, "group.instance.id": f"{group}-2"}))  # joins; the two never rejoin
    consumers[-1].subscribe([topic])
    deadline = time.monotonic() + 30
    snap = take_snapshot(admin, group, with_lag=False)
    while snap.state != "preparing_rebalance" and time.monotonic() < deadline:
        consumers[-1].poll(0.2)
        snap = take_snapshot(admin, group, with_lag=False)
    assert snap.state == "preparing_rebalance"
    defect = next(d for d in broker_defects().defects if d.id == "KAFKA-21648")
    if defect.applies_to(snap.broker.kafka_version.value):
        # the defect itself: the old coordinator listed a rebalancing group's members with nothing
        assert sum(len(m.assignment) for m in snap.members) == 4, [m.assignment for m in snap.members]

    report = run_gate(
        admin, group, spec=load_migration("classic-to-consumer"), phase=0, timeout_s=10, lag_window_s=0
    )
    assert report.failed()
    checks = {c.name: c for c in report.checks}
    assert checks["no-rebalance-in-progress"].status == "fail"
    assert checks["consistent-looks"].status == "fail"
    assert checks["consistent-looks"].reason == "the group is preparing_rebalance"

"""A cutover plan for a fleet of kafka-coop members states the pause `rollout run`'s coordinated cutover
costs (measured: bench/rollout_live.py), not only a deploy's stop-all / start-all."""

from __future__ import annotations

from kafka_coop.rollout import Plan
from tests.unit.builders import declared_broker, fleet_member, fleet_of, plan


def _cutover_plan(*, kafka_coop: bool) -> Plan:
    member = fleet_member(
        "m",
        family="librdkafka",
        protocol="eager",
        assignors=("range",),
        count=10,
        static=True,
        kafka_coop=kafka_coop,
    )
    p = plan(fleet_of(member, selected="range", broker=declared_broker("4.1")), "upgrade", "cooperative")
    assert p.migration == "eager-to-cooperative-cutover"
    return p


def test_a_kafka_coop_fleets_cutover_states_the_coordinated_pause_on_its_stop() -> None:
    stop, start = _cutover_plan(kafka_coop=True).phases
    assert "coordinated cutover" in stop.pause_note and "one rebalance" in stop.pause_note
    assert "0.35 to 1.2 s for 10 members" in stop.pause_note
    assert "coordinated cutover" not in start.pause_note, "said once, where the pause begins"


def test_a_fleet_with_other_members_states_only_the_deploys_stop_all_pause() -> None:
    stop, _ = _cutover_plan(kafka_coop=False).phases
    assert "down from the first stop" in stop.pause_note
    assert "coordinated cutover" not in stop.pause_note

"""KIP-848 static bounces in the plan and the gate: the new member is refused while a killed old one's
session lasts, so both say to let the old process close, or remove it, rather than wait out its session."""

from __future__ import annotations

from kafka_coop.rollout import GateCommand, all_migrations, evaluate, make_plan, parse_fleet
from tests.unit.builders import consumer_group, consumer_member

MIGRATIONS = [(spec.name, spec) for spec in all_migrations()]
FLEET = """group: orders
broker: {version: "4.4", migration_policy: bidirectional, rebalance_protocols: [classic, consumer]}
members:
  - {family: librdkafka, version: '2.16.0', count: 2, static: true, assignors: [range]}
"""


def test_the_plan_to_the_consumer_protocol_says_how_a_static_bounce_is_refused_and_freed() -> None:
    plan = make_plan(
        parse_fleet(FLEET, "fleet.yaml"),
        "upgrade",
        "consumer",
        MIGRATIONS,
        gate=GateCommand(bootstrap="b:9092"),
    )
    said = " ".join(plan.warnings)
    assert "holds it until group.consumer.session.timeout.ms" in said, said
    assert "kafka-coop remove-members GROUP --instance-id ID" in said


def test_a_consumer_group_short_of_a_static_member_hints_at_the_refused_replacement() -> None:
    snap = consumer_group(consumer_member("s1", 3, topic="t"), group_epoch=3, assignment_epoch=3)
    count = next(c for c in evaluate(snap, expect_members=2).checks if c.name == "member-count")
    assert count.status == "fail" and "remove-members GROUP --instance-id ID" in count.hint

"""Client minimums from families.yaml: a librdkafka member older than 2.15 on (or moved to) the consumer
protocol hits a fatal defect there; a path onto that protocol blocks on a known affected version and
warns on an unknown one, and a classic path says nothing of it. A phase onto the consumer protocol
states KIP-1263's assignment interval in its expected pause."""

from __future__ import annotations

from tests.unit.builders import plan_of_file

BROKER = """
broker:
  version: "4.4"
  migration_policy: bidirectional
  rebalance_protocols: [classic, consumer]
  group_version: 1
"""


def _member(version: str | None, assignors: str = "[range]") -> str:
    pinned = f"version: '{version}', " if version else ""
    return f"  - {{family: librdkafka, {pinned}count: 2, assignors: {assignors}}}\n"


def test_a_librdkafka_member_older_than_2_15_blocks_the_path_to_the_consumer_protocol() -> None:
    plan = plan_of_file(BROKER, _member("2.13.0"))
    assert plan.status == "blocked"
    blocker = next(b for b in plan.blockers if b.name == "known-defect")
    assert "versions >=2.12,<2.15" in blocker.reason and "INVALID_REQUEST" in blocker.reason
    assert "2.15" in blocker.reason


def test_a_librdkafka_member_of_unknown_version_is_warned_not_blocked() -> None:
    plan = plan_of_file(BROKER, _member(None))
    assert "known-defect" not in {b.name for b in plan.blockers}
    assert any("INVALID_REQUEST" in w for w in plan.warnings)


def test_a_librdkafka_2_16_member_hears_nothing_of_it() -> None:
    plan = plan_of_file(BROKER, _member("2.16.0"))
    assert not any("INVALID_REQUEST" in w for w in plan.warnings)
    assert "known-defect" not in {b.name for b in plan.blockers}


def test_a_classic_path_says_nothing_of_a_consumer_protocol_defect() -> None:
    plan = plan_of_file(BROKER, _member("2.13.0"), to="cooperative")
    assert not any("INVALID_REQUEST" in w for w in plan.warnings)
    assert "known-defect" not in {b.name for b in plan.blockers}


def test_a_phase_onto_the_consumer_protocol_adds_kip1263s_assignment_interval_to_its_pause() -> None:
    (phase,) = plan_of_file(BROKER, _member("2.16.0")).phases
    assert "group.consumer.assignment.interval.ms (1 s by default from Kafka 4.3" in phase.pause_note
    cooperative = plan_of_file(BROKER, _member("2.16.0"), to="cooperative")
    assert all("assignment.interval" not in p.pause_note for p in cooperative.phases)


def test_a_phase_onto_the_consumer_protocol_of_a_broker_before_4_3_states_no_assignment_interval() -> None:
    (phase,) = plan_of_file(BROKER.replace('"4.4"', '"4.1"'), _member("2.16.0")).phases
    assert "assignment.interval" not in phase.pause_note

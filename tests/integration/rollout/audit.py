"""What a walk must leave behind: every record the producer had acknowledged, processed."""

from __future__ import annotations

from kafka_coop.sandbox.testing import MemberProcesses, SteadyProducer, audit_when_drained


def assert_nothing_lost(processes: MemberProcesses, topic: str, producer: SteadyProducer) -> None:
    """Stop `producer`; once the members drain `topic`, each acknowledged record was processed."""
    producer.stop()
    audit = audit_when_drained(
        topic, producer.acked, lambda: [m.records_path for m in processes.members.values()], timeout_s=60
    )
    assert audit.produced > 0
    assert audit.lost == 0, f"{audit.lost} records never processed, e.g. {audit.lost_examples}"

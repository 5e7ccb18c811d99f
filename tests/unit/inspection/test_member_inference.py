"""Member inference on bytes captured from real members (tests/unit/vectors, scripts/capture_vectors.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_coop.inspection import (
    MemberAnswers,
    broker_facts,
    infer_generation,
    infer_members,
    version_at_least,
)
from kafka_coop.protocol import ConsumerProtocolSubscription, encode_subscription
from tests.unit.builders import live_member, manifest
from tests.unit.inspection.builders import VECTORS, vector_id, vector_members

# Java and librdkafka (confluent-kafka-python) members with app-set client ids; the other families'
# vectors (with `kind`) are covered by test_family_inference.py.
JAVA_AND_PYTHON = [v for v in VECTORS if v.get("kind", v["family"]) in ("java", "librdkafka", "python")]


@pytest.mark.parametrize("vector", VECTORS, ids=vector_id)
def test_client_family_is_the_truth_or_unknown_never_another_family(vector: dict[str, Any]) -> None:
    """Java and franz-go send the same shape, so an app-set client id leaves a Java member unknown."""
    members = infer_members("g", "classic", vector["protocol"], vector_members(vector))
    assert {m.client_family.value for m in members} <= {vector["family"], "unknown"}


@pytest.mark.parametrize("vector", VECTORS, ids=vector_id)
def test_rebalance_protocol_is_inferred_right_or_admitted_unknown(vector: dict[str, Any]) -> None:
    members = infer_members("g", "classic", vector["protocol"], vector_members(vector))
    for m in members:
        assert m.rebalance_protocol.value in (vector["rebalance_protocol"], "unknown"), m.rebalance_protocol
        assert m.rebalance_protocol.source == (
            "unknown" if m.rebalance_protocol.value == "unknown" else "inferred"
        )


@pytest.mark.parametrize(
    "vector", [v for v in JAVA_AND_PYTHON if v["moment"] == "after-rebalance"], ids=vector_id
)
def test_a_settled_group_has_at_least_two_member_protocols_decided(vector: dict[str, Any]) -> None:
    """After a rebalance cooperative members re-join with owned partitions, so the rules decide."""
    members = infer_members("g", "classic", vector["protocol"], vector_members(vector))
    assert sum(m.rebalance_protocol.value == vector["rebalance_protocol"] for m in members) >= 2


def test_librdkafka_cooperative_sticky_leader_writes_user_data_into_assignments() -> None:
    """The fact that blocks KIP-848 conversion for librdkafka cooperative groups (broker: userData lost)."""
    coop = next(
        v
        for v in VECTORS
        if v["scenario"] == "python-cooperative-sticky" and v["moment"] == "after-rebalance"
    )
    members = infer_members("g", "classic", coop["protocol"], vector_members(coop))
    assert all((m.assignment_user_data or 0) > 0 for m in members)
    for v in JAVA_AND_PYTHON:  # sarama's sticky leader writes userData into assignments too
        if v["scenario"] != "python-cooperative-sticky":
            assert all(
                not m.assignment_user_data
                for m in infer_members("g", "classic", v["protocol"], vector_members(v))
            )


def test_the_selected_assignor_is_all_that_is_known_of_the_list_without_a_manifest() -> None:
    vector = next(v for v in VECTORS if v["scenario"] == "java-range-cooperative-sticky")
    members = infer_members("g", "classic", vector["protocol"], vector_members(vector))
    assert {m.assignors.value for m in members} == {("range",)}
    assert {m.assignors.source for m in members} == {"inferred"}


JAVA_PHASE_ONE: dict[str, Any] = {
    "client_id": "c",
    "libraries": {"kafka-clients": "4.1.1"},
    "assignors": ("range", "cooperative-sticky"),
    "started_ms": 1,
    "heartbeat_ms": 2,
}
"""What a Java member in the two-bounce path's first phase declares."""


def test_a_manifest_makes_every_fact_declared() -> None:
    vector = next(v for v in VECTORS if v["scenario"] == "java-range-cooperative-sticky")
    inputs = vector_members(vector)
    manifests = [manifest(m.member_id, **JAVA_PHASE_ONE) for m, _, _ in inputs]
    members = infer_members("g", "classic", vector["protocol"], inputs, manifests)
    for m in members:
        assert m.assignors.value == ("range", "cooperative-sticky")
        assert {m.assignors.source, m.rebalance_protocol.source, m.client_family.source} == {"declared"}


def test_a_manifest_of_another_group_or_a_departed_member_is_ignored() -> None:
    vector = VECTORS[0]
    inputs = vector_members(vector)
    manifests = [
        manifest(inputs[0][0].member_id, **JAVA_PHASE_ONE, group="other"),
        manifest("gone-member", **JAVA_PHASE_ONE),
    ]
    members = infer_members("g", "classic", vector["protocol"], inputs, manifests)
    assert all(m.manifest is None for m in members)


def test_static_members_match_their_manifest_by_instance_id_across_restarts() -> None:
    member = live_member(member_id="new-id", client_id="c", host="h", instance_id="svc-1", assignment=())
    (snap,) = infer_members(
        "g", "classic", "range", [member], [manifest("old-id", **JAVA_PHASE_ONE, instance_id="svc-1")]
    )
    assert snap.manifest is not None


def test_member_types_in_a_converted_group_come_from_the_member_id_shape() -> None:
    classic = live_member(
        member_id="gep0-e0fea13a-add0-4d15-b8d2-18a201601eba",
        client_id="gep0",
        host="h",
        instance_id=None,
        assignment=(),
    )
    consumer = live_member(
        member_id="ZmN4tQH9Ty2Yk+dxoxZf9w", client_id="gek2", host="h", instance_id=None, assignment=()
    )
    snaps = {m.client_id: m for m in infer_members("g", "consumer", "uniform", [classic, consumer])}
    assert snaps["gep0"].member_type.value == "classic"
    assert snaps["gek2"].member_type.value == "consumer"
    assert snaps["gek2"].rebalance_protocol.value == "consumer"
    assert (
        snaps["gep0"].rebalance_protocol.value == "unknown"
    )  # its metadata is not visible in a consumer group


def test_generation_is_the_latest_one_members_joined_in() -> None:
    vector = next(
        v for v in VECTORS if v["scenario"] == "java-cooperative-sticky" and v["moment"] == "after-rebalance"
    )
    generation = infer_generation(infer_members("g", "classic", vector["protocol"], vector_members(vector)))
    assert generation.value is not None and generation.value >= 2
    librdkafka_eager = next(v for v in VECTORS if v["scenario"] == "python-range")
    assert (
        infer_generation(infer_members("g", "classic", "range", vector_members(librdkafka_eager))).value
        is None
    )


def test_broker_version_is_read_off_the_config_keys_it_has() -> None:
    facts = broker_facts(
        1,
        {
            "group.streams.session.timeout.ms": "1",
            "group.consumer.migration.policy": "upgrade",
            "group.coordinator.rebalance.protocols": "classic,consumer",
            "group.max.size": "7",
        },
    )
    assert facts.kafka_version.value == "4.1+"
    assert facts.migration_policy == "upgrade"
    assert facts.group_max_size == 7
    assert facts.rebalance_protocols == ("classic", "consumer")
    assert (
        broker_facts(
            1, {"group.coordinator.rebalance.protocols": "classic", "group.coordinator.new.enable": "true"}
        ).kafka_version.value
        == "3.7-3.9"
    )


@pytest.mark.parametrize(
    ("version", "expected"),
    [("4.1+", True), ("4.0+", True), ("3.7-3.9", False), ("<3.7", False), ("unknown", None)],
)
def test_version_comparison_against_four_oh(version: str, expected: bool | None) -> None:
    assert version_at_least(version, (4, 0)) is expected


def _java_joined(
    name: str,
    *,
    generation: int,
    assigned_in: int = -1,
    owned: tuple[tuple[str, int], ...] = (),
    holds: tuple[tuple[str, int], ...] = (("t", 0),),
) -> MemberAnswers:
    """A Java cooperative-sticky subscription: `generation` it joined from, `assigned_in` the generation
    of its last assignment (its userData), `owned` what it re-joins with, `holds` what that join gave it."""
    sub = ConsumerProtocolSubscription(
        version=3,
        topics=("t",),
        user_data=assigned_in.to_bytes(4, "big", signed=True),
        owned_partitions=owned,
        generation_id=generation,
    )
    return live_member(
        member_id=f"{name}-0b5f4c1e-7d0a-4e4b-9a55-3f1f2d4b6c7e",
        client_id=name,
        host="/127.0.0.1",
        instance_id=None,
        assignment=holds,
        subscription=encode_subscription(sub),
    )


def _protocols(*members: MemberAnswers) -> set[str]:
    return {m.rebalance_protocol.value for m in infer_members("g", "classic", "cooperative-sticky", members)}


def test_a_group_whose_members_all_joined_for_the_first_time_is_not_called_eager() -> None:
    """Started together (a fresh group, or every pod restarted at once), nobody owned anything to send,
    whatever its protocol: a cooperative group read as eager was refused its own plans."""
    members = infer_members(
        "g",
        "classic",
        "cooperative-sticky",
        [_java_joined("a", generation=-1), _java_joined("b", generation=-1)],
    )
    assert {m.rebalance_protocol.value for m in members} == {"unknown"}
    assert all("no member has had an assignment yet" in m.rebalance_protocol.signal for m in members)


def test_a_member_in_a_generation_but_never_assigned_tells_nothing_either() -> None:
    """Seen on the sandbox: its SyncGroup was cut by the next rebalance, so it joined from generation 1
    with its assignor's generation still -1."""
    assert _protocols(_java_joined("a", generation=-1), _java_joined("b", generation=1)) == {"unknown"}


def test_members_that_re_joined_from_an_assignment_owning_nothing_are_eager() -> None:
    """Eager members revoke everything before they re-join: assigned in generation 4, they send nothing."""
    assert _protocols(_java_joined("a", generation=4, assigned_in=4), _java_joined("b", generation=-1)) == {
        "eager"
    }


def test_members_that_hold_no_partition_at_all_are_not_called_eager() -> None:
    """A group given nothing to consume (its topic not made yet, a pattern matching nothing) re-joins
    owning nothing whatever its protocol: a cooperative one read as eager was refused its own plans."""
    members = [_java_joined(n, generation=4, assigned_in=4, holds=()) for n in ("a", "b")]
    inferred = infer_members("g", "classic", "cooperative-sticky", members)
    assert {m.rebalance_protocol.value for m in inferred} == {"unknown"}
    assert all("no member holds a partition" in m.rebalance_protocol.signal for m in inferred)

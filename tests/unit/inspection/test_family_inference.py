"""Client family inference on bytes captured from real members of every family (tests/unit/vectors).

Each family's wire shape is data (migrations/families/families.yaml `wire`); these tests hold the data
and the inference to what real members sent, and to the rule that a family we cannot tell is unknown.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafka_coop.families import WireTraits, catalog, recognise
from kafka_coop.inspection import infer_members
from tests.unit.inspection.builders import VECTORS, vector_id, vector_members

FAMILY_VECTORS = [v for v in VECTORS if v.get("kind") not in (None, "java", "python")]


def _vector(scenario: str, moment: str = "after-rebalance") -> dict[str, Any]:
    return next(v for v in VECTORS if v["scenario"] == scenario and v["moment"] == moment)


def test_two_kafka_python_members_with_defaults_next_to_a_librdkafka_member_are_kafka_python() -> None:
    """The reported bug: kafka-python's empty userData made it look like librdkafka."""
    kafka_python = vector_members(_vector("kafka-python-defaults"))[:2]
    librdkafka = vector_members(_vector("python-range"))[:1]
    members = infer_members("g", "classic", "range", [*kafka_python, *librdkafka])
    families = sorted((m.client_family.value, m.client_family.source) for m in members)
    assert families == [
        ("kafka-python", "inferred"),
        ("kafka-python", "inferred"),
        ("librdkafka", "inferred"),
    ]


@pytest.mark.parametrize("vector", FAMILY_VECTORS, ids=vector_id)
def test_every_family_with_its_default_client_id_is_named(vector: dict[str, Any]) -> None:
    members = infer_members("g", "classic", vector["protocol"], vector_members(vector))
    assert {(m.client_family.value, m.client_family.source) for m in members} == {
        (vector["family"], "inferred")
    }


@pytest.mark.parametrize("vector", VECTORS, ids=vector_id)
def test_an_app_set_client_id_leaves_the_family_named_only_when_the_wire_alone_tells(
    vector: dict[str, Any],
) -> None:
    """Without a default client id the family is the truth or unknown, never another family."""
    members = infer_members(
        "g", "classic", vector["protocol"], vector_members(vector, client_id="orders-svc")
    )
    for m in members:
        assert m.client_family.value in (vector["family"], "unknown"), m.client_family
        if m.client_family.value == "unknown":
            assert m.client_family.source == "unknown"
            assert vector["family"] in m.client_family.signal


@pytest.mark.parametrize("scenario", ["python-range", "confluent-kafka-go-range", "sarama-defaults"])
def test_librdkafka_and_sarama_are_told_by_the_wire_alone(scenario: str) -> None:
    vector = _vector(scenario)
    members = infer_members(
        "g", "classic", vector["protocol"], vector_members(vector, client_id="orders-svc")
    )
    assert {m.client_family.value for m in members} == {vector["family"]}


def test_java_and_franz_go_look_alike_on_the_wire_so_only_a_default_client_id_tells() -> None:
    java = vector_members(_vector("java-range"), client_id="orders-svc")[0]
    franz = vector_members(_vector("franz-go-range"), client_id="orders-svc")[0]
    for member in (java, franz):
        (snap,) = infer_members("g", "classic", "range", [member])
        assert snap.client_family.value == "unknown"
        assert "java" in snap.client_family.signal
        assert "franz-go" in snap.client_family.signal


def test_a_kip848_member_is_known_by_a_default_client_id_only() -> None:
    assert recognise(WireTraits(client_id="kgo")).family == "franz-go"
    assert recognise(WireTraits(client_id="rdkafka")).family == "librdkafka"
    assert recognise(WireTraits(client_id="consumer-orders-3")).family == "java"
    assert recognise(WireTraits(client_id="orders-svc")).family is None


def test_every_captured_family_has_a_wire_signature_that_fits_its_own_bytes() -> None:
    captured = {v["family"] for v in VECTORS}
    assert captured == set(catalog().names)


def test_kafkajs_members_on_its_own_assigner_are_eager() -> None:
    vector = _vector("kafkajs-defaults")
    members = infer_members("g", "classic", "RoundRobinAssigner", vector_members(vector))
    assert {m.rebalance_protocol.value for m in members} == {"eager"}


# kafkajs-roundrobin is KafkaJS's RoundRobinAssigner registered under the common name (a config, not an
# assignor it ships)
SINGLE = [v for v in VECTORS if len(v["assignors"]) == 1 and v["scenario"] != "kafkajs-roundrobin"]


@pytest.mark.parametrize("vector", SINGLE, ids=vector_id)
def test_the_file_gives_each_captured_assignor_the_protocol_its_member_ran(vector: dict[str, Any]) -> None:
    family = catalog()[vector["family"]]
    (assignor,) = vector["assignors"]
    assert vector["protocol"] == assignor, "a group of one list selects that assignor"
    assert family.assignors[assignor].protocol == vector["rebalance_protocol"]

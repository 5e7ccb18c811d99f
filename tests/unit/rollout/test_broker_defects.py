"""Broker defects as data (migrations/brokers/brokers.yaml): validated, and a plan warns of a confirmed one
where the cluster runs an affected (or unknown) version and the defect bears on the plan's migration."""

from __future__ import annotations

import pytest

from kafka_coop.families import FamilyDataError, broker_defects, parse_broker_defects

ENTRY = """defects:
  - id: KAFKA-1
    versions: [{min: "4.0", below: "4.4"}]
    fixed_in: [%s]
    confirmed: true
    summary: s
    remedy: r
    plan: p
    gate: g
    source: src
"""


def test_the_bundled_file_validates_and_names_the_three_reported_defects() -> None:
    ids = {d.id for d in broker_defects().defects}
    assert {"KAFKA-20640", "KAFKA-21582", "KAFKA-21648"} <= ids


def test_a_fix_inside_the_affected_versions_is_refused() -> None:
    with pytest.raises(FamilyDataError, match="lies inside its affected versions"):
        parse_broker_defects(ENTRY % '"4.1.0"', "x.yaml")


@pytest.mark.parametrize(
    ("version", "affected"), [("4.1", True), ("4.1.1", True), ("4.4+", False), ("4.4.0", False), (None, True)]
)
def test_a_defect_applies_to_its_versions_and_to_an_unknown_one(version: str | None, affected: bool) -> None:
    defect = parse_broker_defects(ENTRY % '"4.4.0"', "x.yaml").defects[0]
    assert defect.applies_to(version) is affected


def test_a_plan_warns_only_of_confirmed_defects_of_its_migration() -> None:
    on_41 = {d.id for d in broker_defects().affecting("4.1", "classic-to-consumer")}
    assert "KAFKA-20640" in on_41
    assert broker_defects().affecting("4.5+", "classic-to-consumer") == ()
    assert {d.id for d in broker_defects().affecting("4.1", "eager-to-cooperative")} == {"KAFKA-21648"}


@pytest.mark.parametrize("line", ["4.0", "4.2", "4.3", "4.4+"])
def test_an_affected_release_line_warns_of_the_stale_upgrade_and_the_stale_describe(line: str) -> None:
    """Fixed in 4.3.3 and 4.4.1: kafka-coop reads a broker's release line, not its patch, so a 4.3 or 4.4
    broker may run an affected patch release and the plan says so."""
    ids = {d.id for d in broker_defects().affecting(line, "classic-to-consumer")}
    assert {"KAFKA-21582", "KAFKA-21648"} <= ids


@pytest.mark.parametrize("version", ["3.9", "4.3.3", "4.4.1", "4.5+"])
def test_a_release_carrying_the_fix_or_before_the_new_coordinator_is_not_warned(version: str) -> None:
    ids = {d.id for d in broker_defects().affecting(version, "classic-to-consumer")}
    assert not ids & {"KAFKA-21582", "KAFKA-21648"}


def test_kafka_21582_bears_only_on_the_upgrade_to_the_consumer_protocol() -> None:
    assert "KAFKA-21582" not in {d.id for d in broker_defects().affecting("4.1", "consumer-to-classic")}

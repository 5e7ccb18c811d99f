"""A library defect that a rollout runs into is data (families.yaml `known_defects`): a plan for a fleet
holding members of an affected version, or of an unknown one, warns about it once, naming them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_coop.families import FamilyDataError, catalog, parse_catalog
from kafka_coop.inspection import MemberSnapshot
from kafka_coop.rollout import (
    Plan,
)
from tests.unit.builders import fleet_member, fleet_of, plan

FAMILIES_YAML = Path(__file__).parents[3] / "migrations" / "families" / "families.yaml"


def _declared_kafka_python(name: str, version: str | None) -> MemberSnapshot:
    return fleet_member(
        name=name, family="kafka-python", protocol="eager", assignors=("range",), version=version
    )


def _java(name: str) -> MemberSnapshot:
    return fleet_member(name=name, family="java", protocol="eager", assignors=("range",), version="4.1.1")


def _to_cooperative(*members: MemberSnapshot) -> Plan:
    return plan(fleet_of(*members), "upgrade", "cooperative")


def _defect_warnings(plan: Plan) -> list[str]:
    return [w for w in plan.warnings if "need_rejoin()" in w]


def test_kafka_python_3_0_12_carries_its_stranded_join_defect() -> None:
    (defect,) = catalog()["kafka-python"].known_defects
    assert defect.applies_to("3.0.12") and defect.applies_to("3.0.0")
    assert not defect.applies_to("3.0.13")


def test_a_member_of_unknown_version_may_have_the_defect() -> None:
    (defect,) = catalog()["kafka-python"].known_defects
    assert defect.applies_to(None)


def test_a_plan_warns_once_for_all_affected_members_and_names_them() -> None:
    (warning,) = _defect_warnings(
        _to_cooperative(_declared_kafka_python("kp-a", "3.0.12"), _declared_kafka_python("kp-b", None))
    )
    assert warning.startswith("kafka-python (versions >=3.0,<3.0.13; here 2 members: kp-a, kp-b): ")
    assert "verify-group --expect-members" in warning


def test_a_plan_leaves_out_members_of_a_version_outside_the_defect() -> None:
    (warning,) = _defect_warnings(
        _to_cooperative(
            _declared_kafka_python("kp-old", "3.0.12"), _declared_kafka_python("kp-new", "3.0.13")
        )
    )
    assert "here 1 member: kp-old)" in warning


def test_a_plan_without_affected_members_has_no_defect_warning() -> None:
    assert _defect_warnings(_to_cooperative(_java("j-1"), _declared_kafka_python("kp-new", "3.0.13"))) == []


def test_a_defect_whose_versions_start_outside_the_family_is_a_data_error() -> None:
    text = FAMILIES_YAML.read_text()
    old = '- versions: {min: "3.0", below: "3.0.13"}'
    assert old in text
    with pytest.raises(FamilyDataError, match=re.escape("known defect versions >=2.0,<3.0.13 start outside")):
        parse_catalog(text.replace(old, '- versions: {min: "2.0", below: "3.0.13"}', 1), "families.yaml")

"""Per-family minimum versions (families.yaml `since`): a member whose library version is known and older
than a feature's first version is not offered a path that needs it, and the plan says why."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kafka_coop.families import FamilyDataError, catalog, older_than, parse_catalog
from kafka_coop.inspection import MemberSnapshot, infer_members
from kafka_coop.rollout import (
    FleetDescription,
    fleet_from_snapshot,
)
from tests.conftest import CliResult
from tests.unit.builders import KIP848_BROKER, fleet_member, fleet_of, live_member, manifest, plan

FAMILIES_YAML = Path(__file__).parents[3] / "migrations" / "families" / "families.yaml"


@pytest.mark.parametrize(
    ("version", "since", "older"),
    [
        (None, "2.12", False),  # an unknown version never refuses
        ("2.11.1", None, False),  # no minimum: every version in range has it
        ("2.11.1", "2.12", True),
        ("2.12", "2.12.0", False),
        ("2.12.0", "2.12", False),
        ("2.13.0", "2.12", False),
        ("v1.19.3", "1.20", True),
        ("2.12.0-RC1", "2.12", False),
        ("not-a-version", "2.12", False),
    ],
)
def test_older_than_compares_release_numbers_and_never_refuses_on_an_unknown(
    version: str | None, since: str | None, older: bool
) -> None:
    assert older_than(version, since) is older


@pytest.mark.parametrize(
    ("family", "version", "refused_because"),
    [
        ("librdkafka", "2.11.1", "librdkafka 2.11.1 is older than 2.12"),
        ("librdkafka", "2.12.0", ""),
        ("librdkafka", None, ""),
        ("java", "3.9.1", "java 3.9.1 is older than 4.0"),
        ("java", "4.1.1", ""),
        ("franz-go", "1.19.5", "franz-go 1.19.5 is older than 1.20"),
        ("franz-go", "1.22.2", ""),
        ("kafka-python", "3.0.12", "kafka-python does not speak the KIP-848 consumer protocol"),
    ],
)
def test_kip848_is_refused_to_a_version_older_than_its_family_minimum(
    family: str, version: str | None, refused_because: str
) -> None:
    why = catalog()[family].why_not(consumer=True, version=version)
    assert (refused_because in why) if refused_because else why == "", why


def test_every_family_that_speaks_kip848_names_its_first_version_inside_its_range() -> None:
    for family in catalog().families:
        if family.kip848.supported:
            assert family.kip848.since is not None
            assert family.versions.contains(family.kip848.since), family.family


def _edited(old: str, new: str) -> str:
    text = FAMILIES_YAML.read_text()
    assert old in text
    return text.replace(old, new, 1)


def test_a_kip848_minimum_is_required_when_a_family_speaks_it() -> None:
    text = _edited('kip848: {supported: true, since: "2.12", ', "kip848: {supported: true, ")
    with pytest.raises(FamilyDataError, match="kip848 supported needs `since`"):
        parse_catalog(text, "families.yaml")


def test_a_minimum_outside_the_family_range_is_a_data_error() -> None:
    text = _edited('kip848: {supported: true, since: "2.12", ', 'kip848: {supported: true, since: "1.9", ')
    with pytest.raises(FamilyDataError, match=r"kip848 since 1.9 must lie inside >=2.4,<3.0"):
        parse_catalog(text, "families.yaml")


def _rdk(version: str | None, count: int = 2) -> MemberSnapshot:
    return fleet_member(
        family="librdkafka",
        protocol="eager",
        assignors=("range",),
        count=count,
        version=version,
    )


@pytest.mark.parametrize(
    ("version", "status"),
    [("2.11.1", "blocked"), ("2.12.0", "blocked"), ("2.15.0", "ready"), ("2.16.1", "ready"), (None, "ready")],
)
def test_upgrade_to_kip848_routes_on_the_librdkafka_version(version: str | None, status: str) -> None:
    p = plan(fleet_of(_rdk(version)), "upgrade", "consumer")
    assert p.status == status, p.blockers
    if version == "2.12.0":  # GA, but its consumer-protocol defect is fatal (families.yaml known_defects)
        assert [b.name for b in p.blockers] == ["known-defect"], p.blockers
    elif status == "blocked":
        text = " ".join(f"{b.name}: {b.reason}" for b in p.blockers) + " ".join(p.warnings)
        assert "2 librdkafka members at 2.11.1 (fleet file)" in text, text
        assert "older than 2.12, the first version with the KIP-848 consumer protocol GA" in text, text


def test_one_old_member_among_new_ones_blocks_kip848_and_names_only_the_old_one() -> None:
    p = plan(fleet_of(_rdk("2.16.1", count=5), _rdk("2.10.0", count=1)), "upgrade", "consumer")
    text = " ".join(b.reason for b in p.blockers) + " ".join(p.warnings)
    assert p.status == "blocked"
    assert "1 librdkafka member at 2.10.0" in text and "2.16.1" not in text, text


def test_an_old_librdkafka_fleet_is_not_pointed_at_kip848_as_the_live_alternative_to_a_cutover() -> None:
    old = plan(fleet_of(_rdk("2.11.1")), "upgrade", "cooperative")
    new = plan(fleet_of(_rdk("2.12.0")), "upgrade", "cooperative")
    assert "classic-to-consumer" in [a.migration for a in new.alternatives]
    assert "classic-to-consumer" not in [a.migration for a in old.alternatives]


def test_the_downgrade_off_kip848_is_not_refused_for_the_version_a_member_runs_now() -> None:
    member = fleet_member(
        family="librdkafka", member_type="consumer", protocol="consumer", count=2, version="2.11.1"
    )
    fleet = FleetDescription(group="orders", group_type="consumer", members=(member,), broker=KIP848_BROKER)
    p = plan(fleet, "downgrade", "classic")
    assert "older than" not in " ".join(b.reason for b in p.blockers) + " ".join(p.warnings)


def test_a_manifest_declares_the_library_version_and_the_planner_routes_on_it() -> None:
    member = live_member(member_id="m-1", client_id="c", host="h", instance_id=None, assignment=())
    declared = manifest(
        "m-1",
        client_id="c",
        libraries={"kafka-coop": "0.1", "confluent-kafka": "2.11.1", "librdkafka": "2.11.1"},
        started_ms=1,
        heartbeat_ms=2,
    )
    (snap,) = infer_members("g", "classic", "range", [member], [declared])
    assert (snap.client_version.value, snap.client_version.source) == ("2.11.1", "declared")
    fleet = fleet_from_snapshot_of(snap)
    assert fleet.members[0].client_version.value == "2.11.1"
    assert plan(fleet, "upgrade", "consumer").status == "blocked"


def fleet_from_snapshot_of(snap: Any) -> FleetDescription:
    from kafka_coop.inspection import BrokerFacts, GroupSnapshot

    snapshot = GroupSnapshot(
        group="g",
        taken_ms=1,
        exists=True,
        group_type="classic",
        state="stable",
        protocol_type="consumer",
        selected_assignor="range",
        coordinator=1,
        members=(snap,),
        broker=BrokerFacts(),
    )
    return fleet_from_snapshot(snapshot)


def test_a_default_kafka_python_client_id_carries_its_version_and_an_app_set_one_does_not() -> None:
    vectors: list[dict[str, Any]] = json.loads(
        (Path(__file__).parents[1] / "vectors" / "member_metadata.json").read_text()
    )
    vector = next(v for v in vectors if v["scenario"] == "kafka-python-defaults")
    m = vector["members"][0]
    assert m["client_id"].startswith("kafka-python-")

    def one(client_id: str) -> Any:
        member = live_member(
            member_id=m["member_id"],
            client_id=client_id,
            host="/127.0.0.1",
            instance_id=None,
            assignment=(),
            subscription=bytes.fromhex(m["subscription_hex"]),
            assignment_bytes=bytes.fromhex(m["assignment_hex"]),
        )
        (snap,) = infer_members("g", "classic", "range", [member])
        return snap

    default = one(m["client_id"])
    assert default.client_family.value == "kafka-python"
    assert default.client_version.source == "inferred"
    assert default.client_version.value == m["client_id"].removeprefix("kafka-python-")
    assert one("billing-worker-7").client_version.source == "unknown"


def test_a_fleet_file_with_an_old_librdkafka_version_gets_a_blocked_kip848_plan_that_says_why(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "group: orders\n"
        'broker: {version: "4.1", migration_policy: bidirectional,\n'
        "         rebalance_protocols: [classic, consumer]}\n"
        "members:\n"
        "  - {family: java, count: 4, assignors: [range]}\n"
        '  - {family: librdkafka, version: "2.11.1", count: 2, assignors: [range]}\n'
    )
    result = invoke_cli("upgrade-plan", "--fleet", str(fleet), "--to", "consumer", "-o", "json")
    assert result.code == 1, result.stderr
    plan = result.json()
    assert plan["status"] == "blocked"
    said = json.dumps(plan)
    assert "2 librdkafka members at 2.11.1 (fleet file)" in said, said
    assert "the first version with the KIP-848 consumer protocol GA" in said
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1, result.stderr
    newer = fleet.read_text().replace('version: "2.11.1"', 'version: "2.15.0"')
    fleet.write_text(newer)
    ready = invoke_cli("upgrade-plan", "--fleet", str(fleet), "--to", "consumer", "-o", "json")
    assert ready.code == 0 and ready.json()["status"] == "ready", ready.stderr

"""The families file (migrations/families/families.yaml) as data: valid, complete, and read by plans."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import get_args

import pytest

from kafka_coop._vocab import KnownFamily
from kafka_coop.families import catalog, parse_catalog
from kafka_coop.inspection import MemberSnapshot
from kafka_coop.rollout import FleetDescription, load_migration, match_phase
from testbed.interop import INTEROP_KINDS
from tests.conftest import CliResult
from tests.unit.builders import fleet_file, fleet_member

SOURCE = re.compile(r"\w\.(py|go|js|java|c|md)\b|CHANGELOG|KIP-\d+")


def test_the_vocabulary_names_exactly_the_families_of_the_file() -> None:
    assert set(get_args(KnownFamily)) == set(catalog().names)


def test_every_family_has_a_real_member_in_the_test_bed() -> None:
    assert {f.member_kind for f in catalog().families} == {"java", *INTEROP_KINDS}


@pytest.mark.parametrize("family", catalog().families, ids=lambda f: f.family)
def test_every_fact_names_its_source(family: object) -> None:
    from kafka_coop.families import Family

    assert isinstance(family, Family)
    sources = [
        family.assignors_source,
        family.mixed_list_source,
        family.kip848.source,
        family.static_membership.source,
        family.leave_on_close.source,
        family.wire.client_id_source,
        *([family.kip848_refused.source] if family.kip848_refused else []),
    ]
    assert all(SOURCE.search(s) for s in sources), sources


def test_a_family_whose_default_assignors_it_does_not_ship_is_refused() -> None:
    text = (Path(__file__).parents[2] / "migrations" / "families" / "families.yaml").read_text()
    broken = text.replace("default_assignors: [RoundRobinAssigner]", "default_assignors: [range]")
    with pytest.raises(ValueError, match="kafkajs: default assignors"):
        parse_catalog(broken, "families.yaml")


def test_a_mixed_list_is_refused_only_by_the_families_that_refuse_it() -> None:
    mixed = ("range", "cooperative-sticky")
    refusing = {f.family for f in catalog().families if f.cooperative and f.why_not(mixed)}
    assert refusing == {"librdkafka", "kafka-python"}


def test_config_is_rendered_in_each_familys_own_terms() -> None:
    cat = catalog()
    assert cat["kafka-python"].render(["cooperative-sticky"]) == [
        "partition_assignment_strategy=[CooperativeStickyAssignor]"
    ]
    assert cat["franz-go"].render([], consumer=True) == ["kgo.ServerSideBalancer()"]
    assert (
        cat["java"]
        .render(["range", "cooperative-sticky"])[0]
        .startswith("partition.assignment.strategy=org.apache.kafka.clients.consumer.RangeAssignor,")
    )


def test_a_fleet_file_naming_an_unknown_family_is_one_sentence_listing_the_known_ones(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    fleet = fleet_file(tmp_path, "group: g\nmembers:\n  - {family: go, count: 1}\n")
    result = invoke_cli("upgrade-plan", "--fleet", fleet, "--to", "cooperative")
    assert result.code == 2
    assert "unknown client family 'go'; known: java >=3.7,<5.0, librdkafka" in result.stderr
    assert "kafkajs >=2.0,<3.0" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_a_fleet_file_naming_a_version_outside_the_known_range_is_exit_2(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    fleet = fleet_file(
        tmp_path, "group: g\nmembers:\n  - {family: kafka-python, version: '2.0.2', count: 2}\n"
    )
    result = invoke_cli("downgrade-plan", "--fleet", fleet, "--to", "eager")
    assert result.code == 2
    assert "kafka-python 2.0.2 is outside the versions we know (>=3.0,<4.0)" in result.stderr


def test_a_fleet_file_member_its_library_refuses_is_exit_2(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    fleet = fleet_file(
        tmp_path, "group: g\nmembers:\n  - {family: kafka-python, assignors: [range, cooperative-sticky]}\n"
    )
    result = invoke_cli("upgrade-plan", "--fleet", fleet, "--to", "cooperative")
    assert result.code == 2
    assert "kafka-python refuses a list mixing eager and cooperative assignors" in result.stderr


FIVE_FAMILIES = """group: orders
members:
  - {family: java, count: 2, assignors: [range]}
  - {family: librdkafka, count: 2, assignors: [range]}
  - {family: kafka-python, count: 2, assignors: [range]}
  - {family: franz-go, count: 1, assignors: [range]}
  - {family: sarama, count: 1, assignors: [range]}
"""


def test_families_that_all_accept_mixed_lists_are_offered_the_two_bounce(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    fleet = fleet_file(
        tmp_path,
        "group: g\nmembers:\n  - {family: java, assignors: [range]}\n"
        "  - {family: franz-go, assignors: [range]}\n  - {family: sarama, assignors: [range]}\n",
    )
    result = invoke_cli("upgrade-plan", "--fleet", fleet, "--to", "cooperative")
    assert result.code == 0
    assert "(eager-to-cooperative)" in result.stdout
    assert (
        "franz-go: code 1=kgo.Balancers(kgo.RangeBalancer(), kgo.CooperativeStickyBalancer())"
        in result.stdout
    )


def test_a_family_that_refuses_mixed_lists_sends_five_families_to_the_cutover_each_in_its_own_terms(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    result = invoke_cli("upgrade-plan", "--fleet", fleet_file(tmp_path, FIVE_FAMILIES), "--to", "cooperative")
    assert result.code == 0
    assert "(eager-to-cooperative-cutover)" in result.stdout
    assert "kafka-python: partition_assignment_strategy=[CooperativeStickyAssignor]" in result.stdout
    assert "sarama: Consumer.Group.Rebalance.GroupStrategies=" in result.stdout
    assert "java: group.protocol=classic, partition.assignment.strategy=" in result.stdout


def test_the_way_back_for_five_families_is_planned_too(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    fleet = fleet_file(tmp_path, FIVE_FAMILIES.replace("[range]", "[cooperative-sticky]"))
    result = invoke_cli("downgrade-plan", "--fleet", fleet, "--to", "eager")
    assert result.code == 0
    assert "kafka-python: partition_assignment_strategy=[RangePartitionAssignor]" in result.stdout


def test_a_family_without_a_cooperative_assignor_blocks_every_path_to_cooperative_by_name(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    fleet = fleet_file(
        tmp_path, "group: g\nmembers:\n  - {family: java, count: 2}\n  - {family: aiokafka, count: 2}\n"
    )
    result = invoke_cli("upgrade-plan", "--fleet", fleet, "--to", "cooperative")
    assert result.code == 1
    assert "2 aiokafka members: aiokafka ships no cooperative-sticky assignor" in result.stdout


def test_kip848_is_offered_only_when_every_family_speaks_it(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    speaking = fleet_file(tmp_path, "group: g\nmembers:\n  - {family: java}\n  - {family: franz-go}\n")
    assert invoke_cli("upgrade-plan", "--fleet", speaking, "--to", "consumer").code == 0
    (tmp_path / "b").mkdir()
    mute = fleet_file(tmp_path / "b", "group: g\nmembers:\n  - {family: java}\n  - {family: sarama}\n")
    result = invoke_cli("upgrade-plan", "--fleet", mute, "--to", "consumer")
    assert result.code == 1
    assert "sarama does not speak the KIP-848 consumer protocol" in result.stdout


def _fleet_member(family: str, assignors: tuple[str, ...]) -> MemberSnapshot:
    return fleet_member(name=f"{family}-0", family=family, protocol="eager", assignors=assignors)  # type: ignore[arg-type]


def test_verify_group_holds_each_family_to_the_phase_config_it_can_run() -> None:
    spec = load_migration("eager-to-cooperative")
    fleet = FleetDescription(
        group="g",
        selected_assignor="range",
        members=(
            _fleet_member("franz-go", ("range", "cooperative-sticky")),
            _fleet_member("sarama", ("range",)),
            _fleet_member("kafkajs", ("RoundRobinAssigner",)),
        ),
    )
    checks = {c.name: c for c in match_phase(fleet, spec, 1).checks}
    config = checks["member-config"]
    assert config.status == "fail"
    assert set(config.members) == {"sarama-0", "kafkajs-0"}, "franz-go runs phase 1's list"
    assert "kafkajs ships no range assignor" in config.reason
    assert "sarama-0: assignors ['range'], expected ['range', 'cooperative-sticky']" in config.reason


def _depth(text: str) -> int:
    depth = deepest = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        deepest = max(deepest, depth)
    return deepest


def test_a_reason_citing_its_source_never_nests_parentheses() -> None:
    """`GA (CHANGELOG.md 2.12.0: ... (Preview from 2.4 ...))` read badly: a source with parentheses of
    its own is cited after a semicolon."""
    from kafka_coop.families import catalog

    reasons = []
    for family in catalog().families:
        reasons += [
            family.why_not(consumer=True, version="0.1"),
            family.why_not(static=True, version="0.1"),
            family.why_not(tuple(family.assignors), version="0.1"),
            family.why_not(tuple(family.assignors)),
        ]
    reasons = [r for r in reasons if r]
    assert reasons
    assert all(_depth(r) <= 1 for r in reasons), [r for r in reasons if _depth(r) > 1]

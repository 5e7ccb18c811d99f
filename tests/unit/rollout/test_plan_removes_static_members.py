"""Cutover plans remove stopped static members at once instead of waiting out session.timeout.ms."""

from __future__ import annotations

import pytest
import yaml

from kafka_coop.rollout import (
    FleetDescription,
    GateCommand,
    Plan,
    all_migrations,
    make_plan,
)
from kafka_coop.rollout._spec import MigrationSpec
from tests.unit.builders import MIGRATIONS, declared_broker, fleet_member, fleet_of, plan


def _three_librdkafka_members(static: bool, protocol: str, selected: str, direction: str, to: str) -> Plan:
    """The plan for three librdkafka members of one protocol, static or not."""
    member = fleet_member(family="librdkafka", protocol=protocol, count=3, static=static)  # type: ignore[arg-type]
    return plan(fleet_of(member, selected=selected, broker=declared_broker("4.1")), direction, to)  # type: ignore[arg-type]


def test_every_stop_all_phase_of_the_shipped_cutovers_removes_static_members() -> None:
    for spec in all_migrations():
        for phase in spec.phases:
            if phase.action in ("stop-all", "stop-all-start-all"):
                assert phase.remove_static_members, (spec.name, phase.n)


def test_the_cutover_plan_runs_remove_members_right_after_the_stop() -> None:
    p = _three_librdkafka_members(True, "cooperative", "cooperative-sticky", "downgrade", "eager")
    assert p.migration == "cooperative-to-eager-cutover"
    stop, start = p.phases
    assert stop.then == ("kafka-coop remove-members orders --bootstrap-server b:9092 --all-static",)
    assert start.then == ()
    assert "the plan removes them as soon as they have stopped" in stop.pause_note


def test_a_live_fleet_that_declares_itself_starts_the_removal_with_the_stop() -> None:
    fleet = FleetDescription(
        group="orders",
        source="live",
        group_type="classic",
        selected_assignor="cooperative-sticky",
        members=(
            fleet_member(
                family="librdkafka", protocol="cooperative", assignors=("cooperative-sticky",), static=True
            ),
        ),
        broker=declared_broker("4.1"),
    )
    p = make_plan(fleet, "downgrade", "eager", MIGRATIONS, gate=GateCommand(bootstrap="b:9092"))
    stop = p.phases[0]
    assert stop.then == ()
    assert stop.alongside == (
        "kafka-coop remove-members orders --bootstrap-server b:9092 --all-static --wait-stopped 300",
    )


def test_a_dynamic_fleet_plan_says_nothing_about_static_members_in_its_pause() -> None:
    p = _three_librdkafka_members(False, "eager", "range", "upgrade", "cooperative")
    assert "Static members" not in p.phases[0].pause_note


def test_remove_static_members_on_a_phase_that_stops_nobody_is_refused_at_load() -> None:
    spec = yaml.safe_load(
        """
name: bad
title: t
direction: upgrade
from: eager
to: cooperative
families: [java]
summary: s
start: {group_type: classic}
start_config: {java: {assignors: [range]}}
phases:
  - n: 1
    title: bounce
    action: rolling-bounce
    config: {java: {assignors: [cooperative-sticky]}}
    expect: {}
    pause: per-member
    rollback: r
    remove_static_members: true
"""
    )
    with pytest.raises(ValueError, match="removes static members but does not stop them"):
        MigrationSpec.model_validate(spec)


def test_a_fleet_with_no_static_members_is_not_told_to_remove_them() -> None:
    p = _three_librdkafka_members(False, "eager", "range", "upgrade", "cooperative")
    assert p.migration == "eager-to-cooperative-cutover"
    assert all(not phase.then and not phase.alongside for phase in p.phases)
    assert all("remove-members" not in line for phase in p.phases for line in (*phase.then, *phase.alongside))


def _live_fleet(family: str) -> FleetDescription:
    """A live eager fleet whose members publish no manifest (their lists are not visible)."""
    return FleetDescription(
        group="orders",
        source="live",
        group_type="classic",
        selected_assignor="range",
        members=(fleet_member(name="m0", family=family, protocol="eager", static=True),),  # type: ignore[arg-type]
        broker=declared_broker("4.1"),
    )


def test_a_plan_whose_gates_need_manifests_says_to_create_the_manifest_topic() -> None:
    """Java's first bounce runs [cooperative-sticky, range]: only a manifest shows that list."""
    p = make_plan(
        _live_fleet("java"), "upgrade", "cooperative", MIGRATIONS, gate=GateCommand(bootstrap="b:9092")
    )
    assert p.migration == "eager-to-cooperative"
    (said,) = [w for w in p.warnings if "manifest-topic" in w]
    assert "the --phase 0 and --phase 1 gates" in said and "kafka-coop manifest-topic" in said


def test_a_plan_whose_gates_the_broker_settles_does_not_ask_for_manifests() -> None:
    p = make_plan(
        _live_fleet("librdkafka"), "upgrade", "cooperative", MIGRATIONS, gate=GateCommand(bootstrap="b:9092")
    )
    assert p.migration == "eager-to-cooperative-cutover"
    assert not [w for w in p.warnings if "manifest" in w], p.warnings

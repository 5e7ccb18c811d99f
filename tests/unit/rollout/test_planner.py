"""The planner's choices, on fleets described the way inspection or a fleet file describes them."""

from __future__ import annotations

import pytest

from kafka_coop.errors import InvalidInput
from kafka_coop.inspection import MemberSnapshot
from kafka_coop.rollout import (
    FleetDescription,
    detect_state,
    make_plan,
    parse_fleet,
    parse_migration,
)
from tests.unit.builders import MIGRATIONS, declared_broker, fleet_member, fleet_of, plan


def java(
    assignors: tuple[str, ...] | None = ("range",), protocol: str = "eager", count: int = 3
) -> MemberSnapshot:
    return fleet_member(family="java", protocol=protocol, assignors=assignors, count=count)  # type: ignore[arg-type]


def rdk(protocol: str = "eager", count: int = 3, **kw: object) -> MemberSnapshot:
    member_type = "consumer" if protocol == "consumer" else "classic"
    return fleet_member(family="librdkafka", protocol=protocol, member_type=member_type, count=count, **kw)  # type: ignore[arg-type]


def test_a_java_eager_fleet_gets_the_two_bounce_path_with_a_gate_per_phase() -> None:
    p = plan(fleet_of(java()), "upgrade", "cooperative")
    assert (p.status, p.migration, p.position) == ("ready", "eager-to-cooperative", 0)
    assert [ph.status for ph in p.phases] == ["todo", "todo"]
    assert "--migration eager-to-cooperative --phase 0 --expect-members 3" in p.phases[0].gate
    assert "--phase 1" in p.phases[1].gate
    assert "--phase 2" in (p.final_gate or "")
    assert "CooperativeStickyAssignor" in p.phases[0].config["java"].set["partition.assignment.strategy"]


def test_a_java_fleet_on_the_default_range_cooperative_list_is_already_past_phase_one() -> None:
    p = plan(fleet_of(java(("range", "cooperative-sticky"))), "upgrade", "cooperative")
    assert (p.status, p.position) == ("in-progress", 1)
    assert [ph.status for ph in p.phases] == ["done", "todo"]


def test_undeclared_java_lists_are_assumed_at_the_start_and_the_plan_says_so() -> None:
    p = plan(fleet_of(java(None)), "upgrade", "cooperative")
    assert p.position == 0
    assert any("assumed the group is at phase 0" in w for w in p.warnings)


def test_librdkafka_fleet_is_told_no_two_bounce_exists_and_gets_cutover_and_kip848_alternative() -> None:
    p = plan(fleet_of(rdk()), "upgrade", "cooperative")
    assert p.migration == "eager-to-cooperative-cutover"
    assert [ph.action for ph in p.phases] == ["stop-all", "start-all"]
    assert all(ph.pause == "full-stop" for ph in p.phases)
    assert any("eager-to-cooperative does not fit" in w and "librdkafka" in w for w in p.warnings)
    assert [a.migration for a in p.alternatives] == ["classic-to-consumer"]


def test_no_plan_ever_gives_a_librdkafka_member_a_mixed_assignor_list() -> None:
    fleets = [
        fleet_of(rdk()),
        fleet_of(rdk(), java()),
        fleet_of(rdk("cooperative"), selected="cooperative-sticky"),
    ]
    for fleet in fleets:
        for direction, to in [("upgrade", "cooperative"), ("upgrade", "consumer"), ("downgrade", "eager")]:
            for phase in plan(fleet, direction, to).phases:  # type: ignore[arg-type]
                config = phase.config.get("librdkafka")
                if config is not None:
                    kinds = {a == "cooperative-sticky" for a in config.member.assignors}
                    assert len(kinds) <= 1, (direction, to, phase)


def test_a_migration_file_that_mixes_lists_for_librdkafka_is_refused_at_load() -> None:
    text = """
name: bad
title: bad
direction: upgrade
from: eager
to: cooperative
families: [librdkafka]
summary: x
start: {rebalance_protocol: eager}
start_config: {librdkafka: {assignors: [range]}}
phases:
  - {n: 1, title: t, action: rolling-bounce, config: {librdkafka: {assignors: [range, cooperative-sticky]}},
     expect: {}, pause: per-member, rollback: r}
"""
    with pytest.raises(InvalidInput, match="librdkafka refuses lists that mix"):
        parse_migration(text, "bad.yaml")


def test_a_mixed_java_and_librdkafka_fleet_gets_a_cutover_with_config_for_both_families() -> None:
    p = plan(fleet_of(java(count=4), rdk(count=2)), "upgrade", "cooperative")
    assert p.migration == "eager-to-cooperative-cutover"
    assert set(p.phases[1].config) == {"java", "librdkafka"}
    assert p.phases[0].gate.endswith("--expect-members 6 --wait --timeout 300")


def test_kip848_is_blocked_with_its_reasons_when_the_broker_policy_refuses_it() -> None:
    broker = declared_broker("4.1", migration_policy="disabled", rebalance_protocols=("classic", "consumer"))
    p = plan(fleet_of(rdk(), broker=broker), "upgrade", "consumer")
    assert p.status == "blocked"
    assert [b.name for b in p.blockers] == ["migration-policy"]
    assert "disabled" in p.blockers[0].reason


def test_kip848_is_blocked_on_an_old_broker() -> None:
    p = plan(fleet_of(rdk(), broker=declared_broker("3.7")), "upgrade", "consumer")
    assert "broker-version" in [b.name for b in p.blockers]


def test_assignment_user_data_blocks_kip848_and_the_hint_routes_through_range() -> None:
    fleet = fleet_of(rdk("cooperative", assignment_user_data=True), selected="cooperative-sticky")
    p = plan(fleet, "upgrade", "consumer")
    assert [b.name for b in p.blockers] == ["no-custom-user-data"]
    assert "--to eager" in p.blockers[0].hint


def test_a_group_split_between_classic_and_consumer_members_is_mid_phase_one() -> None:
    fleet = fleet_of(rdk("consumer", count=2), rdk("eager", count=1))
    assert detect_state(fleet) == "mixed"
    p = plan(fleet, "upgrade", "consumer")
    assert p.phases[0].status == "in-progress"
    assert p.phases[0].progress == "2 of 3 members already on this phase's config"
    assert "--migration" not in p.phases[0].gate, "no phase holds mid-bounce: the gate checks health only"


def test_a_group_already_on_the_target_needs_nothing() -> None:
    p = plan(fleet_of(java(("cooperative-sticky",), "cooperative")), "upgrade", "cooperative")
    assert (p.status, p.phases, p.blockers) == ("done", (), ())


def test_a_downgrade_to_classic_of_an_eager_group_says_classic_not_eager() -> None:
    """Issue 27: `--to classic` said "every member already runs eager", which reads as a wrong target."""
    p = plan(fleet_of(rdk("eager")), "downgrade", "classic")
    assert p.status == "done"
    assert p.warnings == (
        "every member already runs the classic protocol (eager rebalancing): nothing to do",
    )


def test_downgrade_of_a_java_cooperative_fleet_takes_the_reverse_two_bounce() -> None:
    fleet = fleet_of(java(("cooperative-sticky",), "cooperative"), selected="cooperative-sticky")
    p = plan(fleet, "downgrade", "eager")
    assert p.migration == "cooperative-to-eager"
    assert p.phases[0].config["java"].member.assignors == ("cooperative-sticky", "range")


def test_downgrade_of_a_consumer_group_goes_back_to_classic_cooperative() -> None:
    p = plan(fleet_of(rdk("consumer")), "downgrade", "classic")
    assert p.migration == "consumer-to-classic"
    assert p.phases[0].config["librdkafka"].set["partition.assignment.strategy"] == "cooperative-sticky"


def test_eager_from_the_consumer_protocol_is_two_migrations_away() -> None:
    p = plan(fleet_of(rdk("consumer")), "downgrade", "eager")
    assert p.status == "blocked"
    assert "--to classic" in p.blockers[0].hint


def test_an_empty_group_has_no_fleet_to_plan_for() -> None:
    p = plan(FleetDescription(group="orders", members=()), "upgrade", "cooperative")
    assert p.blockers[0].name == "no-members"


def test_a_forced_migration_that_does_not_fit_is_a_blocker_not_a_silent_switch() -> None:
    p = plan(fleet_of(rdk()), "upgrade", "cooperative", forced=True)
    assert p.status == "ready"  # forced with every path offered still chooses among them
    forced = make_plan(
        fleet_of(rdk()),
        "upgrade",
        "cooperative",
        [(n, s) for n, s in MIGRATIONS if n == "eager-to-cooperative"],
        forced=True,
    )
    assert forced.status == "blocked"
    assert "librdkafka" in forced.blockers[0].reason


def test_the_plan_json_names_its_start_state_as_from() -> None:
    data = plan(fleet_of(java()), "upgrade", "cooperative").model_dump(mode="json", by_alias=True)
    assert data["from"] == "eager"
    assert data["migration"] == "eager-to-cooperative"


def test_a_fleet_file_with_a_mixed_librdkafka_list_is_refused_with_the_field() -> None:
    text = "group: g\nmembers:\n  - {family: librdkafka, assignors: [range, cooperative-sticky]}\n"
    with pytest.raises(InvalidInput, match=r"fleet.yaml: field members\.0.*librdkafka refuses"):
        parse_fleet(text, "fleet.yaml")


def test_a_fleet_file_votes_the_selected_assignor_like_the_coordinator() -> None:
    text = (
        "group: g\nmembers:\n"
        "  - {family: java, count: 2, assignors: [range, cooperative-sticky]}\n"
        "  - {family: java, assignors: [cooperative-sticky]}\n"
    )
    fleet = parse_fleet(text, "fleet.yaml")
    assert fleet.selected_assignor == "cooperative-sticky"
    assert fleet.size == 3


def test_stopping_static_members_warns_that_the_group_empties_only_after_their_session_timeout() -> None:
    fleet = fleet_of(rdk("cooperative", static=True), selected="cooperative-sticky")
    p = plan(fleet, "downgrade", "eager")
    assert p.phases[0].action == "stop-all"
    assert "session.timeout.ms" in p.phases[0].pause_note


def test_the_requirements_are_judged_on_the_assignor_the_group_selected() -> None:
    """The userData check names the assignor that writes it: the fleet's selected one reaches it."""
    from kafka_coop.rollout._requirements import requirement_facts

    assert (
        requirement_facts(fleet_of(java(), selected="cooperative-sticky")).selected_assignor
        == "cooperative-sticky"
    )


def test_a_kafka_coop_cooperative_fleet_with_user_data_gets_the_coordinated_cutover_to_consumer() -> None:
    fleet = fleet_of(
        rdk("cooperative", assignment_user_data=True, kafka_coop=True, static=True),
        selected="cooperative-sticky",
    )
    p = plan(fleet, "upgrade", "consumer")
    assert (p.status, p.migration) == ("ready", "cooperative-to-consumer-cutover")
    assert [ph.action for ph in p.phases] == ["stop-all", "start-all"]
    assert "the whole group pauses" in p.summary.lower() and "no restart" in p.summary


def test_the_coordinated_cutover_to_consumer_is_not_offered_when_a_member_is_not_kafka_coop() -> None:
    fleet = fleet_of(
        rdk("cooperative", assignment_user_data=True, kafka_coop=True),
        rdk("cooperative", count=1, assignment_user_data=True),
        selected="cooperative-sticky",
    )
    p = plan(fleet, "upgrade", "consumer")
    assert p.migration == "classic-to-consumer" and p.status == "blocked"
    assert [b.name for b in p.blockers] == ["no-custom-user-data"]


def test_an_online_path_the_broker_accepts_stays_first_for_a_kafka_coop_fleet() -> None:
    fleet = fleet_of(rdk("eager", kafka_coop=True))
    assert plan(fleet, "upgrade", "consumer").migration == "classic-to-consumer"


def test_a_fleet_files_broker_section_fills_the_broker_record_inspection_fills_declared() -> None:
    text = (
        "group: g\nbroker: {version: '4.1', version_source: ops, group_version: 1, migration_policy: upgrade,"
        " group_max_size: 9, consumer_heartbeat_ms: 3000, group_session_ms: 45000}\n"
        "members:\n  - {family: java, assignors: [range]}\n"
    )
    broker = parse_fleet(text, "fleet.yaml").broker
    assert (broker.kafka_version.value, broker.kafka_version.source, broker.kafka_version.signal) == (
        "4.1",
        "declared",
        "ops",
    )
    assert (broker.group_version.value, broker.group_version.source) == ("1", "declared")
    assert (broker.migration_policy, broker.group_max_size) == ("upgrade", 9)
    assert (broker.consumer_heartbeat_ms, broker.group_session_ms) == (3000, 45000)


def test_a_fleet_file_entry_fills_the_record_inspection_fills_with_what_it_says_declared() -> None:
    """One member record from inspection to the plan: the file's words become MemberSnapshot's facts,
    `declared` by the fleet file (the protocol inferred from its assignor list), as a live one's are
    marked broker / inferred / declared by a manifest."""
    fleet = parse_fleet(
        "group: g\nmembers:\n"
        "  - {name: svc, family: librdkafka, version: '2.16.0', count: 3, assignors: [cooperative-sticky],\n"
        "     static: true, pattern: 'orders[.].*', topics: [orders.a], restart_s: 30}\n"
        "  - {family: java, count: 2}\n",
        "fleet.yaml",
    )
    named, unnamed = fleet.members
    assert (named.client_family.value, named.client_family.source, named.client_family.signal) == (
        "librdkafka",
        "declared",
        "fleet file",
    )
    assert (named.member_type.value, named.member_type.source) == ("classic", "declared")
    assert (named.client_version.value, named.client_version.source) == ("2.16.0", "declared")
    assert (named.assignors.value, named.assignors.source) == (("cooperative-sticky",), "declared")
    assert (named.rebalance_protocol.value, named.rebalance_protocol.source) == ("cooperative", "inferred")
    assert (named.name, named.instance_id, named.count) == ("svc", "svc", 3)
    assert (named.subscribed_regex, named.topics, fleet.restart_s) == ("orders[.].*", ("orders.a",), 30)
    assert (unnamed.name, unnamed.instance_id, unnamed.assignors.source) == ("2 x java", None, "unknown")
    assert unnamed.rebalance_protocol.value == "unknown" and unnamed.client_version.value is None

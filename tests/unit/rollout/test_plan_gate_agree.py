"""A plan and its own gates cannot disagree: upgrade-plan's phase N is verify-group --phase N.

Hypothesis generates live groups (what inspection can see of them, with and without manifests) and
checks, for every migration and every phase, that the planner's verdict on "is the group in the state
phase N leaves it in" is the gate's verdict on the same snapshot: yes = pass, maybe = warn, no = fail.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_coop.inspection import BrokerFacts, Fact, GroupSnapshot, MemberSnapshot
from kafka_coop.rollout import all_migrations, evaluate, fleet_from_snapshot, locate, phase_match
from tests.unit.builders import manifest, member_snapshot

MIGRATIONS = all_migrations()
PHASE_CHECKS = frozenset(
    {"group-has-members", "group-empty", "group-type", "selected-assignor", "member-type", "member-protocol"}
    | {"member-config"}
)
VERDICT = {"pass": "yes", "warn": "maybe", "fail": "no"}
RANK = {"pass": 0, "warn": 1, "fail": 2}
ASSIGNOR_LISTS = [
    ("range",),
    ("cooperative-sticky",),
    ("range", "cooperative-sticky"),
    ("cooperative-sticky", "range"),
    ("roundrobin",),
]


@st.composite
def members(draw: st.DrawFn, index: int, group_type: str) -> MemberSnapshot:
    declared = draw(st.booleans())
    instance_id = draw(st.sampled_from([None, f"m{index}", "shared"]))
    user_data = draw(st.sampled_from([None, False, True]))
    if declared:
        member_type = draw(st.sampled_from(["classic", "consumer"]))
        assignors = () if member_type == "consumer" else draw(st.sampled_from(ASSIGNOR_LISTS))
        if member_type == "consumer":
            protocol = "consumer"
        else:
            protocol = "cooperative" if set(assignors) == {"cooperative-sticky"} else "eager"
        family = draw(st.sampled_from(["librdkafka", "java"]))
        declared = manifest(
            f"id{index}",
            instance_id=instance_id,
            client_id=f"c{index}",
            libraries={"librdkafka": "2.12"} if family == "librdkafka" else {"kafka-clients": "4.1"},
            group_protocol=member_type,
            assignors=assignors,
            rebalance_protocol=protocol,
        )
        return member_snapshot(
            f"c{index}",
            member_id=f"id{index}",
            instance_id=instance_id,
            host="h",
            member_type=member_type,  # type: ignore[arg-type]
            family=family,  # type: ignore[arg-type]
            protocol=protocol,  # type: ignore[arg-type]
            assignors=assignors,
            source="declared",
            assignment_user_data=user_data,
            manifest=declared,
        )
    member_type = "classic" if group_type == "classic" else draw(st.sampled_from(["classic", "consumer"]))
    seen_type = draw(st.sampled_from([member_type, "unknown"]))
    family = draw(st.sampled_from(["librdkafka", "java", "unknown"]))
    protocol = (
        "consumer" if seen_type == "consumer" else draw(st.sampled_from(["eager", "cooperative", "unknown"]))
    )
    selected = draw(st.sampled_from([(), ("range",), ("cooperative-sticky",)]))

    return member_snapshot(
        f"c{index}",
        member_id=f"id{index}",
        instance_id=instance_id,
        host="h",
        member_type=seen_type,  # type: ignore[arg-type]
        family=family,  # type: ignore[arg-type]
        protocol=protocol,  # type: ignore[arg-type]
        assignors=selected,
        assignment_user_data=user_data,
    )


@st.composite
def snapshots(draw: st.DrawFn) -> GroupSnapshot:
    group_type = draw(st.sampled_from(["classic", "consumer", "unknown"]))
    size = draw(st.integers(min_value=0, max_value=4))
    group_members = tuple(draw(members(i, group_type)) for i in range(size))
    assignor = draw(st.sampled_from(["", "range", "cooperative-sticky", "roundrobin", "uniform"]))
    return GroupSnapshot(
        group="g",
        taken_ms=0,
        exists=bool(group_members),
        group_type=group_type,  # type: ignore[arg-type]
        state="stable" if group_members else "empty",
        protocol_type="consumer",
        selected_assignor=assignor,
        coordinator=1,
        members=group_members,
        broker=BrokerFacts(
            kafka_version=Fact(value="4.1.1", source="inferred"),
            rebalance_protocols=("classic", "consumer"),
            migration_policy="bidirectional",
        ),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots())
def test_the_planner_and_the_gate_give_every_phase_the_same_verdict(snap: GroupSnapshot) -> None:
    fleet = fleet_from_snapshot(snap)
    for spec in MIGRATIONS:
        for phase in range(len(spec.phases) + 1):
            planned, _ = phase_match(fleet, spec, phase)
            report = evaluate(snap, spec=spec, phase=phase)
            statuses = [c.status for c in report.checks if c.name in PHASE_CHECKS]
            gated = VERDICT[max(statuses, key=RANK.__getitem__, default="pass")]
            assert planned == gated, (spec.name, phase, [c for c in report.checks if c.name in PHASE_CHECKS])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots())
def test_the_phase_a_plan_proves_done_is_a_phase_whose_gate_passes(snap: GroupSnapshot) -> None:
    fleet = fleet_from_snapshot(snap)
    for spec in MIGRATIONS:
        position = locate(fleet, spec)
        if position is None or position.assumed or position.in_progress is not None:
            continue
        report = evaluate(snap, spec=spec, phase=position.done)
        failing = [c for c in report.checks if c.name in PHASE_CHECKS and c.status != "pass"]
        assert not failing, (spec.name, position.done, failing)

"""verify-group's gate on GroupSnapshot values: every check, its verdict, and the exit code it leads to.

A pipeline relies on the exit code (0 pass, 1 fail; --strict makes a warning fail), so each row names
the snapshot, the target, the check it is about, that check's status, and the command's exit code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kafka_coop.errors import GateFailed
from kafka_coop.inspection import BrokerFacts, Fact, GroupSnapshot, MemberSnapshot, PartitionLag
from kafka_coop.rollout import GateReport, evaluate, load_migration
from tests.unit.builders import manifest, member_snapshot

E2C = load_migration("eager-to-cooperative")
C2K = load_migration("classic-to-consumer")
CUTOVER = load_migration("eager-to-cooperative-cutover")
KIP848 = BrokerFacts(
    kafka_version=Fact(value="4.1.1", source="inferred"),
    rebalance_protocols=("classic", "consumer"),
    migration_policy="bidirectional",
)


def member(
    name: str,
    *,
    static: bool = True,
    member_type: str = "classic",
    family: str = "java",
    protocol: str = "eager",
    assignors: tuple[str, ...] | None = None,
    user_data: bool | None = False,
    instance_id: str | None = None,
) -> MemberSnapshot:
    """A member as inspection sees it; `assignors` given means it publishes a manifest declaring them."""
    declared = None
    if assignors is not None:
        declared = manifest(
            f"{name}-id",
            group="orders",
            instance_id=name if static else None,
            client_id=name,
            libraries={"kafka-clients": "4.1"} if family == "java" else {"librdkafka": "2.12"},
            group_protocol=member_type,
            assignors=assignors,
            rebalance_protocol=protocol,
        )
    return member_snapshot(
        name,
        member_id=f"{name}-id",
        instance_id=instance_id or (name if static else None),
        host="h",
        family=family,  # type: ignore[arg-type]
        protocol=protocol,  # type: ignore[arg-type]
        member_type=member_type,  # type: ignore[arg-type]
        assignors=assignors or (),
        source="declared" if declared else "inferred",
        assignment_user_data=user_data,
        manifest=declared,
    )


def snapshot(*members: MemberSnapshot, **overrides: Any) -> GroupSnapshot:
    values: dict[str, Any] = {
        "group": "orders",
        "taken_ms": 10_000,
        "exists": bool(members),
        "group_type": "classic",
        "state": "stable" if members else "empty",
        "protocol_type": "consumer",
        "selected_assignor": "range",
        "coordinator": 1,
        "members": members,
        "broker": KIP848,
    }
    return GroupSnapshot(**(values | overrides))


def lagging(lag: int, taken_ms: int = 10_000, **overrides: Any) -> GroupSnapshot:
    return snapshot(
        member("a"),
        lag=(PartitionLag(topic="t", partition=0, committed=0, end_offset=lag, lag=lag),),
        taken_ms=taken_ms,
        **overrides,
    )


EAGER = (member("a", assignors=("range",)), member("b", assignors=("range",)))
PHASE1 = tuple(member(n, assignors=("range", "cooperative-sticky")) for n in "ab")
COOP = (
    member("a", protocol="cooperative", assignors=("cooperative-sticky",)),
    member("b", protocol="cooperative", assignors=("cooperative-sticky",)),
)
CONSUMER = (
    member("a", member_type="consumer", protocol="consumer", family="librdkafka", user_data=None),
    member("b", member_type="consumer", protocol="consumer", family="librdkafka", user_data=None),
)


@dataclass(frozen=True)
class Row:
    id: str
    snap: GroupSnapshot
    check: str
    status: str
    exit_code: int
    target: dict[str, Any] = field(default_factory=dict)
    members: tuple[str, ...] | None = None
    strict_exit_code: int | None = None  # the exit code with --strict, when it differs


ROWS = [
    # --- general checks ---
    Row("no group", snapshot(), "group-exists", "fail", 1),
    Row("rebalancing", snapshot(*EAGER, state="preparing_rebalance"), "no-rebalance-in-progress", "fail", 1),
    Row("settled", snapshot(*EAGER), "no-rebalance-in-progress", "pass", 0),
    Row("not stable", snapshot(*EAGER, state="completing_rebalance"), "group-stable", "fail", 1),
    Row("stable", snapshot(*EAGER), "group-stable", "pass", 0),
    Row(
        "one id twice",
        snapshot(member("a", instance_id="x"), member("b", instance_id="x")),
        "unique-instance-ids",
        "fail",
        1,
        members=("x",),
    ),
    Row("ids unique", snapshot(*EAGER), "unique-instance-ids", "pass", 0),
    Row(
        "a dynamic member",
        snapshot(member("a"), member("b", static=False)),
        "static-membership",
        "warn",
        0,
        members=("b",),
        strict_exit_code=1,
    ),
    Row("all static", snapshot(*EAGER), "static-membership", "pass", 0),
    Row(
        "members differ",
        snapshot(EAGER[0], member("c", protocol="cooperative", assignors=("cooperative-sticky",))),
        "members-agree",
        "warn",
        0,
        strict_exit_code=1,
    ),
    Row("members agree", snapshot(*EAGER), "members-agree", "pass", 0),
    Row("no offsets", snapshot(*EAGER), "lag-not-growing", "pass", 0),
    Row("one lag sample", lagging(50), "lag-not-growing", "pass", 0),
    Row(
        "lag growing",
        lagging(5_000),
        "lag-not-growing",
        "warn",
        0,
        target={"previous": lagging(100, taken_ms=5_000)},
        strict_exit_code=1,
    ),
    Row(
        "lag steady",
        lagging(150),
        "lag-not-growing",
        "pass",
        0,
        target={"previous": lagging(100, taken_ms=5_000)},
    ),
    Row("count wrong", snapshot(*EAGER), "member-count", "fail", 1, target={"expect_members": 3}),
    Row("count right", snapshot(*EAGER), "member-count", "pass", 0, target={"expect_members": 2}),
    # --- phase checks (the engine the planner uses) ---
    Row("empty expected", snapshot(), "group-empty", "pass", 0, target={"spec": CUTOVER, "phase": 1}),
    Row(
        "not yet empty",
        snapshot(*EAGER),
        "group-empty",
        "fail",
        1,
        target={"spec": CUTOVER, "phase": 1},
        members=("a", "b"),
    ),
    Row(
        "phase on an empty group",
        snapshot(exists=True),
        "group-has-members",
        "fail",
        1,
        target={"spec": E2C, "phase": 0},
    ),
    Row("type right", snapshot(*EAGER), "group-type", "pass", 0, target={"spec": E2C, "phase": 0}),
    Row(
        "type wrong",
        snapshot(*CONSUMER, group_type="consumer"),
        "group-type",
        "fail",
        1,
        target={"spec": E2C, "phase": 0},
    ),
    Row(
        "type unknown",
        snapshot(*EAGER, group_type="unknown"),
        "group-type",
        "warn",
        0,
        target={"spec": E2C, "phase": 0},
        strict_exit_code=1,
    ),
    Row("assignor right", snapshot(*EAGER), "selected-assignor", "pass", 0, target={"spec": E2C, "phase": 0}),
    Row(
        "assignor wrong",
        snapshot(*COOP, selected_assignor="cooperative-sticky"),
        "selected-assignor",
        "fail",
        1,
        target={"spec": E2C, "phase": 0},
    ),
    Row(
        "assignor not visible",
        snapshot(*EAGER, selected_assignor=""),
        "selected-assignor",
        "warn",
        0,
        target={"spec": E2C, "phase": 0},
        strict_exit_code=1,
    ),
    Row("type of members", snapshot(*EAGER), "member-type", "pass", 0, target={"spec": C2K, "phase": 0}),
    Row(
        "a consumer member at the start",
        snapshot(EAGER[0], CONSUMER[0]),
        "member-type",
        "fail",
        1,
        target={"spec": C2K, "phase": 0},
        members=("a",),
    ),
    Row(
        "member type not visible",
        snapshot(*CONSUMER, member("c", member_type="unknown", protocol="unknown"), group_type="consumer"),
        "member-type",
        "warn",
        0,
        target={"spec": C2K, "phase": 1},
        members=("c",),
        strict_exit_code=1,
    ),
    Row("protocol right", snapshot(*EAGER), "member-protocol", "pass", 0, target={"spec": E2C, "phase": 0}),
    Row(
        "protocol wrong",
        snapshot(*EAGER),
        "member-protocol",
        "fail",
        1,
        target={"spec": E2C, "phase": 2},
        members=("a", "b"),
    ),
    Row(
        "protocol not visible",
        snapshot(member("a", protocol="unknown")),
        "member-protocol",
        "warn",
        0,
        target={"spec": E2C, "phase": 0},
        members=("a",),
        strict_exit_code=1,
    ),
    Row("config declared", snapshot(*PHASE1), "member-config", "pass", 0, target={"spec": E2C, "phase": 1}),
    Row(
        "config of the last phase",
        snapshot(*EAGER),
        "member-config",
        "fail",
        1,
        target={"spec": E2C, "phase": 1},
        members=("a", "b"),
    ),
    Row(
        "list not declared",
        snapshot(member("a"), member("b")),
        "member-config",
        "warn",
        0,
        target={"spec": E2C, "phase": 1},
        members=("a", "b"),
        strict_exit_code=1,
    ),
    Row(
        "dynamic member on a static phase",
        snapshot(
            *(
                member(n, static=False, protocol="cooperative", assignors=("cooperative-sticky",))
                for n in "ab"
            ),
            selected_assignor="cooperative-sticky",
        ),
        "member-config",
        "fail",
        1,
        target={"spec": CUTOVER, "phase": 2},
        members=("a", "b"),
    ),
    Row(
        "consumer members need no manifest",
        snapshot(*CONSUMER, group_type="consumer", selected_assignor="uniform"),
        "member-config",
        "pass",
        0,
        target={"spec": C2K, "phase": 1},
    ),
    # --- prerequisites (phase 0) ---
    Row("broker new enough", snapshot(*EAGER), "broker-version", "pass", 0, target={"spec": C2K, "phase": 0}),
    Row(
        "broker too old",
        snapshot(
            *EAGER, broker=KIP848.model_copy(update={"kafka_version": Fact(value="3.9", source="inferred")})
        ),
        "broker-version",
        "fail",
        1,
        target={"spec": C2K, "phase": 0},
    ),
    Row(
        "broker version unknown",
        snapshot(
            *EAGER, broker=KIP848.model_copy(update={"kafka_version": Fact(value="?", source="unknown")})
        ),
        "broker-version",
        "warn",
        0,
        target={"spec": C2K, "phase": 0},
        strict_exit_code=1,
    ),
    Row(
        "consumer protocol off",
        snapshot(*EAGER, broker=KIP848.model_copy(update={"rebalance_protocols": ("classic",)})),
        "consumer-protocol-enabled",
        "fail",
        1,
        target={"spec": C2K, "phase": 0},
    ),
    Row(
        "policy refuses",
        snapshot(*EAGER, broker=KIP848.model_copy(update={"migration_policy": "downgrade"})),
        "migration-policy",
        "fail",
        1,
        target={"spec": C2K, "phase": 0},
    ),
    Row("policy allows", snapshot(*EAGER), "migration-policy", "pass", 0, target={"spec": C2K, "phase": 0}),
    Row(
        "userData carried",
        snapshot(member("a", user_data=True), EAGER[1]),
        "no-custom-user-data",
        "fail",
        1,
        target={"spec": C2K, "phase": 0},
        members=("a",),
    ),
    Row(
        "userData not visible",
        snapshot(member("a", user_data=None), EAGER[1]),
        "no-custom-user-data",
        "warn",
        0,
        target={"spec": C2K, "phase": 0},
        members=("a",),
        strict_exit_code=1,
    ),
    Row("no userData", snapshot(*EAGER), "no-custom-user-data", "pass", 0, target={"spec": C2K, "phase": 0}),
    Row(
        "group too big",
        snapshot(*EAGER, broker=KIP848.model_copy(update={"group_consumer_max_size": 1})),
        "group-size",
        "fail",
        1,
        target={"spec": C2K, "phase": 0},
    ),
    Row("group fits", snapshot(*EAGER), "group-size", "pass", 0, target={"spec": C2K, "phase": 0}),
]


def exit_code(report: GateReport, strict: bool = False) -> int:
    """What verify-group exits with: GateFailed's code when the gate failed, else 0."""
    return GateFailed.exit_code if report.failed(strict) else 0


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_each_gate_check_gives_its_verdict_and_exit_code(row: Row) -> None:
    report = evaluate(row.snap, **row.target)
    checks = {c.name: c for c in report.checks}
    assert checks[row.check].status == row.status, checks[row.check]
    if row.members is not None:
        assert checks[row.check].members == row.members
    if row.status != "pass":
        assert checks[row.check].reason
    if row.status == "fail":
        assert exit_code(report) == 1
    else:
        others = [c for c in report.checks if c.name != row.check and c.status == "fail"]
        assert exit_code(report) == (1 if others else row.exit_code), others
        if not others:
            strict = row.strict_exit_code if row.strict_exit_code is not None else row.exit_code
            if not [c for c in report.checks if c.name != row.check and c.status == "warn"]:
                assert exit_code(report, strict=True) == strict


def test_a_failing_check_carries_a_hint_of_what_to_do() -> None:
    report = evaluate(snapshot(member("a", user_data=True), EAGER[1]), spec=C2K, phase=0)
    check = next(c for c in report.checks if c.name == "no-custom-user-data")
    assert "downgrade-plan orders --to eager" in check.hint


def test_mid_bounce_the_member_type_check_says_how_many_members_bounced() -> None:
    """Between the gates of classic -> consumer the group is mixed: the phase-1 gate names the members not
    bounced yet and counts how far the rolling bounce got."""
    mixed = snapshot(EAGER[0], CONSUMER[1], member("c", member_type="consumer", family="librdkafka"))
    check = next(c for c in evaluate(mixed, spec=C2K, phase=1).checks if c.name == "member-type")
    assert check.status == "fail" and check.members == ("a",)
    assert check.reason.startswith("2 of 3 members are consumer; expected consumer; found a=classic")


def test_unknown_never_passes_a_phase_check() -> None:
    unseen = snapshot(
        member("a", protocol="unknown", member_type="unknown"), group_type="unknown", selected_assignor=""
    )
    for spec in (E2C, C2K):
        report = evaluate(unseen, spec=spec, phase=0)
        phase_checks = [c for c in report.checks if c.name.startswith(("group-type", "selected", "member-"))]
        assert phase_checks and all(c.status != "pass" for c in phase_checks), phase_checks


def test_the_report_sums_up_what_did_not_pass() -> None:
    report = evaluate(snapshot(member("a"), member("b", static=False)), expect_members=3)
    assert report.summary() == "static-membership warn (1); member-count fail"
    assert evaluate(snapshot(*EAGER)).summary() == "all checks pass"


def _seen_kafka_python(name: str, version: str | None) -> MemberSnapshot:
    seen = Fact(value=version or "unknown", source="inferred" if version else "unknown")
    return member(name, family="kafka-python").model_copy(update={"client_version": seen})


def _count_check(snap: GroupSnapshot, expected: int) -> Any:
    (check,) = [c for c in evaluate(snap, expect_members=expected).checks if c.name == "member-count"]
    return check


def test_a_member_short_in_a_group_with_a_stranding_defect_names_the_defect_and_the_remedy() -> None:
    """kafka-python before 3.0.13 can lose a join and never come back (families.yaml `known_defects`):
    the plan warns about it, and the gate that sees a member missing says which defect may explain it."""
    check = _count_check(snapshot(_seen_kafka_python("kp-a", "3.0.12"), member("j")), 3)
    assert check.status == "fail"
    assert "kafka-python (versions >=3.0,<3.0.13; here 1 member: kp-a)" in check.hint
    assert "can lose that join" in check.hint and "restart one that is not" in check.hint


def test_a_member_short_with_no_member_of_an_affected_version_has_no_defect_hint() -> None:
    check = _count_check(snapshot(_seen_kafka_python("kp-a", "3.0.13"), member("j")), 3)
    assert check.status == "fail" and "kafka-python" not in check.hint


def test_the_right_member_count_names_no_defect() -> None:
    assert _count_check(snapshot(_seen_kafka_python("kp-a", "3.0.12"), member("j")), 2).hint == ""


def _settled(family: str, protocol: str, assignor: str = "cooperative-sticky") -> GateReport:
    """The cutover's final gate over two static members without manifests, as the broker shows them."""
    members = (member("a", family=family, protocol=protocol), member("b", family=family, protocol=protocol))
    return evaluate(snapshot(*members, selected_assignor=assignor), spec=CUTOVER, phase=2)


def _config(report: GateReport) -> Any:
    return next(c for c in report.checks if c.name == "member-config")


@pytest.mark.parametrize("family", ["librdkafka", "java"])
def test_a_cooperative_member_whose_family_ships_one_cooperative_assignor_needs_no_manifest(
    family: str,
) -> None:
    """Cooperative, and every assignor it lists shares that protocol (librdkafka refuses a mixed list,
    Java runs the protocol all share): its list holds only cooperative assignors, and its family ships
    one, the one the group selected. The broker's view settles the list."""
    check = _config(_settled(family, "cooperative"))
    assert check.status == "pass", check


def test_a_member_whose_protocol_is_not_visible_still_needs_a_manifest_for_its_list() -> None:
    check = _config(_settled("java", "unknown"))
    assert check.status == "warn" and "does not declare its assignor list" in check.reason


def test_a_family_that_follows_the_selected_assignor_still_needs_a_manifest_for_its_list() -> None:
    """franz-go runs the selected balancer's protocol: cooperative says nothing about the rest of its list."""
    check = _config(_settled("franz-go", "cooperative"))
    assert check.status != "pass"

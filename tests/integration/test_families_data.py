"""families.yaml confirmed against real members: what the file says each family does, it does.

Wire signatures and assignor protocols are confirmed by the captured vectors (tests/unit); these
tests confirm the behaviours the planner routes on: the mixed eager+cooperative list, KIP-848, static
membership and leaving the group on close.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from kafka_coop.admin import ClusterAdmin
from kafka_coop.families import Family, catalog
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec

FAMILIES = [f for f in catalog().families]
EXIT_DEADLINE_S = 60.0


def _spec(family: Family, name: str, group: str, topic: str, **changes: object) -> MemberSpec:
    base = MemberSpec(
        name=name,
        kind=family.member_kind,  # type: ignore[arg-type]
        group=group,
        topics=(topic,),
        assignors=family.default_assignors,
        manifests=False,
    )
    return base.replace(**changes)


def _wait_exit(processes: MemberProcesses, name: str) -> int | None:
    proc = processes[name].proc
    assert proc is not None
    deadline = time.monotonic() + EXIT_DEADLINE_S
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    return proc.poll()


def _first_assignors(family: Family) -> tuple[str, str] | None:
    eager = next((a for a, f in family.assignors.items() if f.protocol == "eager"), None)
    coop = next((a for a, f in family.assignors.items() if f.protocol == "cooperative"), None)
    return (eager, coop) if eager and coop else None


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.cooperative], ids=lambda f: f.family)
def test_a_mixed_eager_and_cooperative_list_is_handled_as_the_file_says(
    family: Family,
    processes: MemberProcesses,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    pair = _first_assignors(family)
    assert pair is not None
    group = unique(f"mixed-{family.family}")
    member = processes.add(_spec(family, f"{family.family}-mixed", group, topic_factory(2), assignors=pair))
    if family.mixed_list == "refused":
        assert _wait_exit(processes, member.spec.name) not in (None, 0), "the library should refuse the list"
        return
    processes.wait_stable(group, joined=[member])
    # common: every assignor's shared protocol (eager); selected: the selected (first) one's, eager too
    assert {e["protocol"] for e in member.events()} == {"eager"}


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.family)
def test_kip848_support_is_as_the_file_says(
    family: Family,
    processes: MemberProcesses,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    group = unique(f"kip848-{family.family}")
    spec = _spec(
        family, f"{family.family}-848", group, topic_factory(2), group_protocol="consumer", assignors=()
    )
    member = processes.add(spec)
    if not family.kip848.supported:
        assert _wait_exit(processes, spec.name) == 2, "a member of this family cannot be started on KIP-848"
        return
    live = processes.wait_stable(group, joined=[member])
    assert live.group_type == "consumer"
    assert {e["protocol"] for e in member.events()} == {"consumer"}


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.family)
def test_static_membership_and_leave_on_close_are_as_the_file_says(
    family: Family,
    processes: MemberProcesses,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    group = unique(f"leave-{family.family}")
    topic = topic_factory(2)
    dynamic = processes.add(_spec(family, f"{family.family}-dyn", group, topic))
    processes.wait_stable(group, joined=[dynamic])
    processes.stop(dynamic.spec.name)
    # every default session timeout here is >= 10 s: a member gone within 6 s has left
    left_quickly = _members_within(admin, group, 0, timeout_s=6)
    assert left_quickly == (family.leave_on_close.dynamic == "leave")
    group = unique(f"static-{family.family}")  # the stopped member stays in the first group's fleet
    static_spec = _spec(family, f"{family.family}-static", group, topic, instance_id=f"{family.family}-i0")
    if not family.static_membership.supported:
        static = processes.add(static_spec)
        assert _wait_exit(processes, static_spec.name) == 2, (
            "a member of this family cannot take an instance id"
        )
        return
    static = processes.add(static_spec)
    live = processes.wait_stable(group, joined=[static])
    assert [m.instance_id for m in live.members] == [static_spec.instance_id]
    processes.stop(static.spec.name)
    still_there = not _members_within(admin, group, 0, timeout_s=5)
    assert still_there == (family.leave_on_close.static == "remain")


def _members_within(admin: ClusterAdmin, group: str, count: int, *, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if len(admin.describe_group(group).members) == count:
            return True
        time.sleep(0.3)
    return False

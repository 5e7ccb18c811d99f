"""When the test bed calls a group settled: Stable is not enough under the cooperative protocol; the
benchmarks' stricter rule reads ownership from the members' own events."""

from __future__ import annotations

from kafka_coop.admin import GroupDescription, MemberDescription
from kafka_coop.sandbox._members import latest_owned, ownership_settled, unowned_partitions


def _group(*assignments: tuple[tuple[str, int], ...]) -> GroupDescription:
    members = tuple(
        MemberDescription(
            member_id=f"m{i}", client_id=f"c{i}", host="/127.0.0.1", instance_id=None, assignment=a
        )
        for i, a in enumerate(assignments)
    )
    return GroupDescription(
        group="g",
        state="stable",
        group_type="classic",
        selected_assignor="cooperative-sticky",
        coordinator=1,
        members=members,
    )


def test_a_stable_group_between_the_two_cooperative_rounds_leaves_the_revoked_partitions_unowned() -> None:
    """Round one revoked t-2 from the old member and gave the newcomer nothing; round two has not run.
    Seen in a fresh-clone CI run: the newcomer of a Java cooperative group read as idle."""
    between = _group((("t", 0), ("t", 1)), ())
    assert unowned_partitions(between, {"t": 3}) == [("t", 2)]


def test_an_idle_member_is_settled_when_every_partition_has_an_owner() -> None:
    """Range over two topics of two partitions leaves a third member idle for good."""
    idle = _group((("a", 0), ("b", 0)), (("a", 1), ("b", 1)), ())
    assert unowned_partitions(idle, {"a": 2, "b": 2}) == []


def test_latest_owned_ignores_lifecycle_events() -> None:
    assert latest_owned([]) is None
    assert latest_owned([{"kind": "started", "owned": []}]) is None
    events = [
        {"kind": "started", "owned": []},
        {"kind": "assigned", "owned": [["t", 0], ["t", 1]]},
        {"kind": "revoked", "owned": [["t", 1]]},
        {"kind": "closed", "owned": []},
    ]
    assert latest_owned(events) == frozenset({("t", 1)})


def test_ownership_settled() -> None:
    a, b = frozenset({("t", 0), ("t", 1)}), frozenset({("t", 2)})
    assert ownership_settled({"a": a, "b": b}, 3)
    assert not ownership_settled({"a": a, "b": b}, 4)  # a partition nobody owns
    assert not ownership_settled({"a": a, "b": frozenset()}, 2)  # a member without partitions
    assert not ownership_settled({"a": a, "b": None}, 2)  # a member not assigned yet
    assert not ownership_settled({"a": a, "b": frozenset({("t", 1), ("t", 2)})}, 3)  # owned twice

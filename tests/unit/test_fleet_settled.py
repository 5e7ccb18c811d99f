"""When the test bed calls a group settled: Stable is not enough under the cooperative protocol."""

from __future__ import annotations

from kafka_coop.admin import GroupDescription, MemberDescription
from kafka_coop.sandbox._members import unowned_partitions


def _group(*assignments: tuple[tuple[str, int], ...]) -> GroupDescription:
    members = tuple(
        MemberDescription(
            member_id=f"m{i}", client_id=f"c{i}", host="/127.0.0.1", instance_id=None, assignment=a
        )
        for i, a in enumerate(assignments)
    )
    return GroupDescription(
        group_id="g",
        state="stable",
        type="classic",
        assignor="cooperative-sticky",
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

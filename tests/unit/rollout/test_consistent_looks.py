"""Two consistent looks: the gate never passes on a look taken while the group moves (rebalancing, or
group, target-assignment and member epochs that disagree), and verify-group needs a second look."""

from __future__ import annotations

from kafka_coop.inspection import GroupSnapshot
from kafka_coop.rollout import evaluate
from kafka_coop.rollout._looks import consistent_looks_check, inconsistency
from tests.unit.builders import consumer_group, consumer_member


def _look(
    taken_ms: int,
    *,
    state: str = "stable",
    group_epoch: int | None = 8,
    target_epoch: int | None = 8,
    member_epoch: int | None = 8,
) -> GroupSnapshot:
    """One look at a group of member `a`; without a group epoch the coordinator did not answer and the
    group reads as a classic one."""
    answered = group_epoch is not None
    return consumer_group(
        consumer_member("a", member_epoch),
        taken_ms=taken_ms,
        state=state,
        group_epoch=group_epoch,
        assignment_epoch=target_epoch,
        api="ConsumerGroupDescribe v1" if answered else "",
        group_type="consumer" if answered else "classic",
        protocol_type=None if answered else "consumer",
    )


def test_a_rebalancing_look_is_inconsistent() -> None:
    assert inconsistency(_look(0, state="assigning")) == "the group is assigning"


def test_a_group_epoch_ahead_of_its_target_assignment_epoch_is_inconsistent() -> None:
    assert "ahead of the target-assignment epoch 8" in inconsistency(_look(0, group_epoch=9))


def test_a_member_epoch_behind_the_target_assignment_epoch_is_inconsistent() -> None:
    assert "a at 7" in inconsistency(_look(0, member_epoch=7))


def test_the_gate_fails_a_stable_looking_group_whose_epochs_disagree_even_on_one_look() -> None:
    report = evaluate(_look(0, group_epoch=9))
    check = next(c for c in report.checks if c.name == "consistent-looks")
    assert (report.status, check.status) == ("fail", "fail")
    assert "--wait" in check.hint


def test_one_consistent_look_is_not_enough_when_two_are_asked_for() -> None:
    check = consistent_looks_check(_look(0), [], two_looks=True)
    assert check is not None and check.status == "fail" and check.reason.startswith("one consistent look")


def test_two_consistent_looks_of_the_same_epochs_pass() -> None:
    check = consistent_looks_check(_look(1200), [_look(0)])
    assert check is not None and (check.status, check.reason) == ("pass", "two consistent looks 1.2 s apart")


def test_a_consistent_look_after_an_inconsistent_one_is_not_yet_enough() -> None:
    check = consistent_looks_check(_look(1200), [_look(0, group_epoch=9, target_epoch=8)])
    assert (
        check is not None and check.status == "fail" and "the look before was not consistent" in check.reason
    )


def test_a_group_that_moved_between_two_consistent_looks_fails() -> None:
    moved = _look(1200, group_epoch=9, target_epoch=9, member_epoch=9)
    check = consistent_looks_check(moved, [_look(0)])
    assert check is not None and check.status == "fail" and "moved between the two looks" in check.reason


def test_a_classic_group_is_judged_by_its_state_and_members() -> None:
    check = consistent_looks_check(_look(300, group_epoch=None), [_look(0, group_epoch=None)])
    assert check is not None and check.status == "pass"


def test_a_lag_sample_without_members_confirms_nothing() -> None:
    sample = _look(0).model_copy(update={"members": ()})
    check = consistent_looks_check(_look(1200), [sample])
    assert check is not None and check.reason.startswith("one consistent look")


def test_awaiting_the_second_look_is_not_judged_while_another_check_fails() -> None:
    """The gate names what fails; the confirming look comes once the rest passes."""
    report = evaluate(_look(0), expect_members=3, two_looks=True)
    looks = next(c for c in report.checks if c.name == "consistent-looks")
    assert report.status == "fail" and looks.status == "not-judged"
    assert {c.name for c in report.checks if c.status == "fail"} == {"member-count"}

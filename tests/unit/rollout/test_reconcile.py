"""The reconciliation gate on the coordinator's epochs: reached, reconciling (not judged yet), stuck."""

from __future__ import annotations

from kafka_coop.inspection import GroupSnapshot, MemberSnapshot
from kafka_coop.rollout import evaluate
from kafka_coop.rollout._reconcile import reconcile_window_s, reconciliation_check
from tests.unit.builders import consumer_group, consumer_member


def _reconciling(
    taken_ms: int, *members: MemberSnapshot, epoch: int = 8, api: str = "ConsumerGroupDescribe v1"
) -> GroupSnapshot:
    return consumer_group(
        *members, taken_ms=taken_ms, state="reconciling", group_epoch=epoch, assignment_epoch=epoch, api=api
    )


REACHED = consumer_member("a", 8, (0, 1), (0, 1))
# revoking 4 in its callback: the coordinator shows its assignment without what is pending revocation
BLOCKED = consumer_member("b", 7, (2, 3), (2, 3))
WAITING = consumer_member("c", 8, (5,), (4, 5))  # at the epoch, waiting for 4 to be released


def test_a_group_without_the_coordinators_epochs_is_not_judged_here() -> None:
    assert reconciliation_check(_reconciling(0, REACHED, api="")) is None


def test_every_member_at_the_epoch_holding_its_target_passes() -> None:
    check = reconciliation_check(_reconciling(0, REACHED))
    assert check is not None and check.status == "pass"


def test_a_member_seen_behind_once_is_not_judged_yet_and_the_gate_does_not_pass() -> None:
    check = reconciliation_check(_reconciling(1_000, REACHED, BLOCKED, WAITING))
    assert check is not None and check.status == "fail"
    assert check.reason.startswith("not judged yet: 2 members reconciling")
    assert set(check.members) == {"b", "c"}


def test_a_member_behind_at_the_same_epoch_past_the_window_is_stuck_and_named_with_what_it_holds() -> None:
    history = [_reconciling(0, REACHED, BLOCKED, WAITING), _reconciling(6_000, REACHED, BLOCKED, WAITING)]
    check = reconciliation_check(_reconciling(12_000, REACHED, BLOCKED, WAITING), history)
    assert check is not None and check.status == "fail"
    assert "stuck behind the assignment epoch for more than 10 s" in check.reason
    assert "b at epoch 7 of 8 for 12 s: keeps orders:2,3, still holds orders:4 to release" in check.reason
    assert "c at epoch 8 holds orders:5, waits for orders:4 (target orders:4,5)" in check.reason
    assert check.members == ("b",), "the member that waits is not the one to blame"


def test_a_member_that_moved_on_between_looks_starts_its_clock_again() -> None:
    earlier = consumer_member("b", 6, (2, 3, 5), (2, 3))
    check = reconciliation_check(_reconciling(12_000, REACHED, BLOCKED), [_reconciling(0, REACHED, earlier)])
    assert check is not None and check.reason.startswith("not judged yet")


def test_the_window_is_two_of_the_groups_heartbeat_intervals() -> None:
    assert reconcile_window_s(None) == 10.0
    assert reconcile_window_s(2_000) == 4.0
    history = [_reconciling(0, BLOCKED)]
    check = reconciliation_check(_reconciling(5_000, BLOCKED), history, heartbeat_ms=2_000)
    assert check is not None and "stuck" in check.reason


def test_verify_group_runs_the_check_on_consumer_groups() -> None:
    report = evaluate(_reconciling(0, REACHED, BLOCKED))
    names = {c.name: c.status for c in report.checks}
    assert names["members-reconciled"] == "fail" and report.status == "fail"


def test_partitions_pending_revocation_listed_in_the_assignment_read_as_still_held() -> None:
    """Kafka 4.4's ConsumerGroupDescribe lists them in the member's assignment; the sentence is the
    one an older broker gets, where they show only as a target no member is assigned."""
    revoking = consumer_member("b", 7, (2, 3, 4), (2, 3))
    check = reconciliation_check(_reconciling(0, revoking, consumer_member("c", 8, (5,), (4, 5))))
    assert check is not None
    assert "b at epoch 7 of 8 for 0 s: keeps orders:2,3, still holds orders:4 to release" in check.reason

"""Two consistent looks (pure): the gate passes only on a group that held still between two looks.

One look can land inside a rebalance the group's state does not show yet, or, on a consumer-protocol
group, between the coordinator bumping the group epoch and computing the target assignment (from Kafka
4.3 at most once per group.consumer.assignment.interval.ms, 1 s by default: KIP-1263), or while
members still move to their target. Kafka's describe answers can then be stale (KAFKA-21582,
KAFKA-21648 in migrations/brokers/brokers.yaml). A look is consistent when the group is stable and,
where the coordinator gives epochs (ConsumerGroupDescribe), the group epoch, the target-assignment epoch
and every member's epoch agree; two are consistent together when both are and nothing moved between
them (the same epochs, or for a classic group the same generation, and the same members).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kafka_coop.inspection import GroupSnapshot
from kafka_coop.rollout._checks import Check

RULE: Final = (
    "a stable group whose group epoch, target-assignment epoch and member epochs agree "
    "(ConsumerGroupDescribe), unchanged over two looks"
)
HINT: Final = "Re-run with --wait: it waits for two consistent looks."
ONE_LOOK: Final = "one consistent look only"


def inconsistency(snap: GroupSnapshot) -> str:
    """'' if this one look is consistent, else why not, in one clause."""
    if snap.state != "stable":
        return f"the group is {snap.state}"
    view = snap.coordinator_view
    if not view.api or view.group_epoch is None or view.assignment_epoch is None:
        return ""
    if view.group_epoch != view.assignment_epoch:
        return (
            f"the group epoch {view.group_epoch} is ahead of the target-assignment epoch "
            f"{view.assignment_epoch}: the coordinator has not computed the new assignment yet"
        )
    behind = [
        m for m in snap.members if m.member_epoch is not None and m.member_epoch != view.assignment_epoch
    ]
    if behind:
        names = ", ".join(f"{m.name} at {m.member_epoch}" for m in behind[:5])
        return f"member epochs disagree with the target-assignment epoch {view.assignment_epoch}: {names}"
    return ""


def _signature(snap: GroupSnapshot) -> tuple[object, ...]:
    view = snap.coordinator_view
    return (
        view.group_epoch,
        view.assignment_epoch,
        snap.generation.value,
        sorted(m.member_id for m in snap.members),
    )


def full_looks(history: Sequence[GroupSnapshot], snap: GroupSnapshot) -> list[GroupSnapshot]:
    """The earlier looks that described the group (a lag sample alone carries no members or state)."""
    return [h for h in history if h.taken_ms < snap.taken_ms and h.exists and h.members and h is not snap]


def consistent_looks_check(
    snap: GroupSnapshot, history: Sequence[GroupSnapshot], *, two_looks: bool = True
) -> Check | None:
    """Fail on an inconsistent look; with `two_looks`, also on one whose predecessor was inconsistent
    or differs, and with no earlier look to compare (verify-group takes the second look itself).
    None: one consistent look, and only one was asked for."""
    why = inconsistency(snap)
    if why:
        return Check(name="consistent-looks", status="fail", reason=why, hint=HINT, rule=RULE)
    if not two_looks:
        return None
    earlier = full_looks(history, snap)
    if not earlier:
        return Check(
            name="consistent-looks",
            status="fail",
            reason=f"{ONE_LOOK}: a second one must confirm the group held still",
            hint=HINT,
            rule=RULE,
        )
    before = max(earlier, key=lambda h: h.taken_ms)
    why_before = inconsistency(before)
    if why_before:
        return Check(
            name="consistent-looks",
            status="fail",
            reason=f"the look before was not consistent ({why_before}); this one is",
            hint=HINT,
            rule=RULE,
        )
    if _signature(before) != _signature(snap):
        return Check(
            name="consistent-looks",
            status="fail",
            reason="the group moved between the two looks (its epochs, generation or members changed)",
            hint=HINT,
            rule=RULE,
        )
    seconds = (snap.taken_ms - before.taken_ms) / 1000
    return Check(
        name="consistent-looks",
        status="pass",
        reason=f"two consistent looks {seconds:.1f} s apart",
        rule=RULE,
    )

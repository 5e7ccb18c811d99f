"""The reconciliation gate (pure): has every member of a consumer-protocol group reached its target?

Under KIP-848 the coordinator computes a target assignment (at the group's assignment epoch) and each
member moves to it on its own: it learns its target in the answer to its next heartbeat, revokes what it
must give up (its revoke callback: commit, release), and reports the new epoch on the heartbeat after.
A member behind the assignment epoch, or holding other partitions than its target, is still
reconciling; one that stays so is stuck (a listener that blocks, a pod in a long GC) and every
partition it holds or waits for is not consumed. The broker ends it only after the rebalance timeout
(max.poll.interval.ms, 5 minutes by default), by fencing the member.

The window that tells the two apart is two heartbeat intervals of the group (the broker's
group.consumer.heartbeat.interval.ms, 5 s by default, so 10 s): one to learn the target, one to report
reaching it, the revoke callback in between. Behind for longer than that, over the looks of one
`verify-group` run, is a verdict; behind for less is "not judged yet" and keeps `--wait` waiting.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kafka_coop._vocab import plural
from kafka_coop.events import PartitionKey
from kafka_coop.inspection import GroupSnapshot, MemberSnapshot
from kafka_coop.rollout._checks import Check

HEARTBEATS_TO_RECONCILE: Final = 2
DEFAULT_HEARTBEAT_MS: Final = 5_000
RULE: Final = (
    "KIP-848 reconciliation: a member at the group's assignment epoch holds its target assignment "
    "(ConsumerGroupDescribe member epoch, assignment, target assignment)"
)


def reconcile_window_s(heartbeat_ms: int | None) -> float:
    return HEARTBEATS_TO_RECONCILE * (heartbeat_ms or DEFAULT_HEARTBEAT_MS) / 1000


def _behind(member: MemberSnapshot, assignment_epoch: int) -> bool:
    if member.member_epoch is None:
        return False
    holds_target = member.target_assignment is None or sorted(member.assignment) == sorted(
        member.target_assignment
    )
    return member.member_epoch < assignment_epoch or not holds_target


def _parts(partitions: Sequence[PartitionKey] | None) -> str:
    if not partitions:
        return "nothing"
    topics = sorted({t for t, _ in partitions})
    return " ".join(f"{t}:{','.join(str(p) for tt, p in sorted(partitions) if tt == t)}" for t in topics)


def _behind_since(member: MemberSnapshot, snap: GroupSnapshot, history: Sequence[GroupSnapshot]) -> int:
    """When this member was first seen behind at the epoch it still has, in the looks up to `snap`."""
    since = snap.taken_ms
    for earlier in sorted((h for h in history if h.taken_ms < snap.taken_ms), key=lambda h: -h.taken_ms):
        view = earlier.coordinator_view
        seen = next((m for m in earlier.members if m.member_id == member.member_id), None)
        if (
            seen is None
            or view.assignment_epoch is None
            or seen.member_epoch != member.member_epoch
            or not _behind(seen, view.assignment_epoch)
        ):
            break
        since = earlier.taken_ms
    return since


def _unreleased(snap: GroupSnapshot) -> list[PartitionKey]:
    """Partitions the target gives a member that no member is assigned: a member behind the epoch still
    holds them, pending revocation (ConsumerGroupDescribe before Kafka 4.4 shows a member's assignment
    without its partitions pending revocation, so this is where they show)."""
    targets = {tp for m in snap.members for tp in (m.target_assignment or ())}
    assigned = {tp for m in snap.members for tp in m.assignment}
    return sorted(targets - assigned)


def reconciliation_check(
    snap: GroupSnapshot, history: Sequence[GroupSnapshot] = (), heartbeat_ms: int | None = None
) -> Check | None:
    """None when the coordinator gave no epochs (a classic group, a broker without KIP-848)."""
    view = snap.coordinator_view
    if not view.api or view.assignment_epoch is None:
        return None
    epoch = view.assignment_epoch
    window = reconcile_window_s(heartbeat_ms)
    behind = [m for m in snap.members if _behind(m, epoch)]
    if not behind:
        return Check(
            name="members-reconciled",
            status="pass",
            reason=f"every member is at the assignment epoch {epoch} holding its target",
            rule=RULE,
        )
    unreleased = _unreleased(snap)
    revoking = [m for m in behind if m.member_epoch is not None and m.member_epoch < epoch]
    lines: list[str] = []
    stuck: list[str] = []
    longest = 0.0
    for m in behind:
        seconds = (snap.taken_ms - _behind_since(m, snap, history)) / 1000
        longest = max(longest, seconds)
        if m in revoking:
            if seconds >= window:
                stuck.append(m.name)
            # Kafka 4.4 lists a member's partitions pending revocation in its assignment; before, they
            # showed only as partitions of a target that no member is assigned (_unreleased)
            pending = sorted(set(m.assignment) - set(m.target_assignment or m.assignment))
            keeps = sorted(set(m.assignment) - set(pending))
            if pending:
                still = f", still holds {_parts(pending)} to release"
            elif unreleased and len(revoking) == 1:
                still = f", still holds {_parts(unreleased)} to release"
            else:
                still = f", it or another member behind holds {_parts(unreleased)}" if unreleased else ""
            lines.append(
                f"{m.name} at epoch {m.member_epoch} of {epoch} for {seconds:.0f} s: keeps "
                f"{_parts(keeps)}{still}; target {_parts(m.target_assignment)}"
            )
        else:
            waits = sorted(set(m.target_assignment or ()) - set(m.assignment))
            lines.append(
                f"{m.name} at epoch {m.member_epoch} holds {_parts(m.assignment)}, waits for "
                f"{_parts(waits)} (target {_parts(m.target_assignment)})"
            )
    group_epoch = f" (group epoch {view.group_epoch})" if view.group_epoch not in (None, epoch) else ""
    if stuck:
        return Check(
            name="members-reconciled",
            status="fail",
            reason=f"{plural(len(stuck), 'member')} stuck behind the assignment epoch "
            f"for more than {window:g} s "
            f"(two heartbeat intervals){group_epoch}: " + "; ".join(lines),
            members=tuple(stuck),
            hint="A member that does not reach its target blocks the partitions it holds: look at its revoke "
            "callback (a listener that blocks) or the process (a long GC, a freeze). The broker fences it "
            "after its rebalance timeout (max.poll.interval.ms).",
            rule=RULE,
        )
    return Check(
        name="members-reconciled",
        status="fail",
        reason=f"not judged yet: {plural(len(behind), 'member')} reconciling{group_epoch}, behind for "
        f"{longest:.0f} s of the {window:g} s a member needs (two heartbeat intervals): " + "; ".join(lines),
        members=tuple(m.name for m in behind),
        hint="Re-check in a few seconds (--wait does): a member that is reconciling reaches its target "
        "within two heartbeat intervals.",
        rule=RULE,
    )

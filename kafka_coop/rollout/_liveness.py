"""Members shown alive (pure): the gate passes on no member it cannot show is alive.

A member killed without leaving (SIGKILL, a lost node) stays in the broker's listing until its session
ends (session.timeout.ms; group.consumer.session.timeout.ms under KIP-848), so a look finds the group
stable and full. Two signs show a member runs: a liveness record (its manifest, republished within the
period it promises, `Manifest.liveness_s`; kafka-coop members promise 10 s) newer than `since_ms`, or a
committed offset that moved on a partition it owns between the gate's looks.

With `--wait` (`since_ms` = the gate's first look) only a record written after the gate began counts,
so a member killed a moment before is caught: the gate waits for its next record, which never comes.
One look alone (`since_ms` None) can only see a record older than its promise: a member killed more
than that ago. A member that promises no records is not judged here; the check says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kafka_coop._vocab import plural, verb
from kafka_coop.inspection import GroupSnapshot, MemberSnapshot
from kafka_coop.rollout._checks import Check

# A record in flight (produce, then the gate's read) may arrive this much after its promise.
GRACE_MS: Final = 5_000
RULE: Final = (
    "a member killed without leaving stays listed for session.timeout.ms: each must show it runs, by a "
    "liveness record newer than the gate's first look (--wait) or a committed offset that moved"
)


def _moved(history: Sequence[GroupSnapshot], snap: GroupSnapshot) -> set[tuple[str, int]]:
    """Partitions whose committed offset changed between the earliest lag sample and this look."""
    earlier = [h for h in history if h.lag and h.taken_ms < snap.taken_ms]
    if not earlier or not snap.lag:
        return set()
    first = {(p.topic, p.partition): p.committed for p in min(earlier, key=lambda h: h.taken_ms).lag}
    return {
        (p.topic, p.partition)
        for p in snap.lag
        if p.committed is not None and first.get((p.topic, p.partition)) not in (None, p.committed)
    }


def _shown(member: MemberSnapshot, moved: set[tuple[str, int]], bound_ms: int) -> bool:
    manifest = member.manifest
    if manifest is not None and manifest.liveness_s and manifest.heartbeat_ms > bound_ms:
        return True
    return any((topic, partition) in moved for topic, partition in member.assignment)


def liveness_check(
    snap: GroupSnapshot, history: Sequence[GroupSnapshot], *, since_ms: int | None
) -> Check | None:
    """Fail on a member that promises liveness records and shows no sign it runs; None: no members."""
    if not snap.exists or not snap.members:
        return None
    moved = _moved(history, snap)
    promised = [m for m in snap.members if m.manifest is not None and m.manifest.liveness_s]
    doubtful = []
    for member in promised:
        assert member.manifest is not None and member.manifest.liveness_s
        bound = (
            since_ms
            if since_ms is not None
            else snap.taken_ms - int(member.manifest.liveness_s * 1000) - GRACE_MS
        )
        if not _shown(member, moved, bound):
            doubtful.append(member)
    unjudged = len(snap.members) - len(promised)
    aside = (
        f"; {plural(unjudged, 'member')} {verb(unjudged, 'publishes', 'publish')} no liveness records and "
        f"{verb(unjudged, 'is', 'are')} not judged here"
        if unjudged
        else ""
    )
    if doubtful:
        ages = ", ".join(
            f"{m.name} (last record {max(0, snap.taken_ms - m.manifest.heartbeat_ms) / 1000:.0f} s ago)"
            for m in doubtful[:5]
            if m.manifest is not None
        )
        waited = "since the gate's first look" if since_ms is not None else "within its promised period"
        return Check(
            name="members-alive",
            status="fail",
            reason=f"{ages} cannot be shown alive: no liveness record {waited}, and a member killed without "
            f"leaving stays listed for session.timeout.ms{aside}",
            members=tuple(m.name for m in doubtful),
            hint="Re-run with --wait: it waits for a liveness record newer than its first look; a killed "
            "member sends none, and the broker drops it when its session ends (restart it, or remove it: "
            "kafka-coop remove-members).",
            rule=RULE,
        )
    return Check(
        name="members-alive",
        status="pass",
        reason=(
            f"{plural(len(promised), 'member')} shown alive"
            + (" since the gate's first look" if since_ms is not None else "")
            + aside
        ),
        rule=RULE,
    )

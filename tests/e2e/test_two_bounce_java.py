"""KIP-429's two rolling bounces on Java kafka-clients members, exactly as KIP-429 describes them."""

from __future__ import annotations

from collections.abc import Callable

from kafka_coop.admin import ClusterAdmin
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec

PARTITIONS = 6


def _protocols_since_start(processes: MemberProcesses, group: str) -> set[str]:
    return {e["protocol"] for m in processes.group_members(group) for e in m.events_since_start()}


def test_java_fleet_upgrades_eager_to_cooperative_in_two_bounces_and_then_moves_only_what_it_must(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic = topic_factory(PARTITIONS)
    group = unique("two-bounce")
    members = processes.add_many(
        MemberSpec(name=f"java-{i}", kind="java", group=group, topics=(topic,), assignors=("range",))
        for i in range(3)
    )
    start = processes.wait_stable(group, joined=members)
    assert start.selected_assignor == "range"
    assert _protocols_since_start(processes, group) == {"eager"}

    # Bounce 1: every member now supports both, still votes range first -> protocol stays EAGER.
    processes.rolling_bounce(group, reconfigure={"assignors": ("range", "cooperative-sticky")})
    phase1 = admin.describe_group(group)
    assert phase1.selected_assignor == "range"
    assert _protocols_since_start(processes, group) == {"eager"}

    # Bounce 2: drop range -> cooperative-sticky selected, COOPERATIVE protocol.
    processes.rolling_bounce(group, reconfigure={"assignors": ("cooperative-sticky",)})
    phase2 = admin.describe_group(group)
    assert phase2.selected_assignor == "cooperative-sticky"
    assert _protocols_since_start(processes, group) == {"cooperative"}

    before = {m.member_id: set(m.assignment) for m in phase2.members}
    marks = {m.spec.name: len(m.events()) for m in members}
    newcomer = processes.add(
        MemberSpec(
            name="java-3", kind="java", group=group, topics=(topic,), assignors=("cooperative-sticky",)
        )
    )
    after = processes.wait_stable(group, joined=[newcomer])
    moved = set(dict.fromkeys(p for m in after.members if m.member_id not in before for p in m.assignment))
    assert moved, "the newcomer got partitions"

    revoked = {
        tuple(p)
        for m in members
        for e in m.events()[marks[m.spec.name] :]
        if e["kind"] == "revoked"
        for p in e["partitions"]
    }
    assert revoked == moved, "scale-out revokes exactly the partitions that moved, nothing else"
    assert all(e["kind"] != "lost" for m in members for e in m.events())

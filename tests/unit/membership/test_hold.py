"""The held cutover's order and its fallbacks (membership/_hold.hold_across), on stand-ins for the
cluster: the real coordinator's side is tests/integration/control/test_live.py."""

from __future__ import annotations

import threading
from typing import Any

from kafka_coop.membership import hold_across
from kafka_coop.membership._leave import MemberOutcome

MEMBERS = ["m0", "m1"]


class Cluster:
    """DescribeGroups and LeaveGroup, recording the order of what the runner did."""

    def __init__(self, *, rejoining: list[str]) -> None:
        self.group: set[str] = set(MEMBERS)
        self.rejoining = rejoining  # who comes back after the rejoin record
        self.calls: list[str] = []

    def describe_group(self, group: str) -> Any:
        return type("Description", (), {"instance_ids": sorted(self.group)})()

    def remove(self, group: str, ids: list[str]) -> list[MemberOutcome]:
        self.calls.append(f"remove {','.join(ids)}")
        self.group -= set(ids)
        return [MemberOutcome(instance_id=i, error=None) for i in ids]

    def rejoin(self) -> None:
        self.calls.append("rejoin")
        self.group |= set(self.rejoining)


class Hold:
    def __init__(self, cluster: Cluster, *, error: str | None = None) -> None:
        self.group, self.instance_id = "g", "hold"
        self.joined = threading.Event()
        self.error = error
        self.cluster = cluster

    def join(self) -> None:
        self.cluster.calls.append("hold joins")
        if self.error is None:
            self.cluster.group.add(self.instance_id)
        self.joined.set()


def held(cluster: Cluster, hold: Hold, settle_s: float = 1.0) -> bool:
    return hold_across(
        cluster, cluster, hold, MEMBERS, cluster.rejoin, MEMBERS, settle_s=settle_s, step_s=0.001
    )


def test_the_hold_joins_before_the_removal_and_leaves_once_every_member_is_back() -> None:
    cluster = Cluster(rejoining=MEMBERS)
    assert held(cluster, Hold(cluster))
    assert cluster.calls == ["hold joins", "remove m0,m1", "rejoin", "remove hold"]


def test_a_hold_the_broker_refuses_is_passed_over_and_the_members_still_rejoin() -> None:
    cluster = Cluster(rejoining=MEMBERS)
    assert not held(cluster, Hold(cluster, error="GROUP_AUTHORIZATION_FAILED"))
    assert cluster.calls[1:3] == ["remove m0,m1", "rejoin"]


def test_a_member_that_does_not_come_back_lets_the_hold_leave_after_the_settle_bound() -> None:
    cluster = Cluster(rejoining=["m0"])
    assert not held(cluster, Hold(cluster), settle_s=0.05)
    assert cluster.calls[-1] == "remove hold"

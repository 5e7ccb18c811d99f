"""A member killed without leaving stays listed until its session ends; the gate does not pass on it.

A static member SIGKILLed (no leave, no close, no tombstone) keeps its place in the broker's listing for
session.timeout.ms, so a look at once finds the group stable and full. Its liveness records (its
manifest, republished every manifest.DEFAULT_HEARTBEAT_S) stop: `--wait` waits for one newer than the
gate's first look, and the killed member never sends it.
"""

from __future__ import annotations

from collections.abc import Callable

from kafka_coop.rollout import run_gate
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec


def test_the_gate_does_not_pass_on_a_member_killed_a_moment_ago(
    processes: MemberProcesses,
    manifests_topic: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic, group = topic_factory(2), unique("killed")
    spec = MemberSpec(name="k0", kind="python", group=group, topics=(topic,), instance_id="k0")
    processes.add_many([spec, spec.replace(name="k1", instance_id="k1")])
    processes.wait_stable(group, members=2)
    processes.kill("k1")

    report = run_gate(processes.admin, group, expect_members=2, wait=True, timeout_s=14, lag_window_s=0)
    assert report.failed(), report.summary()
    (alive,) = [c for c in report.checks if c.name == "members-alive"]
    assert alive.status == "fail" and alive.members == ("k1",), alive
    assert "cannot be shown alive" in alive.reason


def test_the_gate_shows_live_members_alive_by_their_liveness_records(
    processes: MemberProcesses,
    manifests_topic: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic, group = topic_factory(2), unique("alive")
    spec = MemberSpec(name="a0", kind="python", group=group, topics=(topic,), instance_id="a0")
    processes.add_many([spec, spec.replace(name="a1", instance_id="a1")])
    processes.wait_stable(group, members=2)

    report = run_gate(processes.admin, group, expect_members=2, wait=True, timeout_s=30, lag_window_s=0)
    assert not report.failed(), report.summary()
    (alive,) = [c for c in report.checks if c.name == "members-alive"]
    assert alive.status == "pass", alive

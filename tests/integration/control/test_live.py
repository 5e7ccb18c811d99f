"""Live reconfiguration on the sandbox broker: a kafka-coop fleet walked by control records, no restart.

Members are the test bed's python members (`kafka-coop consume --control`, static, record logs); the
runner's side is `publish_control` and `read_outcomes`. Each walk runs under a steady producer and ends
with the record audit: every produced record processed, nothing lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from kafka_coop.admin import ClusterAdmin
from kafka_coop.control import (
    CONTROL_TOPIC,
    CONTROL_TOPIC_CONFIG,
    CONTROL_TOPIC_PARTITIONS,
    ControlOutcome,
    ControlRecord,
    publish_control,
    read_outcomes,
)
from kafka_coop.events import now_ms
from kafka_coop.membership import GroupHold, LeaveGroupClient, hold_across, hold_instance_id
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec, SteadyProducer, audit_when_drained

PARTITIONS = 6
ANSWER_S = 90.0
CUTOVER_MEMBERS = 5
CLASSIC_COOPERATIVE = {"group.protocol": "classic", "partition.assignment.strategy": "cooperative-sticky"}
CONSUMER = {"group.protocol": "consumer", "group.remote.assignor": "uniform"}


@pytest.fixture(scope="module")
def control_topic(admin: ClusterAdmin) -> str:
    admin.ensure_topic(CONTROL_TOPIC, CONTROL_TOPIC_PARTITIONS, config=CONTROL_TOPIC_CONFIG)
    return CONTROL_TOPIC


def fleet(group: str, topic: str, n: int, assignors: tuple[str, ...]) -> list[MemberSpec]:
    return [
        MemberSpec(
            name=f"m{i}",
            kind="python",
            group=group,
            topics=(topic,),
            assignors=assignors,
            instance_id=f"{group}-m{i}",
            record_log=True,
            control=True,
        )
        for i in range(n)
    ]


class Runner:
    """The runner's side of one plan: publish a step, read every addressed member's answer."""

    def __init__(self, bootstrap: str, group: str, plan_id: str) -> None:
        self.conf = {"bootstrap.servers": bootstrap}
        self.group, self.plan_id, self.step = group, plan_id, 0

    def send(
        self, kind: str, settings: dict[str, str], members: list[str] | None, *, step: int | None = None
    ) -> int:
        self.step = step if step is not None else self.step + 1
        record = ControlRecord(
            plan_id=self.plan_id,
            group=self.group,
            step=self.step,
            phase=kind,
            kind=kind,
            members=members,
            settings=settings,
            issued_at_ms=now_ms(),
        )
        publish_control(self.conf, record)
        return self.step

    def answers(self, step: int, names: list[str]) -> dict[str, ControlOutcome]:
        found = read_outcomes(self.conf, self.group, self.plan_id, step, timeout_s=ANSWER_S, expect=names)
        assert set(found) == set(names), f"answers to step {step}: {found}"
        return found


def assert_nothing_lost(
    processes: MemberProcesses, admin: ClusterAdmin, group: str, topic: str, producer: SteadyProducer
) -> None:
    """Every acknowledged record processed, and the group's commits caught up with exactly that."""
    producer.stop()
    result = audit_when_drained(
        topic, producer.acked, lambda: [m.records_path for m in processes.members.values()], timeout_s=60
    )
    assert result.produced > 0
    assert result.lost == 0, f"{result.lost} records never processed, e.g. {result.lost_examples}"
    acked = {p: producer.acked[p] for p in range(PARTITIONS)}
    committed: dict[int, int | None] = {}
    deadline = time.monotonic() + 30  # the members' interval commit (5 s) takes the last records in
    while time.monotonic() < deadline and committed != acked:
        committed = {o.partition: o.committed for o in admin.offsets(group) if o.topic == topic}
        time.sleep(0.5)
    assert committed == acked, "committed offsets against what was produced and processed"


def started_once(processes: MemberProcesses) -> bool:
    return all(m.starts == 1 and m.alive for m in processes.members.values())


def test_an_eager_fleet_goes_to_the_consumer_protocol_then_to_cooperative_one_member_at_a_time_live(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    manifests_topic: str,
    control_topic: str,
) -> None:
    group, topic = unique("live"), topic_factory(PARTITIONS)
    runner = Runner(bootstrap, group, unique("plan"))
    with SteadyProducer(bootstrap, topic, PARTITIONS, rate=100) as producer:
        members = processes.add_many(fleet(group, topic, 3, ("range",)))
        processes.wait_stable(group, joined=members)
        seconds: list[float] = []
        for settings, group_type in ((CONSUMER, "consumer"), (CLASSIC_COOPERATIVE, "classic")):
            for member in members:
                name = member.spec.instance_id or ""
                step = runner.send("reconfigure", settings, [name])
                answer = runner.answers(step, [name])[name]
                assert answer.outcome == "applied", answer
                assert answer.seconds is not None
                seconds.append(answer.seconds)
            live = processes.wait_stable(group)
            assert live.group_type == group_type
        assert live.selected_assignor == "cooperative-sticky"
        assert started_once(processes), "no member process was restarted"
        reconfigured = [e for m in members for e in m.events() if e["kind"] == "reconfigured"]
        assert len(reconfigured) == 6 and all(e["error"] is None for e in reconfigured)
        assert_nothing_lost(processes, admin, group, topic, producer)
    ordered = sorted(seconds)
    print(f"live reconfiguration per member: p50 {ordered[len(ordered) // 2]:.2f} s, max {ordered[-1]:.2f} s")


def test_an_eager_fleet_goes_to_cooperative_by_a_coordinated_cutover_in_one_rebalance(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    manifests_topic: str,
    control_topic: str,
) -> None:
    """The group is held open across the cutover (membership/_hold), as `rollout run` does: every member
    rejoins in one rebalance, so each has exactly one assignment after the rejoin record."""
    group, topic = unique("cutover"), topic_factory(PARTITIONS)
    runner = Runner(bootstrap, group, unique("plan"))
    with SteadyProducer(bootstrap, topic, PARTITIONS, rate=100) as producer:
        members = processes.add_many(fleet(group, topic, CUTOVER_MEMBERS, ("range",)))
        processes.wait_stable(group, joined=members)
        names = [m.spec.instance_id or "" for m in members]
        began = time.monotonic()
        closed = runner.answers(runner.send("cutover-close", {}, None), names)
        assert {a.outcome for a in closed.values()} == {"closed-for-cutover"}
        rejoin_ms = now_ms()
        leave = LeaveGroupClient(bootstrap, {}, 10.0)
        hold = GroupHold(
            bootstrap, {}, group, hold_instance_id(runner.plan_id, 2), ("range", "cooperative-sticky")
        )
        try:
            held = hold_across(
                admin,
                leave,
                hold,
                names,
                lambda: runner.send(
                    "cutover-rejoin", {"partition.assignment.strategy": "cooperative-sticky"}, None
                ),
                names,
            )
        finally:
            hold.close()
            leave.close()
        assert held, "every member came back while the hold kept the group"
        rejoined = runner.answers(2, names)
        pause_s = time.monotonic() - began
        assert {a.outcome for a in rejoined.values()} == {"applied"}, rejoined
        live = processes.wait_stable(group)
        assert (live.group_type, live.selected_assignor) == ("classic", "cooperative-sticky")
        assert set(live.instance_ids) == set(names), "the hold left the group"
        assignments = {
            m.spec.name: sum(1 for e in m.events() if e["kind"] == "assigned" and e["ts_ms"] >= rejoin_ms)
            for m in members
        }
        assert assignments == {m.spec.name: 1 for m in members}, "every member rejoined in one rebalance"
        assert started_once(processes)
        assert_nothing_lost(processes, admin, group, topic, producer)
    longest = max(a.seconds or 0.0 for a in rejoined.values())
    print(
        f"coordinated cutover: {pause_s:.2f} s from the close record to every answer; "
        f"longest member pause {longest:.2f} s"
    )


def test_refused_stale_replayed_and_malformed_records_change_nothing(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    manifests_topic: str,
    control_topic: str,
) -> None:
    from confluent_kafka import Producer

    group, topic = unique("refuse"), topic_factory(2)
    runner = Runner(bootstrap, group, unique("plan"))
    (member,) = processes.add_many(fleet(group, topic, 1, ("cooperative-sticky",)))
    processes.wait_stable(group, joined=[member])
    name = member.spec.instance_id or ""
    step = runner.send("reconfigure", {"group.protocol": "consumer", "client.id": "someone-else"}, None)
    refused = runner.answers(step, [name])[name]
    assert refused.outcome == "refused" and "client.id" in (refused.reason or "")
    raw = Producer({"bootstrap.servers": bootstrap})
    raw.produce(control_topic, b"{not a control record", group.encode())
    raw.flush(10)
    runner.send("reconfigure", CONSUMER, None, step=step)  # replayed step: stale
    runner.send("reconfigure", CONSUMER, None, step=step - 1 if step > 0 else 0)
    marker = runner.send(
        "reconfigure", {"partition.assignment.strategy": "cooperative-sticky"}, None, step=step + 1
    )
    after = runner.answers(marker, [name])[name]
    assert (after.outcome, after.reason) == ("applied", "already on these settings")
    live = admin.describe_group(group)
    assert (live.group_type, live.selected_assignor) == ("classic", "cooperative-sticky")
    assert started_once(processes)
    assert not [e for e in member.events() if e["kind"] == "reconfigured"]

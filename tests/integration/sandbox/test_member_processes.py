"""The fleet runner and `kafka-coop consume`, as the demo, tests and benchmarks drive them."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kafka_coop.admin import ClusterAdmin
from kafka_coop.analytics import summarize, unavailability
from kafka_coop.events import RebalanceEvent
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec, read_events
from tests.integration.members import wait_for

FAST_SESSION = {"session.timeout.ms": "6000", "heartbeat.interval.ms": "1000"}


def test_a_sigkilled_python_member_is_replaced_after_its_session_times_out(
    processes: MemberProcesses, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    topic = topic_factory(4)
    group = unique("kill")
    members = processes.add_many(
        MemberSpec(
            name=f"py-{i}",
            kind="python",
            group=group,
            topics=(topic,),
            assignors=("cooperative-sticky",),
            properties=FAST_SESSION,
            client_id="rdkafka",  # a service that sets no client.id: every instance is librdkafka's default
        )
        for i in range(2)
    )
    processes.wait_stable(group, joined=members)
    killed_ms = time.time_ns() // 1_000_000
    processes.kill("py-1")
    after = processes.wait_stable(group, members=1, timeout_s=60)
    assert sorted(after.members[0].assignment) == [(topic, p) for p in range(4)]
    dead = members[1].events()
    assert [e["kind"] for e in dead][-1] != "closed", "a SIGKILL leaves no closing event"
    # the report bounds the dead member's gap from its last event, never 0 (whatever the client ids)
    assert len({e["process"] for e in dead + members[0].events()}) == 2, "each process stamps its own"
    gaps = unavailability(dead + members[0].events())
    held = {tuple(tp) for tp in dead[-1]["owned"]}
    assert held and {(i.topic, i.partition) for i in gaps if i.cause == "vanished"} == held
    assert all(
        i.start_ms == dead[-1]["ts_ms"] and i.end_ms > killed_ms for i in gaps if i.cause == "vanished"
    )
    assert len(summarize(dead + members[0].events()).members) == 2, "two processes are two members"


def test_reconfigure_between_bounces_changes_what_the_member_runs(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic = topic_factory(2)
    group = unique("reconf")
    member = processes.add(
        MemberSpec(name="py-0", kind="python", group=group, topics=(topic,), assignors=("range",))
    )
    processes.wait_stable(group, joined=[member])
    processes.rolling_bounce(group, downtime_s=0.5, reconfigure={"assignors": ("cooperative-sticky",)})
    assert admin.describe_group(group).selected_assignor == "cooperative-sticky"
    assert member.starts == 2
    assert {e["protocol"] for e in member.events_since_start()} == {"cooperative"}


def test_java_member_events_follow_the_rebalance_event_schema(
    processes: MemberProcesses, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    topic = topic_factory(3)
    group = unique("schema")
    member = processes.add(
        MemberSpec(
            name="java-0",
            kind="java",
            group=group,
            topics=(topic,),
            members=2,
            assignors=("cooperative-sticky",),
            instance_id="java-{i}",
        )
    )
    processes.wait_stable(group, joined=[member])
    processes.stop("java-0")
    events = [RebalanceEvent.model_validate(e) for e in member.events()]
    assert {e.instance_id for e in events} == {"java-0", "java-1"}
    assert {e.client_id for e in events} == {"java-0-0", "java-0-1"}
    for client in ("java-0-0", "java-0-1"):
        seqs = [e.seq for e in events if e.client_id == client]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_consume_prints_events_and_closes_cleanly_on_sigterm(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    tmp_path: Path,
) -> None:
    topic = topic_factory(2)
    group = unique("consume-cli")
    events_path = tmp_path / "events.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kafka_coop.cli",
            "consume",
            group,
            topic,
            "--bootstrap-server",
            bootstrap,
            "--events",
            str(events_path),
            "--no-manifests",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: any(e["kind"] == "assigned" for e in read_events(events_path)), what="an assignment")
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    kinds = [e["kind"] for e in read_events(events_path)]
    assert kinds[0] == "started" and kinds[-1] == "closed"
    assert "revoked" in kinds, "closing revokes through the callbacks (final commit)"
    assert "assigned" in stderr, "events are printed live"
    deadline = time.monotonic() + 10
    while admin.describe_group(group).members and time.monotonic() < deadline:
        time.sleep(0.2)
    assert admin.describe_group(group).members == (), "a dynamic member leaves the group on close"


def test_secrets_never_appear_in_the_consumers_repr_or_events(
    bootstrap: str, unique: Callable[[str], str]
) -> None:
    from kafka_coop.consumer import CoopConsumer
    from kafka_coop.sinks import MemorySink

    sink = MemorySink()
    consumer = CoopConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("secret"),
            "sasl.password": "hunter2-very-secret",
        },
        events=sink,
    )
    text = repr(consumer) + repr(consumer.settings) + str(consumer.settings.model_dump())
    consumer.close()
    assert "hunter2" not in text
    assert all("hunter2" not in json.dumps(e.model_dump()) for e in sink.events)

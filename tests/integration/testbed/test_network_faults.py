"""Real network faults between one client and the broker, made by toxiproxy (NetworkFaults), in CI.

The session broker has a PROXIED listener; a client bootstrapped at `faults.bootstrap` reaches the
broker only through toxiproxy, for every connection (the listener advertises the proxy's address).
Members bootstrapped at the normal listener are untouched: that is how one member is cut from its
coordinator while the rest of the group keeps going.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka_coop.admin import ClusterAdmin, GroupDescription
from kafka_coop.sandbox import Sandbox
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec, SteadyProducer, audit_when_drained
from testbed.faults import NetworkFaults

# The cut member's session must run out while it is cut; librdkafka's own session check then
# declares its partitions lost. socket.timeout.ms bounds how long a request sent into the cut waits
# for an answer that never comes, so the member reconnects soon after the heal.
FAST_SESSION = {"session.timeout.ms": "6000", "heartbeat.interval.ms": "1000"}
CUT_MEMBER = {**FAST_SESSION, "socket.timeout.ms": "10000"}


def _wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout_s:.0f}s"
        time.sleep(0.3)


def _events_after(path: Path, since_ms: int) -> list[dict[str, Any]]:
    from kafka_coop.sandbox.testing import read_events

    return [e for e in read_events(path) if e["ts_ms"] >= since_ms]


def _only_member_owns_everything(admin: ClusterAdmin, group: str, client_id: str, partitions: int) -> bool:
    live: GroupDescription = admin.describe_group(group)
    return (
        live.state == "stable"
        and [m.client_id for m in live.members] == [client_id]
        and len(live.members[0].assignment) == partitions
    )


def test_a_member_cut_from_its_coordinator_past_its_session_is_evicted_loses_its_partitions_and_rejoins(
    sandbox: Sandbox,
    faults: NetworkFaults,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    tmp_path: Path,
) -> None:
    topic, group = topic_factory(4), unique("netcut")
    with MemberProcesses(sandbox.bootstrap, tmp_path / "fleet") as processes:
        spec = MemberSpec(
            name="stayer",
            kind="python",
            group=group,
            topics=(topic,),
            assignors=("cooperative-sticky",),
            properties=FAST_SESSION,
            record_log=True,
            manifests=False,
        )
        stayer = processes.add(spec)
        cut = processes.add(spec.replace(name="cut", properties=CUT_MEMBER), start=False)
        cut.bootstrap = faults.bootstrap  # every connection of this one member goes through toxiproxy
        cut.start()
        processes.wait_stable(group, members=2, joined=[stayer, cut], timeout_s=120)
        _wait_for(
            lambda: all(len(m.assignment) == 2 for m in admin.describe_group(group).members),
            60,
            "a 2+2 split",
        )
        logs = [stayer.records_path, cut.records_path]
        with SteadyProducer(sandbox.bootstrap, topic, 4, rate=100) as producer:
            time.sleep(2)  # both members are processing when the cut comes
            cut_ms = int(time.time() * 1000)
            faults.cut()
            try:
                _wait_for(
                    lambda: _only_member_owns_everything(admin, group, "stayer", 4),
                    60,
                    "the broker evicting the cut member and the stayer owning all 4 partitions",
                )
                _wait_for(
                    lambda: any(e["kind"] == "lost" for e in _events_after(cut.events_path, cut_ms)),
                    60,
                    "the cut member's lost event",
                )
            finally:
                heal_ms = int(time.time() * 1000)
                faults.heal()
            lost = [e for e in _events_after(cut.events_path, cut_ms) if e["kind"] == "lost"]
            assert sorted(p for _, p in lost[0]["partitions"]) and lost[0]["owned"] == []
            assert not [e for e in _events_after(stayer.events_path, cut_ms) if e["kind"] == "lost"]

            # healed: the cut member rejoins and gets a share again, while records keep flowing
            _wait_for(
                lambda: any(
                    e["kind"] == "assigned" and e["owned"] for e in _events_after(cut.events_path, heal_ms)
                ),
                120,
                "the cut member's rejoin with partitions",
            )
            processes.wait_stable(group, members=2, timeout_s=120)
        acked = dict(producer.acked)
        assert producer.failed == 0
        result = audit_when_drained(topic, acked, lambda: logs, timeout_s=90)
        assert result.produced > 0
        assert result.lost == 0, result.lost_examples


def _verify(bootstrap: str, group: str, timeout_s: int) -> tuple[subprocess.CompletedProcess[str], float]:
    began = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_coop.cli",
            "verify-group",
            group,
            "--bootstrap-server",
            bootstrap,
            "--expect-members",
            "1",
            "--timeout",
            str(timeout_s),
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, time.monotonic() - began


def _verdict(proc: subprocess.CompletedProcess[str]) -> tuple[int, dict[str, str]]:
    return proc.returncode, {c["name"]: c["status"] for c in json.loads(proc.stdout)["checks"]}


def test_verify_group_through_coordinator_latency_gives_the_same_verdict_or_one_sentence_and_exit_3(
    sandbox: Sandbox,
    faults: NetworkFaults,
    processes: MemberProcesses,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    """Latency slows every request of verify-group; it must never turn into a different verdict."""
    topic, group = topic_factory(2), unique("netlag")
    member = processes.add(
        MemberSpec(name="m0", kind="python", group=group, topics=(topic,), manifests=False)
    )
    processes.wait_stable(group, joined=[member], timeout_s=120)
    direct, _ = _verify(sandbox.bootstrap, group, 30)
    assert direct.returncode in (0, 1), direct.stderr
    truth = _verdict(direct)

    faults.latency(300)  # each way: every request's round trip is 600 ms slower
    try:
        slow, took = _verify(faults.bootstrap, group, 60)
    finally:
        faults.heal()
    assert slow.returncode in (0, 1), slow.stderr
    assert _verdict(slow) == truth, (slow.stdout, direct.stdout)

    faults.latency(5000)  # each way: no request can answer inside a 3 s --timeout
    try:
        stalled, took = _verify(faults.bootstrap, group, 3)
    finally:
        faults.heal()
    assert stalled.returncode == 3, (stalled.stdout, stalled.stderr)
    error = json.loads(stalled.stdout)  # no verdict when the cluster did not answer: the error object
    assert (error["kind"], error["error"]["exit_code"]) == ("error", 3), stalled.stdout
    lines = [line for line in stalled.stderr.splitlines() if line.strip()]
    assert lines and lines[0].startswith("Error: ") and len(lines) <= 3, stalled.stderr
    sentence = lines[0]
    assert "did not answer" in sentence or "Could not reach the Kafka cluster" in sentence, sentence
    assert "KafkaError{" not in sentence, f"a library repr is not a sentence: {sentence}"
    assert took < 60, f"verify-group took {took:.0f}s with --timeout 3"

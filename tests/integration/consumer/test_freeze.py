"""A member process frozen (SIGSTOP) past its session, then thawed, processes no record it fetched before.

librdkafka's threads freeze with the process, so on thaw the client still believes it owns its
partitions while the group gave them to another member; the records it had prefetched come out of the
next `consume` at once, before the first heartbeat can bring the eviction back (seen in the chaos run).
kafka-coop holds them until the group has answered (kafka_coop/consumer/_freeze.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafka_coop.admin import ClusterAdmin
from tests.integration.consumer.members import ThreadMember, wait_for

ROOT = Path(__file__).resolve().parents[3]
PER_PARTITION = 3000


def records(path: Path) -> list[tuple[int, int, int]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "R":
            out.append((int(parts[1]), int(parts[2]), int(parts[3])))
    return out


def events(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def shorten_kip848_session(admin: ClusterAdmin, group: str) -> None:
    """The group's own KIP-848 session: 6 s instead of the broker's 45 s (the sandbox allows 6 s)."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    entry = ConfigEntry("consumer.session.timeout.ms", "6000", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    client = admin.fresh_client()  # kept referenced until the answer is in (else _DESTROY)
    for future in client.incremental_alter_configs([resource]).values():
        future.result(30)


@pytest.mark.parametrize("protocol", ["cooperative", "consumer"])
def test_a_static_member_thawed_after_its_session_processes_nothing_it_fetched_before_the_freeze(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    tmp_path: Path,
    protocol: str,
) -> None:
    topic = topic_factory(2)
    group = unique(f"freeze-{protocol}")
    if protocol == "consumer":
        shorten_kip848_session(admin, group)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for p in range(2):
        for i in range(PER_PARTITION):
            producer.produce(topic, f"{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [bootstrap, group, topic, "frozen", str(tmp_path), protocol]
    member = subprocess.Popen(
        [sys.executable, "-m", "testbed.freeze_member", *argv],
        cwd=ROOT,
        env=env,
    )
    rec, evs = tmp_path / "frozen.rec", tmp_path / "frozen.events.jsonl"
    taker: ThreadMember | None = None
    try:
        wait_for(
            lambda: len(records(rec)) >= 100, timeout_s=60, what="the member to process its first records"
        )
        member.send_signal(signal.SIGSTOP)
        frozen_at = time.time()
        timing = {"session_timeout_ms": 6000} if protocol == "cooperative" else {}
        taker = ThreadMember(
            bootstrap,
            group,
            [topic],
            "cooperative-sticky" if protocol == "cooperative" else "consumer",
            "taker",
            group_instance_id=f"{group}-taker",
            max_poll_interval_ms=6000,
            **timing,
        )
        # The frozen member's session (6 s) runs out on the broker; the taker gets both partitions.
        wait_for(lambda: len(taker.owned) == 2, timeout_s=60, what="the taker to own both partitions")
        wait_for(lambda: len(taker.processed) == 2, timeout_s=30, what="the taker to process both")
        # The session ran out (the taker owns both); the freeze must also outlast max.poll.interval.ms (6 s),
        # the longest the group waits, which it may not yet have: the session counts from the last heartbeat.
        time.sleep(max(0.0, 8.0 - (time.time() - frozen_at)))
        thawed_ms = time.time_ns() // 1_000_000
        member.send_signal(signal.SIGCONT)

        def lost_after_thaw() -> bool:
            return any(e["kind"] == "lost" and int(str(e["ts_ms"])) >= thawed_ms for e in events(evs))

        wait_for(lost_after_thaw, timeout_s=30, what="the thawed member to learn it was evicted")
        lost_ms = min(
            int(str(e["ts_ms"]))
            for e in events(evs)
            if e["kind"] == "lost" and int(str(e["ts_ms"])) >= thawed_ms
        )
        time.sleep(2.0)  # let it run on after the loss (rejoin), to check nothing was skipped either
    finally:
        member.send_signal(signal.SIGCONT)
        member.send_signal(signal.SIGTERM)
        try:
            member.wait(30)
        except subprocess.TimeoutExpired:
            member.kill()
        if taker is not None:
            taker.stop()
    done = records(rec)
    zombie = [(p, o) for p, o, ms in done if thawed_ms <= ms < lost_ms]
    assert not zombie, (
        f"processed after the thaw, before learning it was evicted: {zombie[:5]}... ({len(zombie)})"
    )
    # Nothing skipped: up to the highest offset either member processed, every record was processed.
    for p in range(2):
        seen = {o for q, o, _ in done if q == p} | set(taker.processed.get((topic, p), []))
        assert seen == set(range(max(seen) + 1)), f"partition {p} has a gap"

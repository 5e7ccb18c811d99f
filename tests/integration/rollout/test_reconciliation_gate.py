"""verify-group's reconciliation gate on a real consumer-protocol group: a member blocked in its revoke
callback keeps its partitions past its target; the gate names it until it is released, and passes only
on two consistent looks after that."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer

from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec
from tests.conftest import CliResult


class BlockingMember:
    """A plain confluent-kafka consumer (group.protocol=consumer) whose revoke callback waits for
    `release`: what a listener that blocks (a commit that hangs, a lock) looks like to the group."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str) -> None:
        self.release = threading.Event()
        self.revoking = threading.Event()
        self.owned: set[tuple[str, int]] = set()
        self._stop = threading.Event()
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": "consumer",
                "client.id": name,
            }
        )
        self._consumer.subscribe([topic], on_assign=self._assign, on_revoke=self._revoke, on_lost=self._lost)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _assign(self, consumer: Any, partitions: list[Any]) -> None:
        consumer.incremental_assign(partitions)
        self.owned |= {(p.topic, p.partition) for p in partitions}

    def _revoke(self, consumer: Any, partitions: list[Any]) -> None:
        self.revoking.set()
        self.release.wait()
        consumer.incremental_unassign(partitions)
        self.owned -= {(p.topic, p.partition) for p in partitions}

    def _lost(self, consumer: Any, partitions: list[Any]) -> None:
        self.owned -= {(p.topic, p.partition) for p in partitions}

    def _run(self) -> None:
        while not self._stop.is_set():
            self._consumer.poll(0.2)

    def close(self) -> None:
        self.release.set()
        self._stop.set()
        self._thread.join(30)
        self._consumer.close()


@pytest.fixture
def blocking(bootstrap: str) -> Iterator[Callable[[str, str, str], BlockingMember]]:
    made: list[BlockingMember] = []

    def make(group: str, topic: str, name: str) -> BlockingMember:
        member = BlockingMember(bootstrap, group, topic, name)
        made.append(member)
        return member

    yield make
    for member in made:
        member.close()


def _reconciled(result: CliResult) -> dict[str, Any]:
    return next(c for c in result.json()["checks"] if c["name"] == "members-reconciled")


def test_a_member_blocked_in_its_revoke_callback_fails_the_gate_until_released(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
    blocking: Callable[[str, str, str], BlockingMember],
) -> None:
    topic = topic_factory(4)
    group = unique("blocked")
    stuck = blocking(group, topic, "stuck-a")
    deadline = time.monotonic() + 60
    while len(stuck.owned) < 4 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(stuck.owned) == 4, "the first member owns every partition"
    processes.add(
        MemberSpec(name="newcomer", kind="python", group=group, topics=(topic,), group_protocol="consumer")
    )
    assert stuck.revoking.wait(60), "the target moves partitions away from the first member"

    gate = ("verify-group", group, "--bootstrap-server", bootstrap, "--interval", "2", "-o", "json")
    began = time.monotonic()
    blocked = run_cli(*gate, "--wait", "--timeout", "20")
    assert blocked.code == 1, blocked.stdout + blocked.stderr
    check = _reconciled(blocked)
    assert check["status"] == "fail"
    assert "stuck behind the assignment epoch" in check["reason"], check["reason"]
    assert check["members"] == ["stuck-a"], "the newcomer waits for it and is not to blame"
    behind = re.search(r"stuck-a at epoch (\d+) of (\d+)", check["reason"])
    assert behind is not None and int(behind[1]) < int(behind[2])
    assert f"keeps {topic}:0,1, still holds {topic}:2,3 to release; target {topic}:0,1" in check["reason"]
    assert f"holds nothing, waits for {topic}:2,3" in check["reason"]
    assert "members-reconciled" in blocked.stderr  # the one sentence names the failing check
    looks = next(c for c in blocked.json()["checks"] if c["name"] == "consistent-looks")
    assert looks["status"] == "fail" and "reconciling" in looks["reason"], looks
    assert time.monotonic() - began >= 15
    # the group's state as the coordinator names it (librdkafka's describe reads it as unknown)
    described = run_cli("describe", group, "--bootstrap-server", bootstrap, "-o", "json")
    assert described.code == 0 and described.json()["state"] == "reconciling", described.stdout[:500]

    stuck.release.set()
    released = run_cli(*gate, "--wait", "--timeout", "60")
    assert released.code == 0, released.stdout + released.stderr
    assert _reconciled(released)["status"] == "pass"
    looks = next(c for c in released.json()["checks"] if c["name"] == "consistent-looks")
    assert looks["status"] == "pass" and looks["reason"].startswith("two consistent looks"), looks
    assert len(stuck.owned) == 2

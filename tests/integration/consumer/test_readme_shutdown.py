"""The README's consumer snippet, stopped the way Kubernetes and systemd stop a service (SIGTERM).

The snippet is read from README.md (so the README cannot drift from what is tested) and run as its own
process from the project's virtualenv, next to a second member of its group on six partitions. Only its
placeholders are filled in: the broker, group, topic and events path, and a `process` that prints.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafka_coop import CoopConsumer, RebalanceEvent
from kafka_coop.admin import ClusterAdmin
from tests.integration.members import wait_for

README = Path(__file__).resolve().parents[3] / "README.md"
PARTITIONS = 6
PER_PARTITION = 5
HANDOVER_LIMIT_S = 10.0
PRELUDE = """import sys
DONE = open(sys.argv[1], "a", buffering=1)
def process(msg):
    DONE.write(f"done {msg.partition()} {msg.offset()}\\n")

"""
EPILOGUE = '\nprint("after the block", flush=True)\n'


def readme_snippet() -> str:
    """The first python block under "## The consumer"."""
    section = README.read_text().split("## The consumer", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "README.md has no python block under '## The consumer'"
    return match.group(1)


def _fill(snippet: str, old: str, new: str) -> str:
    assert snippet.count(old) == 1, f"the README snippet no longer holds {old!r} exactly once"
    return snippet.replace(old, new)


def service_program(bootstrap: str, group: str, topic: str, events: Path, instance_id: str | None) -> str:
    code = readme_snippet()
    code = _fill(code, '"127.0.0.1:9092"', repr(bootstrap))
    identity = repr(group) + (f', "group.instance.id": {instance_id!r}' if instance_id else "")
    code = _fill(code, '"orders-app"', identity)
    code = _fill(code, '["orders"]', repr([topic]))
    code = _fill(code, '"rebalances.jsonl"', repr(str(events)))
    return PRELUDE + code + EPILOGUE


class Survivor:
    """The other member, in this process, polling on a thread."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
        self.consumer = CoopConsumer(conf, handle_signals=False)
        self.consumer.subscribe([topic])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.1)

    def owns(self) -> int:
        return len(self.consumer.owned)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.consumer.close()


def _produce(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for p in range(PARTITIONS):
        for i in range(PER_PARTITION):
            producer.produce(topic, f"order-{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0


@pytest.fixture
def group_and_topic(topic_factory: Callable[[int], str], unique: Callable[[str], str]) -> tuple[str, str]:
    return unique("readme"), topic_factory(PARTITIONS)


@pytest.fixture
def survivor(bootstrap: str, group_and_topic: tuple[str, str]) -> Iterator[Survivor]:
    group, topic = group_and_topic
    member = Survivor(bootstrap, group, topic)
    wait_for(lambda: member.owns() == PARTITIONS, what="the survivor to own every partition")
    yield member
    member.close()


def _events(path: Path) -> list[RebalanceEvent]:
    if not path.exists():
        return []
    return [RebalanceEvent.model_validate_json(line) for line in path.read_text().splitlines() if line]


def _start_service(
    program: str, events: Path, done: Path, survivor: Survivor, produce: Callable[[], None]
) -> subprocess.Popen[str]:
    """The service, once it shares the topic with the survivor and has processed records of its own."""
    service = subprocess.Popen(
        [sys.executable, "-c", program, str(done)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )

    def shared() -> bool:
        mine = _events(events)
        return bool(mine) and len(mine[-1].owned) == PARTITIONS // 2 and survivor.owns() == PARTITIONS // 2

    wait_for(lambda: shared() or service.poll() is not None, what="the two members to share the topic")
    assert service.poll() is None, service.communicate()
    # The README's conf starts a new group at the end (librdkafka's default "latest"), resolved a
    # moment after the assignment: produce until the service has taken records of every partition it owns.
    deadline = time.monotonic() + 60
    while len(_done(done)) < PARTITIONS // 2:
        assert time.monotonic() < deadline, f"the service processed no records: {_done(done)}"
        produce()
        time.sleep(0.5)
    return service


def _done(path: Path) -> dict[int, int]:
    """partition -> the next offset after the last record the service processed."""
    last: dict[int, int] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        if line.startswith("done "):
            _, partition, offset = line.split()
            last[int(partition)] = max(last.get(int(partition), -1), int(offset)) + 1
    return last


def test_the_readme_service_on_sigterm_commits_leaves_and_hands_its_partitions_over_at_once(
    bootstrap: str,
    admin: ClusterAdmin,
    group_and_topic: tuple[str, str],
    survivor: Survivor,
    tmp_path: Path,
) -> None:
    group, topic = group_and_topic
    events, processed = tmp_path / "events.jsonl", tmp_path / "done.txt"
    program = service_program(bootstrap, group, topic, events, None)
    service = _start_service(program, events, processed, survivor, lambda: _produce(bootstrap, topic))
    owned = {p for _, p in _events(events)[-1].owned}

    began = time.monotonic()
    service.send_signal(signal.SIGTERM)
    wait_for(lambda: survivor.owns() == PARTITIONS, timeout_s=60, what="the survivor to own every partition")
    handover = time.monotonic() - began
    stdout, stderr = service.communicate(timeout=30)

    print(f"handover after SIGTERM: {handover:.2f} s")
    assert handover < HANDOVER_LIMIT_S
    assert service.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert stdout.rstrip() == "after the block"
    kinds = [e.kind for e in _events(events)]
    assert kinds[-2:] == ["revoked", "closed"], kinds
    done = _done(processed)
    assert owned <= done.keys(), (owned, done)
    committed = {o.partition: o.committed for o in admin.offsets(group)}
    assert {p: committed[p] for p in owned} == {p: done[p] for p in owned}


def test_a_static_readme_service_on_sigterm_commits_and_closes_but_does_not_leave(
    bootstrap: str,
    admin: ClusterAdmin,
    group_and_topic: tuple[str, str],
    survivor: Survivor,
    tmp_path: Path,
) -> None:
    group, topic = group_and_topic
    events, processed = tmp_path / "events.jsonl", tmp_path / "done.txt"
    program = service_program(bootstrap, group, topic, events, "readme-static-1")
    service = _start_service(program, events, processed, survivor, lambda: _produce(bootstrap, topic))
    owned = {p for _, p in _events(events)[-1].owned}

    service.send_signal(signal.SIGTERM)
    stdout, stderr = service.communicate(timeout=30)
    assert service.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert stdout.rstrip() == "after the block"
    kinds = [e.kind for e in _events(events)]
    assert kinds[-1] == "closed", kinds
    committed = {o.partition: o.committed for o in admin.offsets(group)}
    assert {p: committed[p] for p in owned} == {p: _done(processed)[p] for p in owned}
    # No LeaveGroup: the broker still holds the static member, so nothing moves before its session ends.
    time.sleep(2.0)
    assert "readme-static-1" in admin.describe_group(group).instance_ids
    assert survivor.owns() == PARTITIONS // 2

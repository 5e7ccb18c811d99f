"""The README's consumer snippet as a service process, and the other member of its group: shared by the
integration test (the snippet run from the project's virtualenv) and the install tier (run from the
installed wheel, outside the checkout).

The snippet is read from README.md (so the README cannot drift from what is tested). Only its
placeholders are filled in: the broker, group, topic and events path, and a `process` that writes each
record it finished to a file.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka import Producer

from kafka_coop import CoopConsumer, RebalanceEvent
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
EPILOGUE = """
print("after the block", flush=True)
DONE.write(f"module {sys.modules['kafka_coop'].__file__}\\n")
"""

# Starts `python <args>` (the service) with its stdout and stderr piped, from one interpreter or another.
Launch = Callable[[list[str]], subprocess.Popen[str]]


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
    """The other member, in the test's process, polling on a thread."""

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


@contextmanager
def running_survivor(bootstrap: str, group: str, topic: str) -> Iterator[Survivor]:
    """The survivor, once it owns every partition (before the service joins)."""
    member = Survivor(bootstrap, group, topic)
    try:
        wait_for(lambda: member.owns() == PARTITIONS, what="the survivor to own every partition")
        yield member
    finally:
        member.close()


def produce(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for p in range(PARTITIONS):
        for i in range(PER_PARTITION):
            producer.produce(topic, f"order-{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0


def events(path: Path) -> list[RebalanceEvent]:
    if not path.exists():
        return []
    return [RebalanceEvent.model_validate_json(line) for line in path.read_text().splitlines() if line]


def done(path: Path) -> dict[int, int]:
    """partition -> the next offset after the last record the service processed."""
    last: dict[int, int] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        if line.startswith("done "):
            _, partition, offset = line.split()
            last[int(partition)] = max(last.get(int(partition), -1), int(offset)) + 1
    return last


def module_file(path: Path) -> str:
    """Where the service imported kafka_coop from (written after its block ended)."""
    lines = [line for line in path.read_text().splitlines() if line.startswith("module ")]
    assert len(lines) == 1, lines
    return lines[0].removeprefix("module ")


def start_service(
    launch: Launch,
    program: str,
    events_path: Path,
    done_path: Path,
    survivor: Survivor,
    bootstrap: str,
    topic: str,
) -> subprocess.Popen[str]:
    """The service, once it shares the topic with the survivor and has processed records of its own."""
    service = launch(["-c", program, str(done_path)])

    def shared() -> bool:
        mine = events(events_path)
        return bool(mine) and len(mine[-1].owned) == PARTITIONS // 2 and survivor.owns() == PARTITIONS // 2

    wait_for(lambda: shared() or service.poll() is not None, what="the two members to share the topic")
    assert service.poll() is None, service.communicate()
    # The README's conf starts a new group at the end (librdkafka's default "latest"), resolved a
    # moment after the assignment: produce until the service has taken records of every partition it owns.
    deadline = time.monotonic() + 60
    while len(done(done_path)) < PARTITIONS // 2:
        assert time.monotonic() < deadline, f"the service processed no records: {done(done_path)}"
        produce(bootstrap, topic)
        time.sleep(0.5)
    return service

"""The service examples (examples/service*.py), run as the processes they are, on the sandbox.

The committed offsets are read back from the broker and compared with what the service's own database
holds: a record is committed only once it is in the database, and everything in the database is
committed when the service stops on SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_coop.admin import ClusterAdmin
from kafka_coop.events import RebalanceEvent
from tests.integration.members import wait_for

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
PARTITIONS = 3
PER_PARTITION = 10
SERVICES = ["service.py", "service_async.py"]


def _produce(bootstrap: str, topic: str, bad: tuple[int, int] | None = None) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for p in range(PARTITIONS):
        for i in range(PER_PARTITION):
            order = {"id": f"o-{p}-{i}", "amount": i * 1.5}
            value = b"not json" if (p, i) == bad else json.dumps(order).encode()
            producer.produce(topic, value, partition=p)
    assert producer.flush(30) == 0


def _rows(db: Path) -> dict[int, list[int]]:
    """partition -> offsets the service wrote, from its own database."""
    if not db.exists():
        return {}
    with sqlite3.connect(db) as conn:
        # sqlite creates the file on connect and the service creates the table a moment later: a poll
        # between the two finds a database without the table, which holds nothing yet.
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'orders'").fetchone():
            return {}
        rows = conn.execute('SELECT partition, "offset" FROM orders ORDER BY partition, "offset"').fetchall()
    out: dict[int, list[int]] = {}
    for partition, offset in rows:
        out.setdefault(partition, []).append(offset)
    return out


@pytest.fixture
def start_service(bootstrap: str, tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def start(example: str, topic: str, group: str) -> subprocess.Popen[str]:
        env = {
            **os.environ,
            "KAFKA_BOOTSTRAP": bootstrap,
            "ORDERS_TOPIC": topic,
            "ORDERS_GROUP": group,
            "ORDERS_DB": str(tmp_path / "orders.db"),
            "ORDERS_EVENTS": str(tmp_path / "events.jsonl"),
        }
        proc = subprocess.Popen(
            [sys.executable, str(EXAMPLES / example)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)


def _events(tmp_path: Path) -> list[RebalanceEvent]:
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    return [RebalanceEvent.model_validate_json(line) for line in lines]


@pytest.mark.parametrize("example", SERVICES)
def test_on_sigterm_the_service_commits_every_record_it_wrote_and_exits_0(
    example: str,
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    start_service: Callable[..., subprocess.Popen[str]],
    tmp_path: Path,
) -> None:
    topic, group = topic_factory(PARTITIONS), unique("orders")
    _produce(bootstrap, topic)
    service = start_service(example, topic, group)
    db = tmp_path / "orders.db"
    wait_for(
        lambda: sum(map(len, _rows(db).values())) == PARTITIONS * PER_PARTITION or service.poll() is not None,
        what="the service to write every order",
    )
    service.send_signal(signal.SIGTERM)
    _, stderr = service.communicate(timeout=60)
    assert service.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert _rows(db) == {p: list(range(PER_PARTITION)) for p in range(PARTITIONS)}
    committed = {o.partition: o.committed for o in admin.offsets(group)}
    assert committed == {p: PER_PARTITION for p in range(PARTITIONS)}
    kinds = [e.kind for e in _events(tmp_path)]
    assert kinds[0] == "started" and kinds[-1] == "closed" and "assigned" in kinds, kinds


@pytest.mark.parametrize("example", SERVICES)
def test_a_record_the_service_cannot_process_is_not_committed_and_the_service_exits_1(
    example: str,
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    start_service: Callable[..., subprocess.Popen[str]],
    tmp_path: Path,
) -> None:
    topic, group = topic_factory(PARTITIONS), unique("orders")
    _produce(bootstrap, topic, bad=(0, 3))
    service = start_service(example, topic, group)
    _, stderr = service.communicate(timeout=90)
    assert service.returncode == 1, stderr
    assert "Traceback" not in stderr, stderr
    assert f"record {topic}/0@3 is not an order" in stderr
    rows = _rows(tmp_path / "orders.db")
    assert rows[0] == [0, 1, 2]
    committed = {o.partition: o.committed for o in admin.offsets(group)}
    assert committed[0] == 3, "the bad record is redelivered to the next owner"
    for p in (1, 2):  # whatever the service wrote before it stopped is committed, nothing more
        # (none written: the batch that raised may have handed out its record 0 unfinished; 0 or nothing)
        expected = (max(rows[p]) + 1,) if rows.get(p) else (None, 0)
        assert committed.get(p) in expected, (p, rows, committed)


def test_the_pipelined_service_commits_every_record_its_tasks_finished_and_exits_0_on_sigterm(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    start_service: Callable[..., subprocess.Popen[str]],
    tmp_path: Path,
) -> None:
    topic, group = topic_factory(PARTITIONS), unique("pipelined")
    _produce(bootstrap, topic)
    service = start_service("service_pipelined.py", topic, group)
    db = tmp_path / "orders.db"
    wait_for(
        lambda: sum(map(len, _rows(db).values())) == PARTITIONS * PER_PARTITION or service.poll() is not None,
        what="the service to write every order",
    )
    service.send_signal(signal.SIGTERM)
    _, stderr = service.communicate(timeout=60)
    assert service.returncode == 0, stderr
    assert _rows(db) == {p: list(range(PER_PARTITION)) for p in range(PARTITIONS)}
    assert {o.partition: o.committed for o in admin.offsets(group)} == {
        p: PER_PARTITION for p in range(PARTITIONS)
    }


def test_the_pipelined_service_never_commits_past_a_record_that_failed(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    start_service: Callable[..., subprocess.Popen[str]],
    tmp_path: Path,
) -> None:
    topic, group = topic_factory(PARTITIONS), unique("pipelined-bad")
    _produce(bootstrap, topic, bad=(0, 3))
    service = start_service("service_pipelined.py", topic, group)
    _, stderr = service.communicate(timeout=90)
    assert service.returncode == 1, stderr
    assert "Traceback" not in stderr and f"record {topic}/0@3 is not an order" in stderr, stderr
    rows = _rows(tmp_path / "orders.db")
    committed = {o.partition: o.committed for o in admin.offsets(group)}
    assert committed[0] == 3, "records after it may be written (they come again); the commit stops at it"
    for p in range(PARTITIONS):  # below every commit, every record was written
        assert set(range(committed.get(p) or 0)) <= set(rows.get(p, [])), (p, rows, committed)


def _invoices(bootstrap: str, topic: str, expected: int) -> list[dict[str, object]]:
    """Every invoice a read_committed reader sees (waits until `expected` or 30 s)."""
    reader = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{topic}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": "false",
        }
    )
    reader.assign([TopicPartition(topic, 0, 0)])
    seen: list[dict[str, object]] = []
    deadline = time.monotonic() + 30
    while len(seen) < expected and time.monotonic() < deadline:
        msg = reader.poll(0.5)
        if msg is not None and not msg.error():
            seen.append(json.loads(msg.value() or b"{}"))
    end = time.monotonic() + 2
    while time.monotonic() < end:  # nothing more than expected arrives
        msg = reader.poll(0.2)
        if msg is not None and not msg.error():
            seen.append(json.loads(msg.value() or b"{}"))
    reader.close()
    return seen


EOS_PER_PARTITION = 200


def test_the_transactional_service_invoices_every_order_exactly_once_across_a_sigkill(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    start_service: Callable[..., subprocess.Popen[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    orders, invoices, group = topic_factory(PARTITIONS), topic_factory(1), unique("invoicer")
    producer = Producer({"bootstrap.servers": bootstrap})
    for p in range(PARTITIONS):
        for i in range(EOS_PER_PARTITION):
            producer.produce(orders, json.dumps({"id": f"o-{p}-{i}", "amount": i}).encode(), partition=p)
    assert producer.flush(30) == 0
    monkeypatch.setenv("INVOICES_TOPIC", invoices)
    monkeypatch.setenv("ORDERS_TRANSACTIONAL_ID", f"{group}-0")
    monkeypatch.setenv("ORDERS_WORK_MS", "700")
    first = start_service("service_eos.py", orders, group)
    # Killed in the middle: after a committed batch, while the next one's transaction is open (700 ms each).
    wait_for(lambda: bool(admin.offsets(group)), timeout_s=60, what="a first committed batch")
    time.sleep(0.3)
    first.kill()
    first.communicate(timeout=30)
    monkeypatch.setenv("ORDERS_WORK_MS", "0")
    second = start_service("service_eos.py", orders, group)
    total = PARTITIONS * EOS_PER_PARTITION

    def all_committed() -> bool:
        return sum(o.committed or 0 for o in admin.offsets(group)) == total

    wait_for(all_committed, timeout_s=90, what="every order committed")
    second.send_signal(signal.SIGTERM)
    _, stderr = second.communicate(timeout=60)
    assert second.returncode == 0, stderr
    seen = _invoices(bootstrap, invoices, total)
    sources = sorted(tuple(i["source"]) for i in seen)  # type: ignore[arg-type]
    assert sources == sorted((p, i) for p in range(PARTITIONS) for i in range(EOS_PER_PARTITION)), (
        f"{len(seen)} invoices for {total} orders"
    )

"""Brokers set up for measuring, and what benchmarks do to them: start deadlines for a loaded machine,
the coordinator's DEBUG log, CPU priority, topics deleted between scenarios.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.harness.broker_clock import DEBUG_PROPERTY
from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION

# Broker settings beyond the sandbox's: only the floor of the KIP-848 session timeout is lowered, so the
# slow-restart case can give its group a 6 s session like the classic members get; the default (45 s)
# and everything else stay as shipped.
BROKER_CONFIG = {
    "group.consumer.min.session.timeout.ms": "6000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
}
BROKER_START_TIMEOUT_S = 300.0


@contextlib.contextmanager
def patient_broker(tmp: Path) -> Iterator[Any]:
    """Like bench.harness.frame.sandbox, with a longer start deadline: on a shared 2-core box under a load of
    15+ the broker has needed more than the default 120 s to serve its first group request."""
    from kafka_coop.sandbox import Sandbox, free_port

    box = Sandbox(
        dir=tmp / "kafka", port=free_port(), kafka_version=DEFAULT_KAFKA_VERSION, config=BROKER_CONFIG
    )
    box.start(timeout_s=BROKER_START_TIMEOUT_S)
    try:
        yield box
    finally:
        box.stop()


def delete_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_topics([topic], operation_timeout=30).values():
        with contextlib.suppress(Exception):
            future.result(timeout=30)


@contextlib.contextmanager
def broker_with_coordinator_debug(tmp: Path, extra: Sequence[str] = ()) -> Iterator[Any]:
    """The sandbox broker with GroupMetadataManager at DEBUG (KIP-848 member states), nothing else
    changed but the `extra` JVM properties. JAVA_TOOL_OPTIONS is set only while the broker JVM starts,
    so members never see it."""
    from kafka_coop.sandbox import Sandbox, free_port

    previous = os.environ.get("JAVA_TOOL_OPTIONS")
    ours = " ".join((DEBUG_PROPERTY, *extra))
    os.environ["JAVA_TOOL_OPTIONS"] = f"{previous} {ours}" if previous else ours
    box = Sandbox(
        dir=tmp / "kafka", port=free_port(), kafka_version=DEFAULT_KAFKA_VERSION, config=BROKER_CONFIG
    )
    try:
        box.start(timeout_s=BROKER_START_TIMEOUT_S)
    finally:
        if previous is None:
            os.environ.pop("JAVA_TOOL_OPTIONS", None)
        else:
            os.environ["JAVA_TOOL_OPTIONS"] = previous
    try:
        yield box
    finally:
        box.stop()


def renice_process(pid: int | None, nice: int) -> int:
    """Lower the CPU priority of `pid`: its scheduler autogroup (Linux puts each session in one and
    shares the CPU between groups first; members and the broker run in sessions of their own) and
    every thread of it (nice is per thread). Returns the threads set."""
    if pid is None or nice == 0:
        return 0
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(str(nice))
    done = 0
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return 0
    for tid in tids:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
            done += 1
        except OSError:
            continue  # the thread ended meanwhile
    return done

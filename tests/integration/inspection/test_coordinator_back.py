"""A command's admin client outlives an outage of the group coordinator and keeps working.

librdkafka (2.16) aborts the whole process (`rd_kafka_enq_once_del_source_return: Assertion
'eonce->refcnt > 0'`) when one of its coordinator requests timed out while the coordinator was
unreachable and the coordinator comes back while that client still lives: `verify-group` died that way
in CI while a frozen coordinator moved. The outage here is toxiproxy refusing every connection of the
proxied bootstrap; the client runs in its own process, so an abort fails the test instead of pytest.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_coop.admin import ClusterAdmin
from testbed.faults import NetworkFaults

SCRIPT = Path(__file__).with_name("coordinator_back.py")


def _commit_one_offset(bootstrap: str, topic: str, group: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    finally:
        consumer.close()


@pytest.mark.parametrize("call", ["describe", "describe-all", "offsets"])
def test_an_admin_client_that_timed_out_on_a_gone_coordinator_survives_its_return(
    call: str,
    faults: NetworkFaults,
    admin: ClusterAdmin,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic, group = topic_factory(1), unique(f"back-{call}")
    _commit_one_offset(bootstrap, topic, group)
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), faults.bootstrap, group, call],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert proc.stdout.readline().startswith("answered"), proc.stderr.read() if proc.stderr else ""
        faults.down()
        try:
            proc.stdin.write("\n")
            proc.stdin.flush()
            during = proc.stdout.readline()
        finally:
            faults.heal()
        assert during.startswith("unavailable"), during
        proc.stdin.write("\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-6000:]
    assert out.startswith("answered"), out

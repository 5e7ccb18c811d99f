"""A partition listed twice in `incremental_unassign` aborts the process in librdkafka 2.16
(rd_kafka_assignment_subtract's RD_BUG: the second removal finds it gone), through raw confluent-kafka
too. kafka-coop refuses the call instead, before the client sees it, with the exception confluent raises
for a duplicate in `incremental_assign` (KafkaException, _INVALID_ARG), and the assignment is left as it
was. `incremental_assign` with a duplicate is already refused cleanly by librdkafka: kafka-coop ends it the
same way. Each program runs in a child process, so an abort fails the test instead of ending the run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

PROGRAM = """
import asyncio, json, sys
from confluent_kafka import Consumer, KafkaException, TopicPartition as TP
from confluent_kafka.aio import AIOConsumer
from kafka_coop import CoopAIOConsumer, CoopConsumer

impl, call = sys.argv[1], sys.argv[2]
conf = {"bootstrap.servers": "127.0.0.1:9", "group.id": "duplicates", "log_level": 0,
        "enable.auto.commit": False}
first = [TP("t", 0), TP("t", 1)]
twice = [TP("t", 0, 5), TP("t", 0, 7)]

async def run(c):
    async def call_(name, *args):
        result = getattr(c, name)(*args)
        return await result if hasattr(result, "__await__") else result
    if call == "incremental_unassign":
        await call_("incremental_assign", first)
    try:
        await call_(call, twice)
        outcome = "ok"
    except KafkaException as exc:
        outcome = f"KafkaException({exc.args[0].name()}): {exc.args[0].str()}"
    owned = sorted(tp.partition for tp in await call_("assignment"))
    close = c.close()
    if hasattr(close, "__await__"):
        await close
    return {"outcome": outcome, "owned": owned}

async def main():
    if impl == "confluent":
        c = Consumer(conf)
    elif impl == "confluent-aio":
        c = AIOConsumer(conf)
    elif impl == "sync":
        c = CoopConsumer(conf, handle_signals=False)
    else:
        c = CoopAIOConsumer(conf, handle_signals=False)
    print(json.dumps(await run(c)), flush=True)

asyncio.run(main())
"""


def run(impl: str, call: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, impl, call],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )


def test_raw_confluent_aborts_the_process_on_a_duplicate_in_incremental_unassign() -> None:
    """Why kafka-coop refuses it: this is librdkafka's behaviour, not a kafka-coop defect."""
    proc = run("confluent", "incremental_unassign")
    assert proc.returncode == -signal.SIGABRT, proc.stdout + proc.stderr
    assert "rd_kafka_assignment_subtract" in proc.stderr


@pytest.mark.parametrize("driver", ["sync", "aio"])
def test_a_duplicate_in_incremental_unassign_is_refused_and_the_assignment_kept(driver: str) -> None:
    proc = run(driver, "incremental_unassign")
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["outcome"].startswith("KafkaException(_INVALID_ARG): Duplicate t [0]")
    assert result["owned"] == [0, 1]


@pytest.mark.parametrize(("driver", "raw"), [("sync", "confluent"), ("aio", "confluent-aio")])
def test_a_duplicate_in_incremental_assign_is_refused_as_confluent_refuses_it(driver: str, raw: str) -> None:
    want, got = run(raw, "incremental_assign"), run(driver, "incremental_assign")
    assert (want.returncode, got.returncode) == (0, 0), want.stderr[-1000:] + got.stderr[-1000:]
    assert json.loads(got.stdout) == json.loads(want.stdout)

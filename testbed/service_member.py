"""A service-shaped Python member for the rebalance benchmarks: real time per record, batch commits.

`python -m testbed.service_member --bootstrap B --group G --topics T --name m3 --protocol cooperative
[--instance-id m3] --events E --records R [--process-ms 2] [--batch 500] [--conf k=v]...`

The loop is the one docs/consumer.md gives services: `consume(num_messages=batch, timeout=1.0)`, process
each record (here: sleep `--process-ms`, the stand-in for a database write or an HTTP call), mark it done,
and commit synchronously after the batch. That is what makes a rebalance expensive for members nobody
touched: librdkafka serves the rebalance (revoke, rejoin) only inside `consume()`, so a member in the
middle of a batch holds up every other member's JoinGroup until its batch is done.

SIGTERM ends the loop after the record in hand (what examples/service.py does): `close()` commits what
was marked done and the rest of the batch is redelivered. Record-log lines are the rolling-bounce
format, `client topic partition offset produced_ms processed_ms`; events are RebalanceEvent JSON lines.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import signal
import sys
import time
from types import FrameType
from typing import Any

PROTOCOL_CONF: dict[str, dict[str, str]] = {
    "eager": {"partition.assignment.strategy": "range"},
    "cooperative": {"partition.assignment.strategy": "cooperative-sticky"},
    "consumer": {"group.protocol": "consumer"},
}
CONSUME_TIMEOUT_S = 1.0  # docs/consumer.md's service loop
# What `kafka-coop consume` sets for the same reason (cli/consume.py): a restarted member reaches its
# coordinator ~40 ms sooner. Both sides of every ratio run with it.
RECONNECT_BACKOFF_MS = "20"


class _Stop:
    requested = False


class _Trace:
    """Bench instrumentation (`--trace FILE`, bench/restart_floor.py): one `mark wall_ms pid cpu_ms` line
    per lifecycle point of this process (cpu_ms: the process's CPU time so far, which load does not
    stretch). Off unless asked for."""

    out: Any = None

    @classmethod
    def mark(cls, name: str) -> None:
        if cls.out is not None:
            cls.out.write(
                f"{name} {time.time_ns() // 1_000_000} {os.getpid()} {time.process_time_ns() // 1_000_000}\n"
            )
            cls.out.flush()


def _on_term(_signum: int, _frame: FrameType | None) -> None:
    _Stop.requested = True
    _Trace.mark("sigterm")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m testbed.service_member")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topics", required=True, help="comma-separated")
    parser.add_argument("--name", required=True, help="client.id")
    parser.add_argument("--protocol", choices=sorted(PROTOCOL_CONF), required=True)
    parser.add_argument("--instance-id", default=None)
    parser.add_argument("--events", required=True)
    parser.add_argument("--records", default=None)
    parser.add_argument("--process-ms", type=float, default=2.0)
    parser.add_argument("--batch", type=int, default=500, help="consume(num_messages=...)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--trace", default=None, help="bench only: lifecycle marks to this file")
    return parser.parse_args(argv)


def consumer_conf(ns: argparse.Namespace) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": ns.bootstrap,
        "group.id": ns.group,
        "client.id": ns.name,
        "enable.auto.commit": "false",
        "enable.auto.offset.store": "false",  # explicit marks: mark_done after each record
        "auto.offset.reset": "earliest",
        "reconnect.backoff.ms": RECONNECT_BACKOFF_MS,
        **PROTOCOL_CONF[ns.protocol],
    }
    if ns.instance_id:
        conf["group.instance.id"] = ns.instance_id
    for pair in ns.conf:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--conf {pair!r} is not KEY=VALUE")
        conf[key] = value
    return conf


def main(argv: list[str] | None = None) -> int:
    ns = parse_args(argv)
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, _on_term)
    if ns.trace:
        _Trace.out = open(ns.trace, "a", encoding="utf-8")  # noqa: SIM115
        _Trace.mark("main")

    from confluent_kafka import KafkaException

    from kafka_coop.consumer import CoopConsumer

    _Trace.mark("imports_done")
    consumer = CoopConsumer(consumer_conf(ns), events=ns.events, manifests=False, duplicate_check="off")
    _Trace.mark("constructed")
    records = open(ns.records, "a", encoding="utf-8") if ns.records else None  # noqa: SIM115
    work_s = ns.process_ms / 1000.0
    fetched = False
    try:
        consumer.subscribe(ns.topics.split(","))
        _Trace.mark("subscribed")
        while not _Stop.requested:
            batch = consumer.consume(num_messages=ns.batch, timeout=CONSUME_TIMEOUT_S)
            if _Stop.requested:
                _Trace.mark("consume_returned")
            if batch and not fetched:
                fetched = True
                _Trace.mark("first_records")
            done = 0
            for msg in batch:
                if _Stop.requested:
                    break  # the record in hand is finished; the rest is redelivered
                if msg.error() is not None:
                    continue
                if work_s:
                    time.sleep(work_s)
                if records is not None:
                    records.write(
                        f"{ns.name} {msg.topic()} {msg.partition()} {msg.offset()} "
                        f"{msg.timestamp()[1]} {time.time_ns() // 1_000_000}\n"
                    )
                consumer.mark_done(msg)
                done += 1
            if records is not None and done:
                records.flush()
            if done:  # a refusal (rebalance under way): the revoke's commit or the next batch's covers it
                with contextlib.suppress(KafkaException):
                    consumer.commit(asynchronous=False)
    finally:
        _Trace.mark("loop_end")
        consumer.close()
        _Trace.mark("close_returned")
        if records is not None:
            records.close()
    return 0


def _exit(code: int) -> None:
    """End the process the way `kafka-coop consume` does (cli/main.py `_exit`): everything is closed and
    flushed by now, so skip the interpreter's teardown, whose last garbage collection over pydantic's
    schemas and the rest of the imports costs ~0.1 s of CPU, and which a restarted member's partitions
    would wait for (bench/restart_floor.py measures it)."""
    gc.freeze()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    _exit(main())

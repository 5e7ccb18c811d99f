"""A service-shaped Python member for the rebalance benchmarks: real time per record, batch commits.

`python -m bench._service_member --bootstrap B --group G --topics T --name m3 --protocol cooperative
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


def _on_term(_signum: int, _frame: FrameType | None) -> None:
    _Stop.requested = True


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench._service_member")
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
    return parser.parse_args(argv)


def consumer_conf(ns: argparse.Namespace) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": ns.bootstrap,
        "group.id": ns.group,
        "client.id": ns.name,
        "enable.auto.commit": "false",
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

    from confluent_kafka import KafkaException

    from kafka_coop.consumer import CoopConsumer

    consumer = CoopConsumer(consumer_conf(ns), events=ns.events, manifests=False, duplicate_check="off")
    records = open(ns.records, "a", encoding="utf-8") if ns.records else None  # noqa: SIM115
    work_s = ns.process_ms / 1000.0
    try:
        consumer.subscribe(ns.topics.split(","))
        while not _Stop.requested:
            batch = consumer.consume(num_messages=ns.batch, timeout=CONSUME_TIMEOUT_S)
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
        consumer.close()
        if records is not None:
            records.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One run of the close soak (bench/close_soak.py), in its own process: the librdkafka issue 4041 scenario.

`python -m testbed.close_soak_member --bootstrap B --rebalance eager-range --offsets explicit --log FILE`

On a fresh topic of 2 partitions with 10 records each, static member `a` (session.timeout.ms 6000,
max.poll.interval.ms 7000, heartbeat.interval.ms 500) consumes the 20 records, marking each done
(`--offsets explicit`: enable.auto.offset.store=false) or not (`librdkafka-defaults`), and commits
offset 4 of both partitions synchronously; a static joiner `b` subscribes and polls 0.5 s; then nothing
polls until 10 s after a's last poll (both overrun their poll limit, a rebalance queued and
unserved); then a.close(), then b.close(). librdkafka's log (`--debug`, cgrp,consumer by default) goes
to FILE through the consumers' logger.

Prints one JSON line: `seen` (records a consumed), `failure` / `failure_b` (a's / b's
`CoopConsumer.failure`, or null), `errors` (a's event errors; b has no event sink, as in the
reproduction), `close_a_s` / `close_b_s` (how long each close took) and `error` (an exception that
stopped the run, or null; the process then exits 2). A close that hangs prints nothing: the parent
kills the process. Each stage of the run is marked on stderr (`stage closing_a`, ...), so a hung run's
last mark names the close that hung.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import uuid
from typing import Any

RECORDS_PER_PARTITION = 10
PARTITIONS = 2
COMMIT_OFFSET = 4
STALL_S = 10.0
JOINER_POLL_S = 0.5
CONSUME_TIMEOUT_S = 60.0
REBALANCES: dict[str, dict[str, str]] = {
    "eager-range": {"partition.assignment.strategy": "range"},
    "cooperative-sticky": {"partition.assignment.strategy": "cooperative-sticky"},
}
OFFSETS = ("explicit", "librdkafka-defaults")
TIMING = {"session.timeout.ms": "6000", "max.poll.interval.ms": "7000", "heartbeat.interval.ms": "500"}


def consumer_conf(
    bootstrap: str, group: str, instance_id: str, rebalance: str, *, marks: bool, debug: str
) -> dict[str, Any]:
    """One static member's librdkafka conf: explicit marks or librdkafka's defaults for the offsets."""
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        **({"enable.auto.offset.store": "false"} if marks else {}),
        **REBALANCES[rebalance],
        "group.instance.id": instance_id,
        **TIMING,
    }
    if debug:
        conf["debug"] = debug
    return conf


def stage(name: str) -> None:
    """Where the run is, on stderr: the last stage of a hung run names the close that hung."""
    print(f"stage {name}", file=sys.stderr, flush=True)


def scenario(bootstrap: str, rebalance: str, offsets: str, debug: str) -> dict[str, Any]:
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    from kafka_coop.consumer import CoopConsumer
    from kafka_coop.events import RebalanceEvent

    stage("setup")
    tag = uuid.uuid4().hex[:8]
    topic, group = f"close-soak-{tag}", f"close-soak-{rebalance}-{tag}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result()
    producer = Producer({"bootstrap.servers": bootstrap})
    for part in range(PARTITIONS):
        for i in range(RECORDS_PER_PARTITION):
            producer.produce(topic, f"{part}-{i}".encode(), partition=part)
    if producer.flush(30) != 0:
        raise RuntimeError("records not delivered in 30 s")
    marks = offsets == "explicit"
    events: list[RebalanceEvent] = []
    a_conf = consumer_conf(bootstrap, group, f"{group}-a", rebalance, marks=marks, debug=debug)
    a = CoopConsumer(a_conf, events=events.append)
    a.subscribe([topic])
    stage("consuming")
    seen, deadline = 0, time.monotonic() + CONSUME_TIMEOUT_S
    while seen < PARTITIONS * RECORDS_PER_PARTITION and time.monotonic() < deadline:
        msg = a.poll(0.2)
        if msg is None or msg.error():
            continue
        if marks:
            a.mark_done(msg)
        seen += 1
    if seen < PARTITIONS * RECORDS_PER_PARTITION:
        raise RuntimeError(f"consumed {seen} records in {CONSUME_TIMEOUT_S:g} s")
    a.commit(offsets=[TopicPartition(topic, p, COMMIT_OFFSET) for p in range(PARTITIONS)], asynchronous=False)
    stuck = time.monotonic()
    stage("stalled")
    b_conf = consumer_conf(bootstrap, group, f"{group}-b", rebalance, marks=True, debug=debug)
    b = CoopConsumer(b_conf)  # no event sink, as in the reproduction
    b.subscribe([topic])
    b.poll(JOINER_POLL_S)
    time.sleep(max(0.0, STALL_S - (time.monotonic() - stuck)))
    log = logging.getLogger("close-soak")
    log.info("closing a")
    stage("closing_a")
    t0 = time.monotonic()
    a.close()
    t1 = time.monotonic()
    log.info("closed a; closing b")
    stage("closing_b")
    b.close()
    t2 = time.monotonic()
    log.info("closed b")
    stage("closed")
    return {
        "seen": seen,
        "failure": None if a.failure is None else str(a.failure),
        "failure_b": None if b.failure is None else str(b.failure),
        "errors": [e.error for e in events if e.error],
        "close_a_s": round(t1 - t0, 3),
        "close_b_s": round(t2 - t1, 3),
        "error": None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.close_soak_member")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--rebalance", choices=tuple(REBALANCES), required=True)
    parser.add_argument("--offsets", choices=OFFSETS, required=True)
    parser.add_argument("--log", required=True, help="file for the consumers' (and librdkafka's) log")
    parser.add_argument("--debug", default="cgrp,consumer", help="librdkafka debug contexts ('' for none)")
    ns = parser.parse_args(argv)
    logging.basicConfig(
        filename=ns.log,
        level=logging.DEBUG,
        format="%(relativeCreated)d %(threadName)s %(name)s %(message)s",
    )
    try:
        outcome = scenario(ns.bootstrap, ns.rebalance, ns.offsets, ns.debug)
    except Exception as exc:
        logging.getLogger("close-soak").exception("run failed")
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
        return 2
    print(json.dumps(outcome), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

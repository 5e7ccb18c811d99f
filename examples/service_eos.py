"""Exactly-once consume-transform-produce on `CoopConsumer`: orders in, invoices out, one transaction a batch.

What it shows (docs/consumer.md "Exactly once"):

- `transactional=True`: the producer's transactions own the commit. kafka-coop commits nothing by
  itself (no interval, revoke or close commit); `consumer.committable()` gives the offsets of what the
  service consumed, with leader epochs, for `send_offsets_to_transaction`;
- each batch of `consume` becomes one transaction: its invoices and its input offsets are committed
  together, or not at all. A crash (SIGKILL) in the middle aborts the open transaction when the next
  instance starts (same `transactional.id`), and the group resumes at the last committed batch: every
  order has exactly one invoice for readers with `isolation.level=read_committed`;
- no transaction is open while `consume` runs, so a revoke (served inside `consume`) has nothing to
  finish; a service that keeps a transaction open across calls would commit or abort it in
  `on_revoked`.

Environment: KAFKA_BOOTSTRAP (required), ORDERS_TOPIC (orders), INVOICES_TOPIC (invoices), ORDERS_GROUP
(invoicer), ORDERS_TRANSACTIONAL_ID (invoicer-0: one per instance, stable across its restarts),
ORDERS_EVENTS (JSON lines; unset: none), ORDERS_WORK_MS (pause per batch, 0).

    KAFKA_BOOTSTRAP=127.0.0.1:9092 python examples/service_eos.py

Exit codes: 0 after SIGTERM/SIGINT, 1 when a record could not be processed (its batch aborted).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping

from confluent_kafka import Message, Producer

from kafka_coop import CoopConsumer

log = logging.getLogger("invoicer")
BATCH = 100
CONSUME_TIMEOUT_S = 1.0
TRANSACTION_TIMEOUT_S = 30.0


class BadOrder(ValueError):
    """A record that is not an order: its batch is aborted, nothing of it is committed."""


def consumer_conf(environ: Mapping[str, str]) -> dict[str, str]:
    return {
        "bootstrap.servers": environ["KAFKA_BOOTSTRAP"],
        "group.id": environ.get("ORDERS_GROUP", "invoicer"),
        "partition.assignment.strategy": "cooperative-sticky",
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",  # read only what upstream transactions committed
    }


def producer_conf(environ: Mapping[str, str]) -> dict[str, str]:
    return {
        "bootstrap.servers": environ["KAFKA_BOOTSTRAP"],
        "transactional.id": environ.get("ORDERS_TRANSACTIONAL_ID", "invoicer-0"),
    }


def invoice(msg: Message) -> tuple[bytes, bytes]:
    """The transformation: an order record into an invoice (key: the order id)."""
    try:
        order = json.loads(msg.value() or b"")
        order_id, amount = str(order["id"]), float(order["amount"])
    except (ValueError, KeyError, TypeError) as exc:
        raise BadOrder(
            f"record {msg.topic()}/{msg.partition()}@{msg.offset()} is not an order ({exc})"
        ) from None
    body = {"order": order_id, "total": round(amount * 1.2, 2), "source": [msg.partition(), msg.offset()]}
    return order_id.encode(), json.dumps(body).encode()


def run(stop: threading.Event, environ: Mapping[str, str]) -> None:
    orders = environ.get("ORDERS_TOPIC", "orders")
    invoices = environ.get("INVOICES_TOPIC", "invoices")
    work_s = int(environ.get("ORDERS_WORK_MS", "0")) / 1000.0
    producer = Producer(producer_conf(environ))
    producer.init_transactions(TRANSACTION_TIMEOUT_S)  # fences an earlier instance, aborts its open one
    with CoopConsumer(
        consumer_conf(environ), transactional=True, events=environ.get("ORDERS_EVENTS")
    ) as consumer:
        consumer.subscribe([orders])
        log.info("invoicing %s into %s as %r", orders, invoices, consumer)
        while not stop.is_set():
            records = [
                m for m in consumer.consume(num_messages=BATCH, timeout=CONSUME_TIMEOUT_S) if not m.error()
            ]
            if not records:
                continue
            producer.begin_transaction()
            try:
                for msg in records:
                    key, value = invoice(msg)
                    producer.produce(invoices, value, key=key)
                time.sleep(work_s)
                # What this batch consumed, committed in the same transaction as its invoices.
                producer.send_offsets_to_transaction(
                    consumer.committable(), consumer.consumer_group_metadata(), TRANSACTION_TIMEOUT_S
                )
                producer.commit_transaction(TRANSACTION_TIMEOUT_S)
            except BaseException:
                producer.abort_transaction(TRANSACTION_TIMEOUT_S)
                raise


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        run(stop, os.environ)
    except BadOrder as exc:
        log.error("Stopped: %s. Its batch was aborted and will be consumed again.", exc)
        return 1
    log.info("stopped cleanly: every committed batch has its invoices, nothing else does")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""An orders service on `CoopConsumer`: each record is written to a database; that is all it does.

What it shows (docs/consumer.md):

- the drop-in: the loop a `confluent_kafka.Consumer` service runs, with `CoopConsumer` in its place and
  librdkafka's defaults (auto commit on). No `mark_done`: a record is done once the service polls past
  it, i.e. once its database write returned;
- the offset contract: a record whose processing raises is never committed: the `with` block exits on
  the exception, `close()` commits what was done before it, and the record is redelivered to whoever
  owns the partition next;
- graceful SIGTERM (Kubernetes) with no code of its own: the `with` block handles SIGTERM and SIGINT
  (docs/consumer.md "Stopping"): the record in hand is finished, the next `poll` ends the block, and
  the close commits what is done and leaves the group (revoking through the handler);
- rebalance events as JSON lines, for `kafka-coop report`.

Writes are idempotent (the order id is the key), because at-least-once means a record can come twice:
after a crash, after a kill, or when a partition moves before its last records were committed.

Environment: KAFKA_BOOTSTRAP (required), ORDERS_TOPIC (orders), ORDERS_GROUP (orders-service),
ORDERS_DB (orders.db), ORDERS_EVENTS (a JSON-lines path; unset: no events), ORDERS_INSTANCE_ID (a
static group.instance.id, e.g. the StatefulSet pod name; unset: dynamic membership).

    KAFKA_BOOTSTRAP=127.0.0.1:9092 python examples/service.py

Exit codes: 0 after SIGTERM/SIGINT, 1 when a record could not be processed.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import sys
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Message

from kafka_coop import CoopConsumer

log = logging.getLogger("orders-service")
POLL_TIMEOUT_S = 1.0


class BadOrder(ValueError):
    """A record that is not an order: processing it fails, so it is never marked done."""


def consumer_conf(environ: Mapping[str, str]) -> dict[str, str]:
    conf = {
        "bootstrap.servers": environ["KAFKA_BOOTSTRAP"],
        "group.id": environ.get("ORDERS_GROUP", "orders-service"),
        "partition.assignment.strategy": "cooperative-sticky",
        "auto.offset.reset": "earliest",
    }
    if environ.get("ORDERS_INSTANCE_ID"):
        conf["group.instance.id"] = environ["ORDERS_INSTANCE_ID"]
    return conf


class Orders:
    """The service's database: one row per order, written in its own transaction."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, check_same_thread=False)
        with self.db:
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, amount REAL NOT NULL, "
                "topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL)"
            )

    def save(self, order: dict[str, Any], topic: str, partition: int, offset: int) -> None:
        with self.db:  # committed when the block ends; only then is the record marked done
            self.db.execute(
                "INSERT OR REPLACE INTO orders VALUES (?, ?, ?, ?, ?)",
                (order["id"], order["amount"], topic, partition, offset),
            )

    def close(self) -> None:
        self.db.close()


def parse(value: bytes | None) -> dict[str, Any]:
    try:
        order = json.loads(value or b"")
        return {"id": str(order["id"]), "amount": float(order["amount"])}
    except (ValueError, KeyError, TypeError) as exc:
        raise BadOrder(f"not an order ({exc})") from None


def position(msg: Message) -> tuple[str, int, int]:
    """A record's topic, partition and offset (only error events lack them)."""
    topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
    if topic is None or partition is None or offset is None:
        raise ValueError(f"not a record: {msg.error()}")
    return topic, partition, offset


def run(environ: Mapping[str, str]) -> None:
    """Returns when SIGTERM/SIGINT ended the `with` block; raises BadOrder."""
    orders = Orders(environ.get("ORDERS_DB", "orders.db"))
    topic = environ.get("ORDERS_TOPIC", "orders")
    try:
        with CoopConsumer(consumer_conf(environ), events=environ.get("ORDERS_EVENTS")) as consumer:
            consumer.subscribe([topic])
            log.info("consuming %s as %r", topic, consumer)
            while True:
                msg = consumer.poll(POLL_TIMEOUT_S)
                if msg is None:
                    continue
                if msg.error():
                    log.warning("consumer error: %s", msg.error())
                    continue
                where = position(msg)
                try:
                    orders.save(parse(msg.value()), *where)
                except BadOrder as exc:
                    raise BadOrder(f"record {where[0]}/{where[1]}@{where[2]} is {exc}") from None
                # no mark, no commit: polling again says this record is done
    finally:
        orders.close()


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        run(os.environ)
    except BadOrder as exc:
        log.error("Stopped: %s. It was not committed, so it will be redelivered.", exc)
        return 1
    log.info("stopped cleanly: done records committed, group left")
    return 0


if __name__ == "__main__":
    sys.exit(main())

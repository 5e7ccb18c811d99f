"""The orders service of examples/service.py, as an asyncio service on `CoopAIOConsumer`, marking records.

Self-contained on purpose (copy it); the database and parsing parts are those of service.py. Records come
in batches from `consume`; each is written to the database (off the event loop, as a blocking driver
must be) and then marked done. Explicit marks (`enable.auto.offset.store=false`) make the commit exact
to the record, inside a batch: a record that cannot be processed ends the service, and the records of
its batch written before it are committed, it is not. SIGTERM stops the loop between records and
`async with` closes the consumer, committing what is done. The `on_revoked` hook is a coroutine: it
runs on the event loop while the partitions are still ours, before their commit.

Environment and exit codes as in examples/service.py.

    KAFKA_BOOTSTRAP=127.0.0.1:9092 python examples/service_async.py
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sqlite3
import sys
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Message

from kafka_coop import CoopAIOConsumer

log = logging.getLogger("orders-service-async")
BATCH = 100
CONSUME_TIMEOUT_S = 1.0


class BadOrder(ValueError):
    """A record that is not an order: processing it fails, so it is never marked done."""


def consumer_conf(environ: Mapping[str, str]) -> dict[str, str]:
    conf = {
        "bootstrap.servers": environ["KAFKA_BOOTSTRAP"],
        "group.id": environ.get("ORDERS_GROUP", "orders-service"),
        "partition.assignment.strategy": "cooperative-sticky",
        "auto.offset.reset": "earliest",
        "enable.auto.offset.store": "false",  # explicit marks: done is what mark_done says
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


async def run(stop: asyncio.Event, environ: Mapping[str, str]) -> None:
    orders = Orders(environ.get("ORDERS_DB", "orders.db"))
    topic = environ.get("ORDERS_TOPIC", "orders")

    async def on_revoked(partitions: list[tuple[str, int]]) -> None:
        # Nothing is in flight between two records here; a service with background work per partition
        # would finish (or cancel) it now and mark done what finished, before the commit.
        log.info("giving up %s; what is marked done is committed next", partitions)

    try:
        conf = consumer_conf(environ)
        async with CoopAIOConsumer(
            conf, events=environ.get("ORDERS_EVENTS"), on_revoked=on_revoked
        ) as consumer:
            await consumer.subscribe([topic])
            log.info("consuming %s as %r", topic, consumer)
            while not stop.is_set():
                for msg in await consumer.consume(num_messages=BATCH, timeout=CONSUME_TIMEOUT_S):
                    if msg.error():
                        log.warning("consumer error: %s", msg.error())
                        continue
                    where = position(msg)
                    try:
                        order = parse(msg.value())
                    except BadOrder as exc:
                        raise BadOrder(f"record {where[0]}/{where[1]}@{where[2]} is {exc}") from None
                    await asyncio.to_thread(orders.save, order, *where)
                    await consumer.mark_done(msg)
                    if stop.is_set():
                        break  # the rest of the batch is not done: it is redelivered, never committed
    finally:
        orders.close()


async def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await run(stop, os.environ)
    except BadOrder as exc:
        log.error("Stopped: %s. It was not committed, so it will be redelivered.", exc)
        return 1
    log.info("stopped cleanly: done records committed, group left")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

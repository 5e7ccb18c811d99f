"""The orders service, pipelined: one asyncio task per record, each marked done when it finishes.

What it shows (docs/consumer.md "Concurrent processing"):

- explicit marks (`enable.auto.offset.store=false`): records finish out of order, and each task marks
  its own record with `await consumer.mark_done(msg)`. A partition's committed offset is its lowest
  record not done yet, so it never passes a record still in flight or one that failed;
- marking never waits for the consumer: tasks mark while a `consume` is in flight, also while that
  `consume` runs a rebalance;
- `on_revoked` drains: it waits for the revoked partitions' tasks, so what they finish is committed
  before the partitions go;
- a record that cannot be processed stops the service (exit 1) and is never committed; the work already
  in flight is finished first. Writes are idempotent (the order id is the key): a record can come twice.

Environment and exit codes as in examples/service.py (ORDERS_IN_FLIGHT: tasks at most, 200).

    KAFKA_BOOTSTRAP=127.0.0.1:9092 python examples/service_pipelined.py
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sqlite3
import sys
import threading
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Message

from kafka_coop import CoopAIOConsumer

log = logging.getLogger("orders-service-pipelined")
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
    """The service's database: one row per order. One connection, so writes take turns."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, check_same_thread=False)
        self.lock = threading.Lock()
        with self.db:
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, amount REAL NOT NULL, "
                "topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL)"
            )

    def save(self, order: dict[str, Any], topic: str, partition: int, offset: int) -> None:
        with self.lock, self.db:
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
    in_flight = asyncio.Semaphore(int(environ.get("ORDERS_IN_FLIGHT", "200")))
    tasks: dict[tuple[str, int], set[asyncio.Task[None]]] = {}
    failed: list[BadOrder] = []

    async def on_revoked(partitions: list[tuple[str, int]]) -> None:
        """Still ours: let their work in flight finish (and mark itself done) before the commit."""
        draining = [task for partition in partitions for task in tasks.pop(partition, set())]
        if draining:
            await asyncio.wait(draining)

    try:
        conf = consumer_conf(environ)
        async with CoopAIOConsumer(
            conf, events=environ.get("ORDERS_EVENTS"), on_revoked=on_revoked
        ) as consumer:

            async def process(msg: Message) -> None:
                where = position(msg)
                try:
                    await asyncio.to_thread(orders.save, parse(msg.value()), *where)
                except BadOrder as exc:  # never marked: never committed, redelivered to the next owner
                    failed.append(BadOrder(f"record {where[0]}/{where[1]}@{where[2]} is {exc}"))
                    stop.set()
                    return
                finally:
                    in_flight.release()
                await consumer.mark_done(msg)

            await consumer.subscribe([topic])
            log.info("consuming %s as %r", topic, consumer)
            while not stop.is_set():
                for msg in await consumer.consume(num_messages=BATCH, timeout=CONSUME_TIMEOUT_S):
                    if msg.error():
                        log.warning("consumer error: %s", msg.error())
                        continue
                    await in_flight.acquire()
                    task = asyncio.create_task(process(msg))
                    partition = tasks.setdefault(position(msg)[:2], set())
                    partition.add(task)
                    task.add_done_callback(partition.discard)
            # Finish what is in flight: its marks are committed when the consumer closes.
            await asyncio.gather(*(task for partition in tasks.values() for task in partition))
    finally:
        orders.close()
    if failed:
        raise failed[0]


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

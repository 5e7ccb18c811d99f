"""Reading a topic back from the sandbox broker in integration tests (events, manifests)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer


def read_all(
    bootstrap: str, topic: str, expected: int, timeout_s: float = 30
) -> list[tuple[bytes, bytes | None]]:
    """(key, value) of the topic's records from the earliest offset, until `expected` were read."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{time.time_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    out: list[tuple[bytes, bytes | None]] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < expected and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and not msg.error():
            out.append((msg.key(), msg.value()))
    consumer.close()
    return out

"""Reading a topic back from the sandbox broker in integration tests (events, manifests)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError


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


def read_to_end(bootstrap: str, topic: str, timeout_s: float = 60) -> list[tuple[bytes, bytes | None]]:
    """(key, value) of every record of a one-partition topic, from the earliest offset to its end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{time.time_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.subscribe([topic])
    out: list[tuple[bytes, bytes | None]] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            error = msg.error()
            if error is None:
                out.append((msg.key(), msg.value()))
            elif error.code() == KafkaError._PARTITION_EOF:
                return out
            else:
                raise AssertionError(f"reading {topic}: {error}")
    finally:
        consumer.close()
    raise AssertionError(f"{topic} not read to its end in {timeout_s:.0f} s ({len(out)} records)")

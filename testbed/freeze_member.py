"""A CoopConsumer member in its own process, for tests that freeze it with SIGSTOP (a whole process stops:
librdkafka's threads too, which no in-process stall can show).

`python -m testbed.freeze_member BOOTSTRAP GROUP TOPIC NAME OUT_DIR PROTOCOL` appends to
`OUT_DIR/NAME.rec` one line per processed record, `R <partition> <offset> <wall ms>`, written before the
record is marked done, and writes its events to `OUT_DIR/NAME.events.jsonl`. It processes slowly (small
batches, a short pause each) so that librdkafka has records prefetched when it is frozen; what it marked
done is committed in the background (auto commit, every second) and on revoke and close, as most
services do. (A synchronous commit after each batch would hide the race on thaw: its round trip gives
the first heartbeat time to bring the eviction back first.) SIGTERM closes it; a fatal error exits 3.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from types import FrameType
from typing import Any

SESSION_MS = 6000  # the broker's minimum (group.min.session.timeout.ms)
PROTOCOLS = {
    "cooperative": {
        "partition.assignment.strategy": "cooperative-sticky",
        "session.timeout.ms": str(SESSION_MS),
        "heartbeat.interval.ms": "500",
    },
    "consumer": {"group.protocol": "consumer"},
}


def main(argv: list[str]) -> int:
    bootstrap, group, topic, name, out, protocol = argv
    from kafka_coop.consumer import CoopConsumer
    from kafka_coop.errors import ConsumerFailed

    stop = False

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.instance.id": name,
        "client.id": name,
        "auto.offset.reset": "earliest",
        "auto.commit.interval.ms": "1000",
        "enable.auto.offset.store": "false",
        "max.poll.interval.ms": str(SESSION_MS),
        **PROTOCOLS[protocol],
    }
    fd = os.open(f"{out}/{name}.rec", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    consumer = CoopConsumer(conf, events=f"{out}/{name}.events.jsonl")
    consumer.subscribe([topic])
    code = 0
    try:
        while not stop:
            records = [m for m in consumer.consume(num_messages=10, timeout=0.2) if m.error() is None]
            if not records:
                continue
            now = time.time_ns() // 1_000_000
            os.write(fd, "".join(f"R {m.partition()} {m.offset()} {now}\n" for m in records).encode())
            for m in records:
                consumer.mark_done(m)
            time.sleep(0.05)  # slow processing: librdkafka keeps records prefetched meanwhile
    except ConsumerFailed:
        code = 3
    finally:
        consumer.close()
        os.close(fd)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

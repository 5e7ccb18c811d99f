"""One member of the chaos run: a CoopConsumer that logs every record it processed and every commit.

`python -m bench._chaos_member --bootstrap B --group G --topic T --name m3 --incarnation 2 --mode M
--out DIR` writes `DIR/m3.2.rec` with one line per fact, flushed to the OS before the facts that
depend on it (a SIGKILL loses nothing that was written, the kernel has it):

    R <partition> <offset> <ms>     processed (before its offset is marked done)
    C <partition> <offset> <ms>     committed: the broker accepted <offset> (the next to read)
    X <ms> <error>                  a commit the broker refused (rebalance, fenced, coordinator moving)
    F <ms> <error>                  a fatal client error (the member exits 3, as a pod would crash)

and `DIR/m3.2.events.jsonl` (RebalanceEvent lines). Processing is a batch of `consume()`: log the
records, mark them done, commit synchronously — at-least-once, committing only after processing.
SIGUSR1 stalls processing for `--stall-s` (a stuck handler: heartbeats go on, polls stop, so the member
overruns max.poll.interval.ms); SIGTERM closes gracefully (commit of what is done, leave).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from types import FrameType
from typing import Any

MODES = {
    "cooperative-static": {"partition.assignment.strategy": "cooperative-sticky"},
    "eager-dynamic": {"partition.assignment.strategy": "range"},
    "consumer-static": {"group.protocol": "consumer"},
}
STATIC = {"cooperative-static", "consumer-static"}


def _now() -> int:
    return time.time_ns() // 1_000_000


class _Flags:
    stop = False
    stall_until = 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--incarnation", type=int, required=True)
    parser.add_argument("--mode", choices=sorted(MODES), required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--session-ms", type=int, default=10000)
    parser.add_argument("--max-poll-ms", type=int, default=10000)
    parser.add_argument("--stall-s", type=float, default=15.0)
    parser.add_argument("--command-config", default=None)
    ns = parser.parse_args(argv)

    from confluent_kafka import KafkaException

    from kafka_coop.consumer import CoopConsumer
    from kafka_coop.errors import ConsumerFailed
    from kafka_coop.settings import ConsumerSettings

    base = f"{ns.out}/{ns.name}.{ns.incarnation}"
    fd = os.open(f"{base}.rec", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(text: str) -> None:
        os.write(fd, text.encode())

    conf: dict[str, Any] = {}
    if ns.command_config:
        conf.update(ConsumerSettings.read_properties(ns.command_config))
    conf.update(
        {
            "bootstrap.servers": ns.bootstrap,
            "group.id": ns.group,
            "client.id": ns.name,
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",  # explicit marks
            "auto.offset.reset": "earliest",
            "max.poll.interval.ms": str(ns.max_poll_ms),
            "reconnect.backoff.ms": "50",
            "reconnect.backoff.max.ms": "1000",
            **MODES[ns.mode],
        }
    )
    if ns.mode != "consumer-static":
        conf["session.timeout.ms"] = str(ns.session_ms)
        conf["heartbeat.interval.ms"] = "1000"
    if ns.mode in STATIC:
        conf["group.instance.id"] = ns.name

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        _Flags.stop = True

    def on_stall(_signum: int, _frame: FrameType | None) -> None:
        _Flags.stall_until = time.monotonic() + ns.stall_s

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGUSR1, on_stall)
    consumer = CoopConsumer(conf, events=f"{base}.events.jsonl")
    consumer.subscribe([ns.topic])
    code = 0
    try:
        while not _Flags.stop:
            if time.monotonic() < _Flags.stall_until:
                time.sleep(0.05)  # stuck: no poll, so librdkafka's max.poll.interval.ms runs out
                continue
            batch = consumer.consume(num_messages=500, timeout=0.5)
            records = [m for m in batch if m.error() is None]
            if not records:
                continue
            now = _now()
            write("".join(f"R {m.partition()} {m.offset()} {now}\n" for m in records))
            for m in records:
                consumer.mark_done(m)
            try:
                committed = consumer.commit(asynchronous=False)
            except KafkaException as exc:
                write(f"X {_now()} {exc.args[0] if exc.args else exc}\n")
                continue
            now = _now()
            write(
                "".join(
                    f"C {tp.partition} {tp.offset} {now}\n"
                    for tp in committed or []
                    if tp.error is None and tp.offset >= 0
                )
            )
    except ConsumerFailed as exc:
        write(f"F {_now()} {exc}\n".replace("\n", " ").rstrip() + "\n")
        code = 3
    finally:
        consumer.close()
        os.close(fd)
    return code


if __name__ == "__main__":
    sys.exit(main())

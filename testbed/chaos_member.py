"""One member of the chaos run: a kafka-coop consumer that logs every record it processed and every commit.

`python -m testbed.chaos_member --bootstrap B --group G --topic T --name m3 --incarnation 2 --mode M
--kind K --out DIR` writes `DIR/m3.2.rec` with one line per fact, flushed to the OS before the facts
that depend on it (a SIGKILL loses nothing that was written, the kernel has it):

    R <partition> <offset> <ms>     processed (before it can count as done)
    C <partition> <offset> <ms>     committed: the broker accepted <offset> (the next to read)
    X <ms> <error>                  a commit the broker refused (rebalance, fenced, coordinator moving)
    F <ms> <error>                  a fatal client error (the member exits 3, as a pod would crash)

and `DIR/m3.2.events.jsonl` (RebalanceEvent lines). Three kinds of service (`--kind`):

- `commit`: `CoopConsumer` with explicit marks and auto commit off: log a `consume()` batch, mark each
  record done, commit synchronously — the application commits only after processing; as kafka-coop
  then commits nothing on its behalf, it also commits again after a refused commit, in `on_revoked`
  and before a graceful close;
- `default`: `CoopConsumer` on librdkafka's defaults (auto commit on, auto offset store on), the loop a
  confluent-kafka service runs: log the batch, nothing else. What it polled past is committed by
  kafka-coop's interval commit, on revoke and on close (commits are logged from `on_commit`);
- `pipelined`: `CoopAIOConsumer` with explicit marks and one asyncio task per record, finishing out of
  order, each marking its record done; `on_revoked` waits for the revoked partitions' tasks.

SIGUSR1 stalls processing for `--stall-s` (a stuck handler: heartbeats go on, polls stop, so the member
overruns max.poll.interval.ms); SIGTERM closes gracefully (commit of what is done, leave).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

MODES = {
    "cooperative-static": {"partition.assignment.strategy": "cooperative-sticky"},
    "eager-dynamic": {"partition.assignment.strategy": "range"},
    "consumer-static": {"group.protocol": "consumer"},
}
STATIC = {"cooperative-static", "consumer-static"}
KINDS = ("commit", "default", "pipelined")
IN_FLIGHT = 200


def _now() -> int:
    return time.time_ns() // 1_000_000


class _Flags:
    stop = False
    stall_until = 0.0


def _conf(ns: argparse.Namespace) -> dict[str, Any]:
    from kafka_coop.settings import ConsumerSettings

    conf: dict[str, Any] = {}
    if ns.command_config:
        conf.update(ConsumerSettings.read_properties(ns.command_config))
    conf.update(
        {
            "bootstrap.servers": ns.bootstrap,
            "group.id": ns.group,
            "client.id": ns.name,
            "auto.offset.reset": "earliest",
            "max.poll.interval.ms": str(ns.max_poll_ms),
            "reconnect.backoff.ms": "50",
            "reconnect.backoff.max.ms": "1000",
            **MODES[ns.mode],
        }
    )
    if ns.kind == "commit":
        conf.update({"enable.auto.commit": "false", "enable.auto.offset.store": "false"})
    elif ns.kind == "pipelined":
        conf["enable.auto.offset.store"] = "false"  # explicit marks, kafka-coop's interval commit
    if ns.mode != "consumer-static":
        conf["session.timeout.ms"] = str(ns.session_ms)
        conf["heartbeat.interval.ms"] = "1000"
    if ns.mode in STATIC:
        conf["group.instance.id"] = ns.name
    return conf


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--incarnation", type=int, required=True)
    parser.add_argument("--mode", choices=sorted(MODES), required=True)
    parser.add_argument("--kind", choices=KINDS, default="commit")
    parser.add_argument("--out", required=True)
    parser.add_argument("--session-ms", type=int, default=10000)
    parser.add_argument("--max-poll-ms", type=int, default=10000)
    parser.add_argument("--stall-s", type=float, default=15.0)
    parser.add_argument("--command-config", default=None)
    ns = parser.parse_args(argv)

    base = f"{ns.out}/{ns.name}.{ns.incarnation}"
    fd = os.open(f"{base}.rec", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(text: str) -> None:
        os.write(fd, text.encode())

    def on_commit(err: Any, partitions: Any) -> None:
        """Every commit kafka-coop makes (interval, revoke, close, the application's)."""
        now = _now()
        if err is not None:
            write(f"X {now} {err}\n".replace("\n", " ").rstrip() + "\n")
            return
        failed = [tp for tp in partitions or [] if tp.error is not None]
        if failed:
            write(f"X {now} {failed[0].error}\n".replace("\n", " ").rstrip() + "\n")
        write(
            "".join(
                f"C {tp.partition} {tp.offset} {now}\n"
                for tp in partitions or []
                if tp.error is None and tp.offset >= 0
            )
        )

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        _Flags.stop = True

    def on_stall(_signum: int, _frame: FrameType | None) -> None:
        _Flags.stall_until = time.monotonic() + ns.stall_s

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGUSR1, on_stall)
    conf = _conf(ns)
    if ns.kind != "commit":
        conf["on_commit"] = on_commit
    try:
        if ns.kind == "pipelined":
            return asyncio.run(_pipelined(ns, conf, base, write))
        return _sync(ns, conf, base, write)
    finally:
        os.close(fd)


def _sync(ns: argparse.Namespace, conf: dict[str, Any], base: str, write: Callable[[str], None]) -> int:
    from confluent_kafka import KafkaError, KafkaException

    from kafka_coop.consumer import CoopConsumer
    from kafka_coop.errors import ConsumerFailed

    # With auto commit off kafka-coop commits nothing on the application's behalf (no interval, revoke
    # or close commit), so this member does what such an application must: it commits after every
    # batch, again after a commit the group refused (a rebalance, a coordinator moving) until one is
    # accepted, in on_revoked (the partitions are still its own) and before a graceful close.
    unsettled = [False]  # marks (or a refused commit) the group does not hold yet

    def commit() -> None:
        try:
            committed = consumer.commit(asynchronous=False)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else exc
            if isinstance(err, KafkaError) and err.code() == KafkaError._NO_OFFSET:
                unsettled[0] = False  # nothing new: the group holds every mark already
                return
            write(f"X {_now()} {err}\n".replace("\n", " ").rstrip() + "\n")
            return
        unsettled[0] = False
        now = _now()
        write(
            "".join(
                f"C {tp.partition} {tp.offset} {now}\n"
                for tp in committed or []
                if tp.error is None and tp.offset >= 0
            )
        )

    def on_revoked(_partitions: list[tuple[str, int]]) -> None:
        if ns.kind == "commit" and unsettled[0]:
            commit()

    consumer = CoopConsumer(conf, events=f"{base}.events.jsonl", on_revoked=on_revoked)
    consumer.subscribe([ns.topic])
    code = 0
    try:
        while not _Flags.stop:
            if time.monotonic() < _Flags.stall_until:
                time.sleep(0.05)  # stuck: no poll, so librdkafka's max.poll.interval.ms runs out
                continue
            batch = consumer.consume(num_messages=500, timeout=0.5)
            records = [m for m in batch if m.error() is None]
            if records:
                now = _now()
                write("".join(f"R {m.partition()} {m.offset()} {now}\n" for m in records))
            if ns.kind == "default":
                continue  # done once this loop calls consume again
            for m in records:
                consumer.mark_done(m)
            if records or unsettled[0]:
                unsettled[0] = True
                commit()
        if ns.kind == "commit" and unsettled[0]:
            commit()  # a graceful stop: what is done is committed before the close
    except ConsumerFailed as exc:
        write(f"F {_now()} {exc}\n".replace("\n", " ").rstrip() + "\n")
        code = 3
    finally:
        consumer.close()
    return code


async def _pipelined(
    ns: argparse.Namespace, conf: dict[str, Any], base: str, write: Callable[[str], None]
) -> int:
    from kafka_coop.consumer import CoopAIOConsumer
    from kafka_coop.errors import ConsumerFailed

    tasks: dict[tuple[Any, Any], set[asyncio.Task[None]]] = {}
    in_flight = asyncio.Semaphore(IN_FLIGHT)
    rng = random.Random(ns.incarnation)  # noqa: S311  (a seeded schedule of faults, not a secret)

    async def on_revoked(partitions: list[tuple[str, int]]) -> None:
        draining = [task for part in partitions for task in tasks.pop(part, set())]
        if draining:
            await asyncio.wait(draining)

    code = 0
    async with CoopAIOConsumer(conf, events=f"{base}.events.jsonl", on_revoked=on_revoked) as consumer:

        async def process(msg: Any) -> None:
            try:
                await asyncio.sleep(rng.random() / 200)  # finishes out of order
                write(f"R {msg.partition()} {msg.offset()} {_now()}\n")
                await consumer.mark_done(msg)
            finally:
                in_flight.release()

        await consumer.subscribe([ns.topic])
        try:
            while not _Flags.stop:
                if time.monotonic() < _Flags.stall_until:
                    time.sleep(0.05)  # stuck, loop and all: no consume, so max.poll.interval.ms runs out
                    continue
                for msg in await consumer.consume(num_messages=500, timeout=0.5):
                    if msg.error() is not None:
                        continue
                    await in_flight.acquire()
                    task = asyncio.create_task(process(msg))
                    part = tasks.setdefault((msg.topic(), msg.partition()), set())
                    part.add(task)
                    task.add_done_callback(part.discard)
            await asyncio.gather(*(t for part in tasks.values() for t in part))
        except ConsumerFailed as exc:
            write(f"F {_now()} {exc}\n".replace("\n", " ").rstrip() + "\n")
            code = 3
    return code


if __name__ == "__main__":
    sys.exit(main())

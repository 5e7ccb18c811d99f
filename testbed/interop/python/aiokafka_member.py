"""An aiokafka group member for kafka-coop's test bed (the Java member's command line).

aiokafka ships only eager assignors (range, roundrobin, sticky; aiokafka/coordinator/assignors) and no
KIP-848 consumer protocol. Offsets are committed by its auto-commit, which also commits before every
revoke; a batch handed out before a rebalance is still written to the record log, so nothing is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, __version__
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from member_common import Log, fail, parse

ASSIGNORS = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
}


async def run() -> None:
    args = parse()
    if args.group_protocol == "consumer":
        fail("aiokafka does not speak the KIP-848 consumer group protocol; use --group-protocol classic")
    if args.close != "default":
        fail("aiokafka has no close option to leave or remain in the group; use --close default")
    names = args.assignors or ["roundrobin"]  # aiokafka's default
    unknown = [n for n in names if n not in ASSIGNORS]
    if unknown:
        fail(f"aiokafka has no assignor {unknown[0]} (it ships {', '.join(ASSIGNORS)}, all eager)")
    client_id = args.client_id or f"aiokafka-{__version__}"
    config: dict[str, object] = {
        "bootstrap_servers": args.bootstrap,
        "group_id": args.group,
        "auto_offset_reset": "earliest",
        "auto_commit_interval_ms": 1000,
        "partition_assignment_strategy": tuple(ASSIGNORS[n] for n in names),
    }
    if args.client_id:
        config["client_id"] = args.client_id
    if args.instance_id:
        config["group_instance_id"] = args.instance_id
    for key, value in args.props.items():
        config[key] = int(value) if value.isdigit() else value
    log = Log(args, client_id)
    consumer = AIOKafkaConsumer(**config)

    def member_id() -> str:
        coordinator = getattr(consumer, "_coordinator", None)
        return str(getattr(coordinator, "member_id", "") or "")

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            log.member_id = member_id()
            log.emit("revoked", "eager", [(tp.topic, tp.partition) for tp in revoked], t0)

        async def on_partitions_assigned(self, assigned):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            log.member_id = member_id()
            log.emit("assigned", "eager", [(tp.topic, tp.partition) for tp in assigned], t0)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(*_: object) -> None:
        # signal.signal, not loop.add_signal_handler (its handlers go when asyncio.run ends), then
        # SIG_IGN: Python's finalization resets a Python-level handler to the default, and the fleet
        # runner's second SIGTERM landing then would kill us with -15
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            loop.call_soon_threadsafe(stop.set)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    consumer.subscribe(args.topics, listener=Listener())
    await consumer.start()
    print("READY 1", flush=True)
    try:
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=100)
            for tp, records in batch.items():
                for r in records:
                    log.record(tp.topic, tp.partition, r.offset, r.timestamp)
            log.flush()
    finally:
        await consumer.stop()  # commits (auto-commit), revokes through the listener, leaves if dynamic
        log.close()


if __name__ == "__main__":
    asyncio.run(run())

"""A kafka-python 3.x group member for kafka-coop's test bed (the Java member's command line).

kafka-python picks one rebalance protocol per consumer, the highest that all configured assignors
support, and refuses a list that mixes eager and cooperative (kafka/coordinator/consumer.py,
_validate_rebalance_protocol). It has no KIP-848 consumer protocol. Offsets are committed the way
most kafka-python services do it, by its auto-commit, which also commits before every revoke
(processing happens between polls, so the consumed position is the processed one).
"""

from __future__ import annotations

import logging
import signal
import time

from kafka import ConsumerRebalanceListener, KafkaConsumer
from kafka.coordinator.assignors.abstract import RebalanceProtocol
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.errors import KafkaConfigurationError
from kafka.version import __version__
from kafka_python_join_fix import install as keep_finished_joins
from member_common import Log, fail, parse

ASSIGNORS = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}


def main() -> None:
    # the coordinator's join / sync / heartbeat story in the member's log: what a member that never
    # joins was doing (warnings of the rest of the library too)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("kafka.coordinator").setLevel(logging.INFO)
    keep_finished_joins()  # kafka-python 3.0.12 drops a join that ends between two polls
    args = parse()
    running = True

    def stop(*_: object) -> None:
        nonlocal running
        running = False
        # ignore any further SIGTERM: Python's finalization resets a Python-level handler to the
        # default, and the fleet runner's second SIGTERM landing then would kill us with -15
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    # First: kafka-python 3 joins on its own IO thread, so a member can be in the group before poll().
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.group_protocol == "consumer":
        fail("kafka-python does not speak the KIP-848 consumer group protocol; use --group-protocol classic")
    if args.close != "default":
        fail("kafka-python has no close option to leave or remain in the group; use --close default")
    names = args.assignors or ["range", "roundrobin"]  # kafka-python's default list
    unknown = [n for n in names if n not in ASSIGNORS]
    if unknown:
        fail(f"kafka-python has no assignor {unknown[0]} (it ships {', '.join(ASSIGNORS)})")
    classes = [ASSIGNORS[n] for n in names]
    # kafka-python's own rule (it refuses a list without one, at KafkaConsumer creation, below)
    common = set.intersection(*(set(c().supported_protocols()) for c in classes))
    protocol = "cooperative" if common and max(common) == RebalanceProtocol.COOPERATIVE else "eager"
    client_id = args.client_id or f"kafka-python-{__version__}"
    config: dict[str, object] = {
        "bootstrap_servers": args.bootstrap.split(","),
        "group_id": args.group,
        "auto_offset_reset": "earliest",
        "auto_commit_interval_ms": 1000,
        "partition_assignment_strategy": classes,
    }
    if args.client_id:
        config["client_id"] = args.client_id
    if args.instance_id:
        config["group_instance_id"] = args.instance_id
    for key, value in args.props.items():
        config[key] = int(value) if value.isdigit() else value
    log = Log(args, client_id)
    try:
        consumer = KafkaConsumer(**config)
    except KafkaConfigurationError as exc:
        fail(f"kafka-python refused the configuration: {exc}")
        return

    def member_id() -> str:
        try:
            return consumer.group_metadata().member_id or ""
        except Exception:
            return ""

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            log.member_id = member_id()
            log.emit("revoked", protocol, [(tp.topic, tp.partition) for tp in revoked], t0)

        def on_partitions_assigned(self, assigned):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            log.member_id = member_id()
            log.emit("assigned", protocol, [(tp.topic, tp.partition) for tp in assigned], t0)

        def on_partitions_lost(self, lost):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            log.emit("lost", protocol, [(tp.topic, tp.partition) for tp in lost], t0)

    consumer.subscribe(args.topics, listener=Listener())
    print("READY 1", flush=True)
    while running:
        batch = consumer.poll(timeout_ms=100)
        for tp, records in batch.items():
            for r in records:
                log.record(tp.topic, tp.partition, r.offset, r.timestamp)
        log.flush()
    consumer.close()  # commits (auto-commit), revokes through the listener, leaves if dynamic
    log.close()


if __name__ == "__main__":
    main()

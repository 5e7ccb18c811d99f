"""A classic group member whose group metadata the test bed writes byte for byte.

The broker refuses to convert a classic group to the consumer protocol for what its members put on the
wire (GroupMetadataManager.validateOnlineUpgrade, ConsumerGroup.fromClassicGroup): a protocol type other
than `consumer` (a Connect worker's `connect`), an assignment carrying userData, metadata it cannot
read. No client family writes these on demand, so this member does: kafka-python's group coordinator
base (JoinGroup, SyncGroup, heartbeats) with our consumer-protocol codecs for the bytes.

    python -m testbed.foreign_member --bootstrap HOST:PORT --group G --topic T --partitions N
        [--protocol-type connect] [--assignment-user-data TEXT] [--malformed]

Prints `joined <generation> <member id>` on every join; runs until SIGTERM, then leaves the group.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from kafka_coop.protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    encode_assignment,
    encode_subscription,
)

# A v0 subscription that declares five topics and carries none: Kafka's ConsumerProtocol reader runs out
# of bytes (BufferUnderflowException -> SchemaException), so the conversion is refused as malformed.
MALFORMED = b"\x00\x00\x00\x00\x00\x05"
CONNECT_METADATA = b"connect-worker-metadata"  # opaque to the broker, like a real worker's


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="testbed.foreign_member")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--client-id", default="foreign-member")
    parser.add_argument("--protocol-type", default="consumer")
    parser.add_argument("--protocol", default="range", help="the protocol (assignor) name it offers")
    parser.add_argument("--assignment-user-data", default=None, help="userData the leader writes")
    parser.add_argument("--malformed", action="store_true", help="a subscription Kafka cannot read")
    return parser.parse_args(argv)


def _coordinator_class() -> Any:
    from kafka.coordinator.base import BaseCoordinator

    class ForeignCoordinator(BaseCoordinator):  # type: ignore[misc]
        def __init__(self, client: Any, args: argparse.Namespace, **configs: Any) -> None:
            super().__init__(client, **configs)
            self.args = args

        def protocol_type(self) -> str:
            return str(self.args.protocol_type)

        def _metadata(self) -> bytes:
            if self.args.malformed:
                return MALFORMED
            if self.args.protocol_type != "consumer":
                return CONNECT_METADATA
            return encode_subscription(ConsumerProtocolSubscription(version=0, topics=(self.args.topic,)))

        def group_protocols(self) -> list[tuple[str, bytes]]:
            return [(str(self.args.protocol), self._metadata())]

        def _perform_assignment(self, leader_id: str, protocol: str, members: Any) -> dict[str, bytes]:
            ids = sorted(m.member_id for m in members)
            user_data = self.args.assignment_user_data
            out: dict[str, bytes] = {}
            for index, member in enumerate(ids):
                partitions = tuple(
                    (self.args.topic, p) for p in range(self.args.partitions) if p % len(ids) == index
                )
                if self.args.protocol_type != "consumer":
                    out[member] = b"connect-assignment"
                    continue
                out[member] = encode_assignment(
                    ConsumerProtocolAssignment(
                        version=0,
                        partitions=partitions,
                        user_data=user_data.encode() if user_data is not None else None,
                    )
                )
            return out

        async def _on_join_complete_async(
            self, generation: int, member_id: str, protocol: str, assignment: bytes
        ) -> None:
            print(f"joined {generation} {member_id}", flush=True)

    return ForeignCoordinator


def main(argv: list[str] | None = None) -> None:
    from kafka.net.compat import KafkaNetClient

    args = _parse(argv)
    client = KafkaNetClient(bootstrap_servers=args.bootstrap.split(","), client_id=args.client_id)
    client._net.start()
    client._manager.bootstrap(30_000)
    coordinator = _coordinator_class()(
        client, args, group_id=args.group, session_timeout_ms=10_000, heartbeat_interval_ms=1_000
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        while not stop.is_set():
            coordinator.heartbeat.poll()  # the "application" is alive: no poll-timeout leave
            if coordinator.need_rejoin():
                coordinator.ensure_active_group(timeout_ms=5_000)
            stop.wait(0.5)
    finally:
        coordinator.close(timeout_ms=5_000)
        client.close()
    sys.exit(0)


if __name__ == "__main__":
    main()

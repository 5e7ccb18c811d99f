"""Cancelling an awaited `consume()` loses nothing: the records its worker took are handed out later.

`asyncio.wait_for(consumer.consume(...), 1)` cancels the await, but the call already runs on a worker
thread: librdkafka hands it the records that arrive meanwhile. The committed offsets are read back.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopAIOConsumer
from testbed.rebalance_protocols import REBALANCE_CONF
from tests.integration.consumer.members import committed_offsets, produce_keyed


@pytest.mark.parametrize("rebalance", ["cooperative-sticky"])
def test_records_taken_by_a_cancelled_consume_are_handed_out_by_the_next_one(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
) -> None:
    topic = topic_factory(1)
    group = unique(f"cancel-{rebalance}")
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.offset.store": "false",
        **REBALANCE_CONF[rebalance],
    }

    async def service() -> list[int]:
        got: list[int] = []
        async with CoopAIOConsumer(conf) as consumer:
            await consumer.subscribe([topic])
            deadline = time.monotonic() + 60
            while not consumer.owned and time.monotonic() < deadline:
                assert await consumer.consume(10, timeout=0.2) == []
            # Records 0-19 arrive after the await was cancelled, while the worker still waits for them.
            later = {"partitions": 1, "per_partition": 20}
            threading.Timer(1.5, produce_keyed, (bootstrap, topic), later).start()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(consumer.consume(1000, timeout=5), 1)
            await asyncio.sleep(5)  # the worker's consume has returned its 20 records by now
            produce_keyed(bootstrap, topic, partitions=1, per_partition=5)  # 20-24
            deadline = time.monotonic() + 30
            while len(got) < 25 and time.monotonic() < deadline:
                for msg in await consumer.consume(100, timeout=0.5):
                    if msg.error() is None:
                        got.append(msg.offset())
                        await consumer.mark_done(msg)
        return got

    got = asyncio.run(service())
    assert got == list(range(25)), f"handed out {got}"
    assert committed_offsets(admin, group) == {(topic, 0): 25}

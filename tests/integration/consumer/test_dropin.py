"""A drop-in swap: confluent code left as it was, `Consumer` replaced by `CoopConsumer`, all defaults.

No `enable.auto.commit`, no `enable.auto.offset.store`, no `mark_done`: the loops below are what a
service written for `confluent_kafka.Consumer` does. The committed offsets are read back from the broker.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopConsumer
from tests.integration.consumer.members import committed_offsets, consumer_conf, produce_keyed

REBALANCES = ["eager-range", "cooperative-sticky", "consumer"]


def default_conf(bootstrap: str, group: str, rebalance: str) -> dict[str, Any]:
    """librdkafka's defaults for everything about offsets; only where to start is set."""
    return consumer_conf(bootstrap, group, rebalance, marks=False)


def poll_records(consumer: Any, count: int, timeout_s: float = 60.0) -> list[int]:
    offsets: list[int] = []
    deadline = time.monotonic() + timeout_s
    while len(offsets) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None or msg.error():
            continue
        offsets.append(msg.offset())
    return offsets


@pytest.mark.parametrize("rebalance", REBALANCES)
def test_the_apps_own_commit_commits_what_it_consumed_and_close_what_it_polled_past(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
) -> None:
    """confluent commits 5 here; a swap that raised _NO_OFFSET, or committed nothing on close without
    marks, would make a restart under auto.offset.reset=latest skip what arrived meanwhile."""
    topic = topic_factory(1)
    group = unique(f"dropin-{rebalance}")
    produce_keyed(bootstrap, topic, partitions=1, per_partition=10)
    consumer = CoopConsumer(default_conf(bootstrap, group, rebalance))
    try:
        consumer.subscribe([topic])
        assert poll_records(consumer, 5) == [0, 1, 2, 3, 4]
        consumer.commit(asynchronous=False)  # the app's own commit, after processing
        assert committed_offsets(admin, group) == {(topic, 0): 5}
        assert poll_records(consumer, 3) == [5, 6, 7]
    finally:
        consumer.close()  # no exception: the last record was processed
    assert committed_offsets(admin, group) == {(topic, 0): 8}

"""A KIP-848 static member restarted in a normal bounce is not warned of a live holder of its id: its
closed incarnation stays listed (member epoch -2) until its session ends, and the new one takes its
place. Before, every restarted member printed "already held by a live member" and then joined fine."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest

from kafka_coop.consumer import CoopConsumer


def _until_assigned(consumer: CoopConsumer, partitions: int) -> None:
    deadline = time.monotonic() + 30
    while len(consumer.assignment()) < partitions and time.monotonic() < deadline:
        consumer.poll(0.2)
    assert len(consumer.assignment()) == partitions


def test_a_restarted_kip848_static_member_joins_without_the_duplicate_warning(
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic, group = topic_factory(2), unique("bounce")
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer"}
    first = CoopConsumer({**conf, "group.instance.id": "b-1"}, duplicate_check="warn")
    first.subscribe([topic])
    _until_assigned(first, 2)
    first.close()  # a static member's leave: listed with epoch -2 until its session ends

    with caplog.at_level(logging.WARNING, logger="kafka_coop"):
        second = CoopConsumer({**conf, "group.instance.id": "b-1"}, duplicate_check="warn")
    try:
        second.subscribe([topic])
        _until_assigned(second, 2)  # it takes its predecessor's place: nobody else held the id
    finally:
        second.close()
    assert not [r for r in caplog.records if "already held" in r.getMessage()]

"""A KIP-848 static member restarted in a normal bounce is not warned of a live holder of its id: its
closed incarnation stays listed (member epoch -2) until its session ends, and the new one takes its
place. Before, every restarted member printed "already held by a live member" and then joined fine."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest

from kafka_coop.consumer import CoopConsumer
from kafka_coop.inspection import read_manifest_keys
from tests.integration.members import wait_for


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


def test_a_restarted_classic_static_member_joins_without_the_duplicate_warning(
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A classic static member sends no LeaveGroup on close (KIP-345): it stays listed until its session
    ends, and its next incarnation takes its place (the coordinator replaces the listed member id)."""
    topic, group = topic_factory(2), unique("classic-bounce")
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": "b-1"}
    first = CoopConsumer(conf, duplicate_check="warn")
    first.subscribe([topic])
    _until_assigned(first, 2)
    first.close()

    with caplog.at_level(logging.WARNING, logger="kafka_coop"):
        second = CoopConsumer(conf, duplicate_check="warn")
    try:
        second.subscribe([topic])
        _until_assigned(second, 2)
    finally:
        second.close()
    assert not [r for r in caplog.records if "already held" in r.getMessage()]


def test_a_second_live_classic_process_with_the_same_id_is_warned(
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    manifests_topic: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The running holder's manifest (not tombstoned: it never closed) shows it alive, so the new
    process is told it will fence a running member."""
    topic, group = topic_factory(2), unique("classic-twin")
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": "b-1"}
    running = CoopConsumer(conf, manifests=manifests_topic, duplicate_check="warn")
    try:
        running.subscribe([topic])
        _until_assigned(running, 2)
        key = f"{group}/b-1"
        wait_for(lambda: read_manifest_keys(bootstrap, topic=manifests_topic)[0].get(key) is not None)
        with caplog.at_level(logging.WARNING, logger="kafka_coop"):
            twin = CoopConsumer(conf, manifests=manifests_topic, duplicate_check="warn")
        twin.close()
    finally:
        running.close()
    (warning,) = [r.getMessage() for r in caplog.records if "already held" in r.getMessage()]
    assert warning.startswith("group.instance.id 'b-1' is already held by a live member")
    assert "FENCES THE OLD member" in warning


def test_a_restarted_classic_member_publishing_manifests_is_not_warned(
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    manifests_topic: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Its predecessor's close tombstoned the manifest: the listed holder is gone, not running."""
    topic, group = topic_factory(2), unique("classic-bounce-m")
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": "b-1"}
    first = CoopConsumer(conf, manifests=manifests_topic, duplicate_check="warn")
    first.subscribe([topic])
    _until_assigned(first, 2)
    first.close()
    with caplog.at_level(logging.WARNING, logger="kafka_coop"):
        second = CoopConsumer(conf, manifests=manifests_topic, duplicate_check="warn")
    second.close()
    assert not [r for r in caplog.records if "already held" in r.getMessage()]

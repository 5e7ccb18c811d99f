"""Which librdkafka client a group-coordinator request runs on, and which one is closed when its answer
is given up on (docs/protocols.md, "librdkafka admin client during a coordinator move").

A real AdminClient against a port nothing listens on: every coordinator request goes unanswered.
"""

from __future__ import annotations

import threading

import pytest

from kafka_coop.admin import ClusterAdmin
from kafka_coop.errors import ClusterUnavailable

NOWHERE = "127.0.0.1:1"


def _is_open(client: object) -> bool:
    try:
        client.poll(0)  # type: ignore[attr-defined]
    except RuntimeError:
        return False
    return True


def test_an_unanswered_describe_closes_its_coordinator_client_and_not_the_shared_one() -> None:
    admin = ClusterAdmin(NOWHERE)
    shared, asked = admin.client, admin.coordinator_client()
    with pytest.raises(ClusterUnavailable):
        admin.describe_group("g", timeout_s=1.0)
    assert not _is_open(asked)
    assert admin.coordinator_client() is not asked
    assert _is_open(admin.client) and admin.client is shared


def test_each_thread_asks_the_coordinator_on_a_client_of_its_own() -> None:
    admin = ClusterAdmin(NOWHERE)
    seen: list[object] = []
    thread = threading.Thread(target=lambda: seen.append(admin.coordinator_client()))
    thread.start()
    thread.join()
    assert seen[0] is not admin.coordinator_client()
    assert admin.coordinator_client() is admin.coordinator_client()


def test_retire_without_a_client_closes_this_threads_coordinator_client_only() -> None:
    admin = ClusterAdmin(NOWHERE)
    mine = admin.coordinator_client()
    admin.retire()
    assert not _is_open(mine) and _is_open(admin.client)
    admin.retire()  # none now: nothing to close


def test_an_unanswered_group_delete_leaves_the_shared_client_open() -> None:
    admin = ClusterAdmin(NOWHERE)
    shared = admin.client
    assert admin.delete_group("g", timeout_s=1.0) is not None
    assert _is_open(admin.client) and admin.client is shared

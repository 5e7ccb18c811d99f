"""The coordinator's own view of real groups: ConsumerGroupDescribe through kafka-python's connection."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from kafka_coop.coordinator import CoordinatorAnswer, CoordinatorClient
from kafka_coop.errors import ClusterUnavailable
from kafka_coop.sandbox import free_port
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec


def _types(answer: CoordinatorAnswer) -> dict[str, str]:
    assert answer.described is not None, answer
    return {m.client_id: m.type_name for m in answer.described.members}


def test_the_coordinator_names_the_type_of_every_member_of_a_mixed_group(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    """Java and librdkafka, classic and consumer; the Java classic member joins after the conversion, so
    the broker gives it a bare UUID as member id, the shape a consumer-protocol member makes itself."""
    topic = topic_factory(6)
    group = unique("mixed848")
    classic = MemberSpec(
        name="rd-classic", kind="python", group=group, topics=(topic,), assignors=("range",), manifests=False
    )
    processes.add(classic)
    processes.wait_stable(group, members=1)
    processes.add(classic.replace(name="rd-consumer", group_protocol="consumer"))
    processes.add(classic.replace(name="jv-consumer", kind="java", group_protocol="consumer"))
    processes.add(classic.replace(name="jv-classic", kind="java"))
    processes.wait_stable(group, members=4)
    with CoordinatorClient(bootstrap) as client:
        answer = client.describe(group)
        deadline = time.monotonic() + 20
        while len(_types(answer)) < 4 and time.monotonic() < deadline:
            time.sleep(0.5)
            answer = client.describe(group)
    assert (answer.status, answer.api) == ("described", "ConsumerGroupDescribe v1")
    assert _types(answer) == {
        "rd-classic": "classic",
        "rd-consumer": "consumer",
        "jv-consumer": "consumer",
        "jv-classic": "classic",
    }
    assert answer.described is not None and answer.described.group_state == "Stable"
    assert answer.features.get("group.version", 0) >= 1
    for member in answer.described.members:
        assert member.member_epoch == answer.described.assignment_epoch
        assert member.assignment.partitions == member.target_assignment.partitions
    owned = sorted(p for m in answer.described.members for p in m.assignment.partitions)
    assert owned == [(topic, p) for p in range(6)]


def test_a_classic_group_and_an_unknown_one_are_not_consumer_groups(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic = topic_factory(2)
    group = unique("classic")
    processes.add(MemberSpec(name="c", kind="python", group=group, topics=(topic,), manifests=False))
    processes.wait_stable(group, members=1)
    missing = unique("nobody")
    with CoordinatorClient(bootstrap) as client:
        answers = client.describe_groups([group, missing])
    assert answers[group].status == answers[missing].status == "not-a-consumer-group"
    assert "not a consumer group" in answers[group].reason
    assert "not found" in answers[missing].reason
    assert answers[group].described is None


def test_list_groups_says_each_group_type(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic = topic_factory(2)
    classic, consumer = unique("lc"), unique("lk")
    spec = MemberSpec(name="a", kind="python", group=classic, topics=(topic,), manifests=False)
    processes.add_many([spec, spec.replace(name="b", group=consumer, group_protocol="consumer")])
    processes.wait_stable(classic, members=1)
    processes.wait_stable(consumer, members=1)
    with CoordinatorClient(bootstrap) as client:
        listed = {g.group: g for g in client.list_groups()}
    assert (listed[classic].group_type, listed[classic].protocol_type) == ("classic", "consumer")
    assert (listed[consumer].group_type, listed[consumer].protocol_type) == ("consumer", "consumer")


def test_an_unreachable_bootstrap_is_cluster_unavailable() -> None:
    with pytest.raises(ClusterUnavailable) as err:
        CoordinatorClient(f"127.0.0.1:{free_port()}", timeout_s=2)
    assert err.value.exit_code == 3

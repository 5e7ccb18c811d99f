"""describe on consumer-protocol groups: the coordinator's own view (ConsumerGroupDescribe v1) beside
what members declare and what the wire suggests, and groups of every kind."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kafka_coop.coordinator import CoordinatorClient
from kafka_coop.inspection import GroupSnapshot
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec
from tests.conftest import CliResult
from tests.integration.looks import snapshot_via_cli
from tests.integration.members import wait_converted

# the share-group test imports kafka-python, which reads its schema files with a deprecated API
pytestmark = pytest.mark.filterwarnings(
    "ignore:read_text is deprecated:DeprecationWarning", "ignore:open_text is deprecated:DeprecationWarning"
)


def _until(look: Callable[[], GroupSnapshot | None], what: str, timeout_s: float = 60.0) -> GroupSnapshot:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = look()
        if found is not None:
            return found
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")


def test_a_mixed_group_is_described_with_the_type_the_coordinator_gives_every_member(
    processes: MemberProcesses,
    bootstrap: str,
    manifests_topic: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    """Classic and consumer members, Java and librdkafka. jv-late joins the converted group on the
    classic protocol without a manifest: the broker gives it a bare UUID as member id, the shape a
    consumer-protocol member makes itself, so the member-id guess says consumer (reproduced on the
    session broker before the coordinator's view was read: 'consumer (inferred)')."""
    topic = topic_factory(6)
    group = unique("mixed-view")
    classic = MemberSpec(name="rd-classic", kind="python", group=group, topics=(topic,), assignors=("range",))
    processes.add(classic)
    processes.wait_stable(group, members=1)
    processes.add(classic.replace(name="rd-consumer", group_protocol="consumer", manifests=False))
    processes.add(classic.replace(name="jv-consumer", kind="java", group_protocol="consumer"))
    wait_converted(bootstrap, group, members=3)  # jv-late joins the converted group
    processes.add(classic.replace(name="jv-late", kind="java", manifests=False))
    processes.wait_stable(group, members=4)

    def described() -> GroupSnapshot | None:
        snap = snapshot_via_cli(run_cli, bootstrap, group)
        settled = snap.state == "stable" and all(
            m.member_epoch == snap.coordinator_view.assignment_epoch for m in snap.members
        )
        return snap if len(snap.members) == 4 and settled else None

    snap = _until(described, f"{group} described stable with 4 members")
    assert snap.group_type == "consumer"
    assert snap.coordinator_view.api == "ConsumerGroupDescribe v1"
    types = {m.client_id: (m.member_type.value, m.member_type.source) for m in snap.members}
    assert types == {
        "rd-classic": ("classic", "broker"),
        "rd-consumer": ("consumer", "broker"),
        "jv-consumer": ("consumer", "broker"),
        "jv-late": ("classic", "broker"),
    }
    late = next(m for m in snap.members if m.client_id == "jv-late")
    # a 22-character base64url UUID (it may hold '-'), not <client.id>-<UUID>: what a guess reads as consumer
    assert late.manifest is None and len(late.member_id) == 22 and not late.member_id.startswith("jv-late-")
    epoch = snap.coordinator_view.assignment_epoch  # KIP-1099: read off ConsumerGroupDescribe (Kafka 4.4)
    assert epoch is not None and epoch > 0 and snap.coordinator_view.group_epoch == epoch
    for m in snap.members:
        assert m.member_epoch == epoch
        assert m.target_assignment is not None and sorted(m.target_assignment) == sorted(m.assignment)
    assert snap.broker.group_version.source == "broker" and int(snap.broker.group_version.value) >= 1
    table = run_cli("describe", group, "--bootstrap-server", bootstrap)
    assert table.code == 0
    assert "described by" in table.stdout and "ConsumerGroupDescribe v1" in table.stdout
    assert "classic^" in table.stdout and "consumer^" in table.stdout and "epoch" in table.stdout


def test_a_classic_group_is_described_as_before(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    topic = topic_factory(2)
    group = unique("classic-view")
    processes.add(MemberSpec(name="c", kind="python", group=group, topics=(topic,), manifests=False))
    processes.wait_stable(group, members=1)
    snap = snapshot_via_cli(run_cli, bootstrap, group)
    assert snap.coordinator_view.api == ""
    assert "not a consumer group" in snap.coordinator_view.note
    (member,) = snap.members
    assert (member.member_type.value, member.member_type.source) == ("classic", "inferred")
    assert member.member_epoch is None and member.target_assignment is None
    table = run_cli("describe", group, "--bootstrap-server", bootstrap)
    assert "described by" not in table.stdout and "^" not in table.stdout


@pytest.fixture
def connect_group(
    bootstrap: str, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> Iterator[str]:
    """A group of one Connect-style worker (protocol type `connect`)."""
    group = unique("connect")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "testbed.foreign_member",
            "--bootstrap",
            bootstrap,
            "--group",
            group,
            "--topic",
            topic_factory(1),
            "--partitions",
            "1",
            "--protocol-type",
            "connect",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("joined"), line
        yield group
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_connect_group_is_described_for_what_it_is(
    connect_group: str, bootstrap: str, run_cli: Callable[..., CliResult]
) -> None:
    """Reproduced first: librdkafka's describe refuses it (_INVALID_ARG) and describe said 'Could not
    reach the Kafka cluster', exit 3."""
    snap = snapshot_via_cli(run_cli, bootstrap, connect_group)
    assert (snap.group_type, snap.protocol_type) == ("classic", "connect")
    (member,) = snap.members
    assert member.subscription is None and member.subscription_error is None
    table = run_cli("describe", connect_group, "--bootstrap-server", bootstrap)
    assert table.code == 0 and "protocol type" in table.stdout and "connect" in table.stdout


def test_describe_all_shows_each_group_kind(
    connect_group: str,
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    topic = topic_factory(2)
    classic, consumer, share = unique("all-classic"), unique("all-consumer"), unique("all-share")
    spec = MemberSpec(name="a", kind="python", group=classic, topics=(topic,), manifests=False)
    processes.add_many([spec, spec.replace(name="b", group=consumer, group_protocol="consumer")])
    processes.wait_stable(classic, members=1)
    processes.wait_stable(consumer, members=1)
    _share_group(bootstrap, share, topic)
    result = run_cli("describe", "--all", "--bootstrap-server", bootstrap, "-o", "json")
    assert result.code == 0, result.stderr
    rows: dict[str, Any] = {row["group_id"]: row for row in result.json()["groups"]}
    assert (rows[classic]["type"], rows[classic]["protocol_type"]) == ("classic", "consumer")
    assert (rows[consumer]["type"], rows[consumer]["protocol"]) == ("consumer", "consumer")
    assert (rows[connect_group]["kind"], rows[connect_group]["protocol_type"]) == ("connect", "connect")
    assert rows[connect_group]["kind"] == "connect"
    assert rows[connect_group]["members"] == 1
    assert (rows[share]["kind"], rows[share]["members"]) == ("share", None), "listed, not described"
    table = run_cli("describe", "--all", "--bootstrap-server", bootstrap)
    line = next(line for line in table.stdout.splitlines() if line.startswith(connect_group))
    assert "connect" in line
    line = next(line for line in table.stdout.splitlines() if line.startswith(share))
    assert line.split()[1] == "share"


def _share_group(bootstrap: str, group: str, topic: str) -> None:
    """A share group (KIP-932), which librdkafka lists as no consumer group: share.version is enabled
    where it is off (a preview in Kafka 4.1; 4.4 finalizes it already, and refuses a lower level as a
    downgrade) and confluent-kafka's ShareConsumer joins once."""
    from confluent_kafka import ShareConsumer
    from kafka.admin import KafkaAdminClient

    features = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        share = features.describe_features().get("share.version", {})
        if share.get("finalized", (0, 0))[1] < 1:
            assert features.update_features({"share.version": 1}) == {"share.version": "OK"}
    finally:
        features.close()
    with CoordinatorClient(bootstrap) as client:
        consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
        consumer.subscribe([topic])
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and group not in {g.group for g in client.list_groups()}:
                consumer.poll(0.5)
        finally:
            consumer.close()

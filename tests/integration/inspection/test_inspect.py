"""describe / verify-group on real groups: what each member runs, how we know it, and clear failures."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from kafka_coop.admin import ClusterAdmin
from kafka_coop.inspection import GroupSnapshot, take_snapshot
from kafka_coop.sandbox import free_port
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec
from tests.conftest import CliResult
from tests.integration.looks import snapshot_via_cli


def _by_client(snap: GroupSnapshot) -> dict[str, Any]:
    return {m.client_id: m for m in snap.members}


@pytest.mark.parametrize(
    ("assignors", "protocol"), [(("range",), "eager"), (("cooperative-sticky",), "cooperative")]
)
def test_librdkafka_protocol_is_inferred_without_a_manifest_and_declared_with_one(
    processes: MemberProcesses,
    bootstrap: str,
    manifests_topic: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
    assignors: tuple[str, ...],
    protocol: str,
) -> None:
    topic = topic_factory(4)
    group = unique("infer")
    spec = MemberSpec(
        name="quiet", kind="python", group=group, topics=(topic,), assignors=assignors, manifests=False
    )
    processes.add_many([spec, spec.replace(name="declares", manifests=True)])
    processes.wait_stable(group, members=2)
    members = _by_client(snapshot_via_cli(run_cli, bootstrap, group))
    quiet, declares = members["quiet"], members["declares"]
    assert (quiet.rebalance_protocol.value, quiet.rebalance_protocol.source) == (protocol, "inferred")
    assert (quiet.client_family.value, quiet.client_family.source) == ("librdkafka", "inferred")
    assert quiet.manifest is None
    assert (declares.rebalance_protocol.value, declares.rebalance_protocol.source) == (protocol, "declared")
    assert declares.assignors.value == assignors
    assert declares.manifest is not None and declares.manifest.client_id == "declares"


def test_a_mixed_java_and_librdkafka_group_is_described_member_by_member(
    processes: MemberProcesses,
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    topic = topic_factory(6)
    group = unique("mixed")
    spec = MemberSpec(
        name="py",
        kind="python",
        group=group,
        topics=(topic,),
        assignors=("cooperative-sticky",),
        manifests=False,
    )
    # One after the other: the Java member's join makes the librdkafka one re-join owning partitions,
    # the wire's only cooperative evidence. Joined together (run Y, under load), nobody owned anything,
    # and the Java member (family unknown) was inferred eager.
    processes.add(spec)
    processes.wait_stable(group, members=1)
    processes.add(spec.replace(name="jv", kind="java", instance_id="jv-static"))
    processes.wait_stable(group, members=2)
    snap = snapshot_via_cli(run_cli, bootstrap, group)
    assert (snap.group_type, snap.state, snap.selected_assignor) == (
        "classic",
        "stable",
        "cooperative-sticky",
    )
    members = {m.client_id: m for m in snap.members}
    assert members["py"].client_family.value == "librdkafka"
    # an app-set client id on a Java member: Java and franz-go send the same subscription shape
    java = members["jv"]
    assert (java.client_family.value, java.instance_id) == ("unknown", "jv-static")
    assert "java" in java.client_family.signal and "franz-go" in java.client_family.signal
    assert {m.rebalance_protocol.value for m in snap.members} <= {"cooperative", "unknown"}
    assert members["py"].rebalance_protocol.value == "cooperative"
    assert sorted(p for m in snap.members for p in m.assignment) == [(topic, p) for p in range(6)]
    table = run_cli("describe", group, "--bootstrap-server", bootstrap)
    assert table.code == 0
    assert "jv-static" in table.stdout and "librdkafka" in table.stdout and "unknown" in table.stdout


def test_a_group_mid_migration_to_kip848_shows_classic_and_consumer_members(
    processes: MemberProcesses,
    bootstrap: str,
    manifests_topic: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic = topic_factory(6)
    group = unique("mid848")
    classic = MemberSpec(
        name="c0", kind="python", group=group, topics=(topic,), assignors=("range",), manifests=False
    )
    processes.add_many([classic, classic.replace(name="c1")])
    processes.wait_stable(group, members=2)
    processes.add(classic.replace(name="k0", group_protocol="consumer", manifests=False))
    processes.add(classic.replace(name="k1", kind="java", group_protocol="consumer", manifests=True))
    processes.wait_stable(group, members=4)
    deadline = time.monotonic() + 15
    snap = take_snapshot(admin, group)
    while time.monotonic() < deadline and _by_client(snap)["k1"].manifest is None:
        time.sleep(0.5)  # a manifest is published right after the assignment callback: let it land
        snap = take_snapshot(admin, group)
    assert snap.group_type == "consumer"
    members = _by_client(snap)
    assert {n: members[n].member_type.value for n in ("c0", "c1", "k0", "k1")} == {
        "c0": "classic",
        "c1": "classic",
        "k0": "consumer",
        "k1": "consumer",
    }
    # the coordinator says every member's type (ConsumerGroupDescribe v1); it comes before a manifest
    assert {members[n].member_type.source for n in ("c0", "c1", "k0", "k1")} == {"broker"}
    assert members["k1"].manifest is not None
    assert members["k0"].rebalance_protocol.value == "consumer"


def test_a_pure_consumer_protocol_group_is_described_with_consumer_members(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
) -> None:
    topic = topic_factory(4)
    group = unique("pure848")
    spec = MemberSpec(
        name="k", kind="python", group=group, topics=(topic,), group_protocol="consumer", manifests=False
    )
    processes.add_many([spec, spec.replace(name="kj", kind="java")])
    processes.wait_stable(group, members=2)
    snap = take_snapshot(admin, group)
    assert (snap.group_type, snap.selected_assignor) == ("consumer", "uniform")
    assert {m.member_type.value for m in snap.members} == {"consumer"}
    assert {m.rebalance_protocol.value for m in snap.members} == {"consumer"}


def test_kip848_user_data_gate_agrees_with_the_assignment_bytes_of_a_librdkafka_cooperative_group(
    processes: MemberProcesses,
    admin: ClusterAdmin,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    """librdkafka's cooperative-sticky leader was seen writing assignment userData (tests/unit/vectors),
    which makes the broker refuse KIP-848 conversion; not every time, so the gate must follow the bytes."""
    topic = topic_factory(4)
    group = unique("userdata")
    spec = MemberSpec(
        name="u0", kind="python", group=group, topics=(topic,), assignors=("cooperative-sticky",)
    )
    processes.add_many([spec, spec.replace(name="u1")])
    processes.wait_stable(group, members=2)
    deadline = time.monotonic() + 20
    snap = take_snapshot(admin, group, with_lag=False)
    while time.monotonic() < deadline and any(m.assignment_user_data is None for m in snap.members):
        time.sleep(0.5)  # member bytes are only visible while the group is Stable
        snap = take_snapshot(admin, group, with_lag=False)
    carrying = any(m.assignment_user_data for m in snap.members)
    result = run_cli(
        "verify-group",
        group,
        "--bootstrap-server",
        bootstrap,
        "--migration",
        "classic-to-consumer",
        "--phase",
        "0",
        "--lag-window",
        "0",
        "-o",
        "json",
    )
    checks = {c["name"]: c for c in result.json()["checks"]}
    assert checks["no-custom-user-data"]["status"] == ("fail" if carrying else "pass")
    assert result.code == (1 if carrying else 0)
    if carrying:
        assert "userData" in checks["no-custom-user-data"]["reason"]
    assert checks["broker-version"]["status"] == "pass"
    assert checks["migration-policy"]["status"] == "pass"


def test_kip848_gate_passes_for_an_eager_librdkafka_group(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    topic = topic_factory(4)
    group = unique("eager848")
    spec = MemberSpec(name="e0", kind="python", group=group, topics=(topic,), assignors=("range",))
    processes.add_many([spec, spec.replace(name="e1")])
    processes.wait_stable(group, members=2)
    result = run_cli(
        "verify-group",
        group,
        "--bootstrap-server",
        bootstrap,
        "--migration",
        "classic-to-consumer",
        "--phase",
        "0",
        "--lag-window",
        "0",
    )
    assert result.code == 0, result.stdout
    assert "no-custom-user-data" in result.stdout


def test_describe_all_lists_groups_with_type_state_and_protocol(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    topic = topic_factory(2)
    group = unique("listed")
    processes.add(
        MemberSpec(name="l0", kind="python", group=group, topics=(topic,), assignors=("cooperative-sticky",))
    )
    processes.wait_stable(group, members=1)
    rows = {
        r["group_id"]: r
        for r in run_cli("describe", "--all", "--bootstrap-server", bootstrap, "-o", "json").json()["groups"]
    }
    assert rows[group] | {"static_members": 0} == {
        "group_id": group,
        "type": "classic",
        "state": "stable",
        "is_simple": False,
        "assignor": "cooperative-sticky",
        "protocol": "cooperative",
        "members": 1,
        "static_members": 0,
        "kind": "classic",
        "protocol_type": "consumer",
    }


def test_describe_all_as_a_table_is_one_aligned_line_per_group(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    topic = topic_factory(1)
    group = unique("tabled")
    processes.add(MemberSpec(name="t0", kind="python", group=group, topics=(topic,), assignors=("range",)))
    processes.wait_stable(group, members=1)
    result = run_cli("describe", "--all", "--bootstrap-server", bootstrap)
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("group "))
    assert lines[header].split() == ["group", "type", "state", "assignor", "protocol", "members", "static"]
    row = next(line for line in lines if line.startswith(group + " "))
    assert row.split() == [group, "classic", "stable", "range", "eager", "1", "0"]
    assert row.index("classic") == lines[header].index("type"), "columns line up with the header"


def test_describe_and_verify_tables_show_bracketed_ids_as_they_are_on_the_broker(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    """Kafka takes any string as a group id or client.id; rich would read `[prod]` as a style, `[bold]`
    as markup and `:id:` as an emoji code."""
    topic = topic_factory(1)
    group = unique("shown") + "[prod]"
    client = "[bold]svc:id:0"
    processes.add(MemberSpec(name=client, kind="python", group=group, topics=(topic,), assignors=("range",)))
    processes.wait_stable(group, members=1)
    described = run_cli("describe", group, "--bootstrap-server", bootstrap, "--no-lag")
    assert described.code == 0, described.stderr
    # librdkafka's member ids start with the client id: `[bold]svc:id:0-<uuid>  [bold]svc:id:0  …`
    [member_line] = [line for line in described.stdout.splitlines() if line.startswith(f"{client}-")]
    assert member_line.split()[1] == client
    verified = run_cli("verify-group", group, "--bootstrap-server", bootstrap, "--lag-window", "0")
    assert verified.code == 0, verified.stderr
    assert f"verify-group {group}\n" in verified.stdout


def test_describe_of_an_unknown_group_is_one_sentence_and_exit_2(
    bootstrap: str, unique: Callable[[str], str], run_cli: Callable[..., CliResult]
) -> None:
    result = run_cli("describe", unique("nope"), "--bootstrap-server", bootstrap)
    assert result.code == 2
    assert "does not exist" in result.stderr


def test_verify_of_an_unknown_group_is_the_same_error_as_describe(
    bootstrap: str, unique: Callable[[str], str], run_cli: Callable[..., CliResult]
) -> None:
    """A missing group is bad input (exit 2) everywhere, not a gate verdict (exit 1): a pipeline must
    not read a typo in a group name as "the group is not ready yet"."""
    result = run_cli("verify-group", unique("nope"), "--bootstrap-server", bootstrap, "-o", "json")
    assert result.code == 2
    assert "does not exist" in result.stderr
    assert result.json()["error"]["meaning"] == "bad input", "the error object, not a verdict"


@pytest.mark.parametrize("command", ["describe", "verify-group"])
def test_an_unreachable_bootstrap_is_one_sentence_and_exit_3(
    command: str, run_cli: Callable[..., CliResult]
) -> None:
    dead = f"127.0.0.1:{free_port()}"
    args = ["g", "--bootstrap-server", dead]
    args += ["--timeout", "3"] if command == "describe" else ["--lag-window", "0"]
    result = run_cli(command, *args)
    assert result.code == 3
    assert "Nothing is listening at" in result.stderr and "the connection was refused" in result.stderr


def test_the_snapshot_json_round_trips_and_carries_broker_facts(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    topic = topic_factory(2)
    group = unique("json")
    processes.add(MemberSpec(name="j0", kind="python", group=group, topics=(topic,), assignors=("range",)))
    processes.wait_stable(group, members=1)
    raw = run_cli("describe", group, "--bootstrap-server", bootstrap, "-o", "json").stdout
    snap = GroupSnapshot.model_validate(json.loads(raw))
    # the release kafka-python reads off the APIs the broker serves (the coordinator's ApiVersions): a
    # 4.4 broker serves more than kafka-python's newest table (4.3), so it reads as newer than that
    assert (snap.broker.kafka_version.value, snap.broker.kafka_version.signal) == (
        "4.4+",
        "ApiVersions: the APIs it serves",
    )
    assert snap.broker.migration_policy == "bidirectional"
    assert snap.broker.rebalance_protocols is not None and "consumer" in snap.broker.rebalance_protocols
    assert snap.broker.group_max_size is not None


def test_verify_lag_window_is_measured_and_stated(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    """Default: two lag samples, the window is the gathering (no sleep); --lag-window S: at least S."""
    import re

    from confluent_kafka import Producer

    topic = topic_factory(2)
    group = unique("lagwin")
    processes.add(MemberSpec(name="w0", kind="java", group=group, topics=(topic,), assignors=("range",)))
    processes.wait_stable(group, members=1)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(20):
        producer.produce(topic, b"x", partition=i % 2)
    producer.flush(10)
    admin = ClusterAdmin(bootstrap)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(admin.offsets(group)) < 2:
        time.sleep(0.5)  # the member commits what it processed about once a second

    def lag_reason(*extra: str) -> tuple[str, float]:
        start = time.monotonic()
        result = run_cli("verify-group", group, "--bootstrap-server", bootstrap, *extra, "-o", "json")
        elapsed = time.monotonic() - start
        assert result.code == 0, result.stderr
        return next(c["reason"] for c in result.json()["checks"] if c["name"] == "lag-not-growing"), elapsed

    reason, _ = lag_reason()
    match = re.fullmatch(r"lag (\d+) -> (\d+) in (\d+\.\d) s", reason)
    assert match, reason  # two samples, the measured window stated
    reason, elapsed = lag_reason("--lag-window", "1.5")
    match = re.fullmatch(r"lag (\d+) -> (\d+) in (\d+\.\d) s", reason)
    assert match and float(match.group(3)) >= 1.5, reason
    assert elapsed >= 1.5
    reason, _ = lag_reason("--lag-window", "0")
    assert reason.endswith("(one sample)"), reason


def test_a_cooperative_java_group_started_all_at_once_is_not_described_as_eager(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    """A fresh group (or one restarted all at once) sends no owned partitions, whatever its protocol; it
    was read as eager, and the cooperative phase's gate failed members that were cooperative."""
    topic = topic_factory(4)
    group = unique("first-joins")
    spec = MemberSpec(
        name="fresh",
        kind="java",
        group=group,
        topics=(topic,),
        assignors=("cooperative-sticky",),
        members=2,
        manifests=False,
    )
    processes.add(spec)
    processes.wait_stable(group, members=2)
    members = snapshot_via_cli(run_cli, bootstrap, group).members
    assert len(members) == 2
    assert [m.rebalance_protocol.value for m in members if m.rebalance_protocol.value == "eager"] == []

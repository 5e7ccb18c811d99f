"""Broker overrides and identifiers the sandbox generates, checked without starting Kafka."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_coop.errors import InvalidInput
from kafka_coop.sandbox._node_config import parse_overrides, random_cluster_id
from tests.conftest import CliResult


def test_overrides_accept_key_value_pairs() -> None:
    assert parse_overrides(["group.max.size=5", " a.b = c "]) == {"group.max.size": "5", "a.b": "c"}


def test_an_override_without_equals_sign_is_bad_input() -> None:
    with pytest.raises(InvalidInput, match="not of the form key=value"):
        parse_overrides(["group.max.size"])


@pytest.mark.parametrize("key", ["listeners", "log.dirs", "controller.quorum.voters", "node.id"])
def test_settings_that_wire_the_sandbox_cannot_be_overridden(key: str) -> None:
    with pytest.raises(InvalidInput, match="managed by the sandbox"):
        parse_overrides({key: "x"})


def test_cluster_id_is_kafka_uuid_text() -> None:
    for _ in range(200):
        text = random_cluster_id()
        assert len(text) == 22 and not text.startswith("-")
        assert len(base64.urlsafe_b64decode(text + "==")) == 16


def test_a_free_port_for_a_sandbox_listener_is_below_the_ephemeral_range() -> None:
    """A client port in the ephemeral range can be taken as some connection's source port while its node
    is down (clients keep reconnecting), and the node's restart then fails with "Address in use"."""
    from kafka_coop.sandbox import free_port
    from kafka_coop.sandbox._ports import _ephemeral_low

    low = _ephemeral_low()
    ports = [free_port() for _ in range(20)]
    assert all(1024 < port < low for port in ports), (low, ports)


def test_a_secured_fleet_passes_its_client_properties_to_python_members_and_refuses_others(
    tmp_path: Path,
) -> None:
    from kafka_coop.sandbox import MemberProcess
    from kafka_coop.sandbox.testing import MemberSpec

    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n")
    spec = MemberSpec(name="m0", kind="python", group="g", topics=("t",))
    cmd = MemberProcess(spec, tmp_path, "b:9093", "4.1.1", props).command()
    assert cmd[cmd.index("--command-config") + 1] == str(props)
    assert "--command-config" not in MemberProcess(spec, tmp_path, "b:9093", "4.1.1").command()
    with pytest.raises(InvalidInput, match="only python members take a client properties file"):
        MemberProcess(spec.replace(kind="java"), tmp_path, "b:9093", "4.1.1", props).command()


def test_demo_takes_a_command_config_only_for_a_cluster_it_is_given(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SASL_SSL\n")
    result = invoke_cli("demo", "--command-config", str(props))
    assert result.code == 2
    assert "--command-config is for a cluster given with --bootstrap-server" in result.stderr


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (":6", "has no topic name"),
        ("orders:six", "partition count must be a whole number"),
        ("orders:0", "partition count must be a whole number"),
    ],
)
def test_a_topic_to_create_that_is_not_name_or_name_colon_partitions_is_exit_2_before_any_start(
    value: str, message: str, invoke_cli: Callable[..., CliResult]
) -> None:
    result = invoke_cli("sandbox", "start", "--topic", value, "--port", "1")
    assert result.code == 2
    assert message in result.stderr


def test_a_member_of_a_family_the_wheel_does_not_run_needs_the_test_beds_command(tmp_path: Path) -> None:
    """The wheel runs java and python members; the other families' are built by the repository's testbed/,
    whose `member_command` the caller passes in."""
    from kafka_coop.sandbox import MemberProcess
    from kafka_coop.sandbox.testing import MemberSpec

    spec = MemberSpec(name="g0", kind="franz-go", group="g", topics=("t",))
    with pytest.raises(InvalidInput, match="the package runs java and python members; franz-go members are"):
        MemberProcess(spec, tmp_path, "b:9093", "4.1.1").command()
    cmd = MemberProcess(spec, tmp_path, "b:9093", "4.1.1", families=lambda kind: ["run", kind]).command()
    assert cmd[:4] == ["run", "franz-go", "--bootstrap", "b:9093"]

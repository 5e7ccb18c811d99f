"""One parser for `host:port` lists (--bootstrap-server, KAFKA_BOOTSTRAP_SERVERS, a conf's
bootstrap.servers), the check of a conf's file paths, and typed flags that contradict a setting: each
mistake is one sentence and exit 2 before anything connects."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_coop.cli._context import bootstrap_hosts, check_conf_files, same_bootstrap
from kafka_coop.errors import InvalidInput
from tests.conftest import CliResult


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("127.0.0.1:9092", [("127.0.0.1", 9092)]),
        ("a:1, b:2,", [("a", 1), ("b", 2)]),
        ("[::1]:9092", [("::1", 9092)]),
        ("kafka-0.kafka.svc:65535", [("kafka-0.kafka.svc", 65535)]),
    ],
)
def test_a_list_of_host_port_is_read(text: str, hosts: list[tuple[str, int]]) -> None:
    assert bootstrap_hosts(text) == hosts


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("localhost", "'localhost' has no port: give HOST:PORT (e.g. localhost:9092)."),
        ("http://127.0.0.1:29201", "has a scheme (http://): give HOST:PORT without it."),
        ("PLAINTEXT://127.0.0.1:9092", "has a scheme (PLAINTEXT://)"),
        ("127.0.0.1:99999", "the port 99999 is not in 1-65535."),
        ("127.0.0.1:0", "the port 0 is not in 1-65535."),
        ("localhost:port", "the port 'port' is not a number."),
        ("::1:9092", "write an IPv6 address as [ADDRESS]:PORT."),
        ("[::1]", "[ADDRESS]:PORT"),
        ("a:1,b", "'b' has no port"),
        (" , ", "no HOST:PORT given."),
    ],
)
def test_a_malformed_entry_is_one_sentence_naming_it(text: str, says: str) -> None:
    with pytest.raises(ValueError) as caught:
        bootstrap_hosts(text)
    sentence = str(caught.value)
    assert says in sentence
    assert sentence.endswith(".") and "\n" not in sentence


def test_the_same_brokers_in_another_order_are_the_same_bootstrap() -> None:
    assert same_bootstrap("B:2,a:1", "a:1, b:2")
    assert not same_bootstrap("a:1", "a:2")


@pytest.mark.parametrize(
    "value",
    ["localhost", "http://127.0.0.1:29201", "127.0.0.1:99999"],
)
def test_a_malformed_bootstrap_server_is_exit_2_before_any_connection(
    invoke_cli: Callable[..., CliResult], value: str
) -> None:
    result = invoke_cli("describe", "g", "--bootstrap-server", value)
    assert result.code == 2
    assert result.stderr.splitlines()[0].startswith("Error: Invalid value for '--bootstrap-server'")
    assert len(result.stderr.splitlines()) == 2  # the sentence and one hint


def test_the_environment_variable_is_read_by_the_same_parser(
    invoke_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "localhost")
    result = invoke_cli("describe", "g")
    assert result.code == 2
    assert "'localhost' has no port" in result.stderr


def test_a_bootstrap_servers_in_the_command_config_is_read_by_the_same_parser(
    invoke_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    config = tmp_path / "c.properties"
    config.write_text("bootstrap.servers=http://127.0.0.1:1\n")
    result = invoke_cli("describe", "g", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(config))
    assert result.code == 2
    assert f"--command-config {config} sets bootstrap.servers='http://127.0.0.1:1': " in result.stderr


def test_a_command_config_naming_other_brokers_than_the_flag_is_refused(
    invoke_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    config = tmp_path / "c.properties"
    config.write_text("bootstrap.servers=127.0.0.1:2\n")
    result = invoke_cli("describe", "g", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(config))
    assert result.code == 2
    assert "--bootstrap-server 127.0.0.1:1 and --command-config" in result.stderr
    assert "bootstrap.servers=127.0.0.1:2 contradict each other." in result.stderr


def test_a_missing_ca_file_is_named_by_its_key_and_path(
    invoke_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    config = tmp_path / "c.properties"
    config.write_text(f"security.protocol=SSL\nssl.ca.location={tmp_path}/nope/ca.pem\n")
    result = invoke_cli("describe", "g", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(config))
    assert result.code == 2
    missing = f"{tmp_path}/nope/ca.pem"
    assert result.stderr.startswith(
        f"Error: --command-config {config} sets ssl.ca.location to '{missing}', which does not exist."
    )


def test_an_unreadable_key_file_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Root may read every file (CI runs as root), so the permission answer is the one thing faked."""
    key = tmp_path / "key.pem"
    key.write_text("x")
    monkeypatch.setattr(os, "access", lambda path, mode: not (str(path) == str(key) and mode == os.R_OK))
    with pytest.raises(InvalidInput, match=r"ssl.key.location .* which this user may not read"):
        check_conf_files({"ssl.key.location": str(key)}, source="--conf")


def test_a_ca_directory_and_the_probe_value_are_accepted(tmp_path: Path) -> None:
    check_conf_files({"ssl.ca.location": str(tmp_path)}, source="--conf")
    check_conf_files({"ssl.ca.location": "probe"}, source="--conf")


def test_a_directory_where_a_file_is_needed_is_named(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"ssl.certificate.location to .* which is a directory"):
        check_conf_files({"ssl.certificate.location": str(tmp_path)}, source="--conf")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--rebalance", "eager-range", "--conf", "partition.assignment.strategy=cooperative-sticky"],
            "--rebalance eager-range (partition.assignment.strategy range) and --conf "
            "partition.assignment.strategy=cooperative-sticky contradict each other.",
        ),
        (
            ["--rebalance", "consumer", "--conf", "group.protocol=classic"],
            "group.protocol=classic contradict",
        ),
        (
            ["--rebalance", "eager-range", "--conf", "group.protocol=consumer"],
            "group.protocol=consumer contradict",
        ),
        (["--conf", "group.id=other"], "GROUP g and --conf group.id=other contradict"),
        (["--conf", "bootstrap.servers=127.0.0.1:2"], "--bootstrap-server 127.0.0.1:1 and --conf"),
        (
            ["--instance-id", "a", "--conf", "group.instance.id=b"],
            "--instance-id a and --conf group.instance.id=b",
        ),
        (
            [
                "--rebalance",
                "consumer",
                "--remote-assignor",
                "uniform",
                "--conf",
                "group.remote.assignor=range",
            ],
            "--remote-assignor uniform and --conf group.remote.assignor=range",
        ),
    ],
)
def test_consume_refuses_a_flag_and_a_setting_that_contradict_each_other(
    invoke_cli: Callable[..., CliResult], args: list[str], says: str
) -> None:
    result = invoke_cli("consume", "g", "t", "--bootstrap-server", "127.0.0.1:1", *args)
    assert result.code == 2, result.stderr
    assert result.stderr.startswith("Error: ") and says in result.stderr


def test_consume_takes_a_setting_that_agrees_with_the_flag_and_one_that_the_default_gives_way_to(
    invoke_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """Agreeing is not a contradiction; an untyped --rebalance gives way to the conf. The command then
    goes on to its next check: a missing file, named (no broker is reached)."""
    for args in (
        ["--rebalance", "eager-range", "--conf", "partition.assignment.strategy=RANGE"],
        ["--conf", "partition.assignment.strategy=roundrobin"],
    ):
        result = invoke_cli(
            "consume",
            "g",
            "t",
            "--bootstrap-server",
            "127.0.0.1:1",
            *args,
            "--conf",
            f"ssl.ca.location={tmp_path}/missing.pem",
        )
        assert result.code == 2
        assert "contradict" not in result.stderr
        assert "sets ssl.ca.location" in result.stderr

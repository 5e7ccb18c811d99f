"""The CLI at its edges, in this process (click's CliRunner through `main`): each ordinary mistake is
one `Error:` sentence with a hint and its exit code (0 ok, 1 verdict, 2 bad input, 3 cluster,
130 interrupted), no traceback, nothing written. None of these reach a broker: what needs one (an
unreachable or refused cluster, Ctrl-C at a wait, a closed pipe) is walked from outside in
tests/integration/cli/test_contract.py.
"""

from __future__ import annotations

import errno
import io
import json
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_coop.cli._exit_codes import GuardedStdout, as_error
from kafka_coop.cli.main import _command_name
from kafka_coop.errors import ClusterUnavailable, InvalidInput
from tests.conftest import CliResult
from tests.unit.analytics.test_engine import ev

UNUSED = "127.0.0.1:1"  # resolves, never contacted: every case below fails before a connection


def one_sentence(result: CliResult) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0].removeprefix("Error: ")


@pytest.fixture
def events(tmp_path: Path) -> Path:
    path = tmp_path / "events.jsonl"
    path.write_text(
        "".join(
            json.dumps(e) + "\n" for e in (ev("a", 0, 0, "started"), ev("a", 1, 100, "assigned", (0,), (0,)))
        )
    )
    return path


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("not a directory\n")
    return path


def properties(tmp_path: Path, text: str) -> str:
    path = tmp_path / "client.properties"
    path.write_text(text)
    return str(path)


# --- paths -----------------------------------------------------------------------------------------
def test_report_out_under_a_file_is_exit_2_naming_out(
    invoke_cli: Callable[..., CliResult], events: Path, a_file: Path
) -> None:
    result = invoke_cli("report", str(events), "--out", f"{a_file}/report")
    assert result.code == 2
    assert one_sentence(result) == (
        f"Cannot write the report to '{a_file}/report': a part of its path is a file, not a directory."
    )


def test_report_out_in_proc_is_exit_2_and_leaves_nothing(
    invoke_cli: Callable[..., CliResult], events: Path
) -> None:
    result = invoke_cli("report", str(events), "--out", "/proc/kafka-coop-report")
    assert result.code == 2
    assert one_sentence(result).startswith("Cannot write the report to '/proc/kafka-coop-report': ")
    assert not list(Path("/proc").glob(".kafka-coop-report*"))


def test_consume_events_under_a_file_is_exit_2_and_leaves_no_records_file(
    invoke_cli: Callable[..., CliResult], a_file: Path, tmp_path: Path
) -> None:
    records = tmp_path / "records.txt"
    result = invoke_cli(
        "consume",
        "g",
        "t",
        "--bootstrap-server",
        UNUSED,
        "--events",
        f"{a_file}/e.jsonl",
        "--records",
        str(records),
    )
    assert result.code == 2
    assert (
        one_sentence(result) == f"Cannot use the path '{a_file}': it is a file, where a directory is needed."
    )
    assert not records.exists()


def test_sandbox_start_dir_under_a_file_is_exit_2(invoke_cli: Callable[..., CliResult], a_file: Path) -> None:
    result = invoke_cli("sandbox", "start", "--dir", f"{a_file}/sandbox")
    assert result.code == 2
    assert str(a_file) in one_sentence(result)


def test_a_missing_command_config_is_exit_2(invoke_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    result = invoke_cli(
        "describe", "g", "--bootstrap-server", UNUSED, "--command-config", str(tmp_path / "nope")
    )
    assert result.code == 2
    assert "does not exist" in one_sentence(result)


# --- keys and values -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("key", "instead"),
    [
        ("ssl.truststore.location=/etc/kafka/truststore.jks", "ssl.ca.location"),
        (
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required;",
            "sasl.username",
        ),
    ],
    ids=["truststore", "jaas"],
)
def test_a_java_only_key_in_command_config_is_exit_2_with_its_librdkafka_equivalent(
    invoke_cli: Callable[..., CliResult], tmp_path: Path, key: str, instead: str
) -> None:
    path = properties(tmp_path, f"security.protocol=SSL\n{key}\n")
    result = invoke_cli("describe", "g", "--bootstrap-server", UNUSED, "--command-config", path)
    assert result.code == 2
    name = key.split("=", 1)[0]
    assert one_sentence(result) == (
        f"--command-config {path} sets {name}, a Java client property that librdkafka does not take."
    )
    assert f"Hint: Write {instead}" in result.stderr


def test_a_java_only_key_in_command_config_never_echoes_its_value(
    invoke_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    path = properties(tmp_path, 'sasl.jaas.config=... username="u" password="SECRET-7f3a";\n')
    result = invoke_cli("verify-group", "g", "--bootstrap-server", UNUSED, "--command-config", path)
    assert result.code == 2
    assert "SECRET-7f3a" not in result.stderr + result.stdout


def test_consume_with_an_unknown_librdkafka_key_is_exit_2(invoke_cli: Callable[..., CliResult]) -> None:
    result = invoke_cli("consume", "g", "t", "--bootstrap-server", UNUSED, "--conf", "foo.bar=1")
    assert result.code == 2
    assert one_sentence(result).startswith(
        "librdkafka refused the setting foo.bar='1' from --conf or --command-config"
    )


def test_consume_with_a_java_only_conf_is_exit_2(invoke_cli: Callable[..., CliResult]) -> None:
    result = invoke_cli(
        "consume", "g", "t", "--bootstrap-server", UNUSED, "--conf", "ssl.truststore.location=/x"
    )
    assert result.code == 2
    assert one_sentence(result).startswith("--conf sets ssl.truststore.location")


@pytest.mark.parametrize("bootstrap", ["localhost:port", "127.0.0.1:0", ":9092", ","])
def test_a_bootstrap_that_is_not_host_port_is_a_usage_error(
    invoke_cli: Callable[..., CliResult], bootstrap: str
) -> None:
    result = invoke_cli("describe", "g", "--bootstrap-server", bootstrap)
    assert result.code == 2
    assert "Traceback" not in result.stderr and "--bootstrap-server" in result.stderr


@pytest.mark.parametrize("version", ["3.6.2", "4.3.0"])
def test_an_untested_kafka_version_is_exit_2_before_any_download(
    invoke_cli: Callable[..., CliResult], tmp_path: Path, version: str
) -> None:
    result = invoke_cli("sandbox", "start", "--dir", str(tmp_path / "sb"), "--kafka-version", version)
    assert result.code == 2
    assert "not a release the sandbox is tested on: it runs 3.7.x" in one_sentence(result)
    assert not (tmp_path / "sb" / "sandbox.json").exists()


def test_verify_group_refuses_the_plan_of_another_group(
    invoke_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "group: other-group\nbroker:\n  version: '4.1'\n  migration_policy: bidirectional\n"
        "members:\n  - family: java\n    count: 2\n    assignors: [range]\n"
    )
    plan = invoke_cli("upgrade-plan", "--fleet", str(fleet), "--to", "cooperative", "-o", "json")
    assert plan.code == 0, plan.stderr
    (tmp_path / "plan.json").write_text(plan.stdout)
    result = invoke_cli(
        "verify-group",
        "orders",
        "--bootstrap-server",
        UNUSED,
        "--plan",
        str(tmp_path / "plan.json"),
        "--phase",
        "1",
    )
    assert result.code == 2
    assert (
        one_sentence(result)
        == f"Plan file '{tmp_path / 'plan.json'}' is the plan of group 'other-group', not of 'orders'."
    )


# --- the mapping in one place ----------------------------------------------------------------------
def test_an_oserror_on_a_path_is_bad_input_naming_the_path() -> None:
    error = as_error(OSError(errno.EROFS, "Read-only file system", "/ro/out"), "report")
    assert isinstance(error, InvalidInput)
    assert error.message == "Cannot use the path '/ro/out': the file system is read-only."


def test_a_refused_connection_is_the_cluster() -> None:
    error = as_error(ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), "describe")
    assert isinstance(error, ClusterUnavailable) and error.exit_code == 3


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]
)
def test_an_interrupt_is_128_plus_the_signal(signum: int, code: int) -> None:
    from kafka_coop.cli._exit_codes import Signalled

    error = as_error(Signalled(signum), "describe")
    assert error is not None and error.exit_code == code
    assert error.message.endswith("before `kafka-coop describe` finished.")


def test_a_bug_is_not_mapped_so_its_traceback_shows() -> None:
    assert as_error(ZeroDivisionError(), "describe") is None


def test_a_stdout_whose_reader_went_away_swallows_the_rest() -> None:
    class Gone(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    guard = GuardedStdout(Gone())
    assert guard.write("plan\n") == 5
    guard.flush()
    assert guard.reader_gone


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["describe", "g", "--all"], "describe"),
        (["sandbox", "start", "--dir", "x"], "sandbox start"),
        ([], "(no command)"),
    ],
)
def test_the_interrupt_sentence_names_the_command_as_typed(args: list[str], name: str) -> None:
    assert _command_name(args) == name

"""Under `--output json` a failed command prints one error object on stdout (schema `error`) as well
as its sentence on stderr, usage errors included; a usage error is one line and one hint. No secret of
--command-config reaches either."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest

from kafka_coop.cli._error_output import error_json, meaning_of, wants_json
from kafka_coop.schemas import read_schema
from tests.conftest import CliResult

CANARY = "CANARY-unit-7d1e"


def _published() -> dict[str, object]:
    found = read_schema("error", None)
    assert found is not None
    return json.loads(found[1])  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("code", "meaning"),
    [(1, "verdict"), (2, "bad input"), (3, "cluster"), (130, "interrupted"), (143, "interrupted")],
)
def test_the_exit_code_is_given_with_its_meaning(code: int, meaning: str) -> None:
    assert meaning_of(code) == meaning


def test_the_error_object_is_what_the_published_schema_describes() -> None:
    body = json.loads(error_json("describe", 3, "Nothing is listening at a:1.", None))
    jsonschema.validate(body, _published())
    assert body == {
        "v": 1,
        "kind": "error",
        "error": {
            "command": "describe",
            "exit_code": 3,
            "meaning": "cluster",
            "message": "Nothing is listening at a:1.",
            "hint": None,
        },
    }


@pytest.mark.parametrize(
    ("args", "wanted"),
    [
        (["describe", "-o", "json"], True),
        (["describe", "--output", "json"], True),
        (["describe", "--output=json"], True),
        (["describe", "-ojson"], True),
        (["describe", "-o", "table"], False),
        (["describe", "--", "-o", "json"], False),
        (["describe"], False),
    ],
)
def test_json_is_asked_for_in_every_spelling_click_takes(args: list[str], wanted: bool) -> None:
    assert wants_json(args) is wanted


def test_a_usage_error_under_json_prints_the_error_object_and_one_line_on_stderr(
    invoke_cli: Callable[..., CliResult],
) -> None:
    result = invoke_cli("describe", "g", "--bootstrap-server", "localhost", "-o", "json")
    assert result.code == 2
    body = result.json()
    jsonschema.validate(body, _published())
    assert body["error"]["meaning"] == "bad input"
    assert "'localhost' has no port" in body["error"]["message"]
    assert body["error"]["hint"] == "`kafka-coop describe --help` lists its arguments and options."
    assert result.stderr.splitlines() == [
        f"Error: {body['error']['message']}",
        f"Hint: {body['error']['hint']}",
    ]


def test_an_unknown_option_is_one_line_and_one_hint_without_json(
    invoke_cli: Callable[..., CliResult],
) -> None:
    result = invoke_cli("describe", "g", "--bogus")
    assert result.code == 2
    assert result.stdout == ""
    error, hint = result.stderr.splitlines()  # one line each
    # Click's own sentence names the option (its wording differs between Click releases: 8.1, 8.2)
    assert error in ("Error: No such option '--bogus'.", "Error: No such option: --bogus.")
    assert hint == "Hint: `kafka-coop describe --help` lists its arguments and options."


def test_a_bad_file_under_json_is_the_error_object_without_the_password(
    invoke_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    config = tmp_path / "c.properties"
    config.write_text(
        f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=u\nsasl.password={CANARY}\n"
        f"ssl.ca.location={tmp_path}/ca.pem\nssl.key.password={CANARY}\n"
    )
    result = invoke_cli(
        "verify-group",
        "g",
        "--bootstrap-server",
        "127.0.0.1:1",
        "--command-config",
        str(config),
        "-o",
        "json",
    )
    assert result.code == 2
    body = result.json()
    jsonschema.validate(body, _published())
    assert body["error"]["command"] == "verify-group"
    assert "sets ssl.ca.location" in body["error"]["message"]
    assert CANARY not in result.stdout + result.stderr


def test_a_command_that_printed_its_result_prints_no_error_object_after_it(
    invoke_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """A blocked plan is the plan (exit 1): stdout stays one document, the plan's."""
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "group: orders\nbroker:\n  version: '4.1'\n  migration_policy: disabled\nmembers:\n"
        "  - family: librdkafka\n    count: 2\n    assignors: [range]\n"
    )
    result = invoke_cli("upgrade-plan", "--fleet", str(fleet), "--to", "consumer", "-o", "json")
    assert result.code == 1
    assert result.json()["status"] == "blocked"


@pytest.mark.parametrize(
    "command", [("rollout", "run", "--to", "consumer", "--rollback"), ("rollout", "resume")]
)
def test_a_json_lines_command_prints_its_error_object_on_one_line_under_its_own_name(
    invoke_cli: Callable[..., CliResult], tmp_path: Path, command: tuple[str, ...]
) -> None:
    """`rollout run -o json` prints a progress record a line: an error before the first is one line too,
    and names the subcommand, as a pipeline reading lines needs."""
    group, sub, *rest = command
    journal = tmp_path / "none.jsonl"
    result = invoke_cli(group, sub, "g", *rest, "--journal", str(journal), "-o", "json")
    assert result.code == 2
    [line] = result.stdout.splitlines()
    body = json.loads(line)
    jsonschema.validate(body, _published())
    assert body["error"]["command"] == f"rollout {sub}"


def test_watch_under_json_prints_a_usage_error_on_one_line(invoke_cli: Callable[..., CliResult]) -> None:
    result = invoke_cli("watch", "g", "--bootstrap-server", "localhost", "-o", "json")
    assert result.code == 2
    [line] = result.stdout.splitlines()
    assert json.loads(line)["error"]["command"] == "watch"

"""Every `--output json` has a version `v` and a published JSON Schema generated from its model
(issue 27): the shipped file of a version never changes, so a changed model must bump `v`."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from click.testing import CliRunner

from kafka_coop.cli.main import cli
from kafka_coop.cli.schema import COMMAND_SCHEMAS, SCHEMAS_LAZY, generate, model_of, version_of
from kafka_coop.schemas import read_schema, schema_files
from tests.conftest import CliResult


@pytest.mark.parametrize("name", sorted(SCHEMAS_LAZY))
def test_the_shipped_schema_of_the_current_version_is_what_the_model_generates(name: str) -> None:
    """Changing a model without bumping its `v` fails here (the file of that version differs)."""
    version, text = generate(name)
    shipped = read_schema(name, version)
    assert shipped is not None, f"{name}.v{version}.json is missing: python -m kafka_coop.cli.schema --write"
    assert shipped[1] == text, f"{name} changed without bumping v{version}"


@pytest.mark.parametrize("name", sorted(SCHEMAS_LAZY))
def test_every_output_model_prints_a_version(name: str) -> None:
    """A root model (a union of shapes) prints the one `v` all of its variants print."""
    assert version_of(model_of(name)) >= 1


def test_every_shipped_schema_belongs_to_a_known_output() -> None:
    assert set(schema_files()) == set(SCHEMAS_LAZY)


def test_every_command_with_json_output_has_a_schema() -> None:
    """The commands that take --output json (walked from the CLI itself) are those the map names."""
    from kafka_coop.cli.main import LAZY_COMMANDS

    with_json = set()
    runner = CliRunner()
    groups = {
        "sandbox": [["sandbox", "start"], ["sandbox", "status"]],
        "rollout": [["rollout", "run"], ["rollout", "resume"]],
    }
    for name in set(LAZY_COMMANDS) - {"schema"}:
        for words in groups.get(name, [[name]]):
            result = runner.invoke(cli, [*words, "--help"], terminal_width=200)
            if "--output" in result.output and "json" in result.output:
                with_json.add(" ".join(words))
    assert with_json == set(COMMAND_SCHEMAS)


def test_schema_prints_the_shipped_file(invoke_cli: Callable[..., CliResult]) -> None:
    result = invoke_cli("schema", "plan")
    assert result.code == 0
    document = result.json()
    assert document["title"].startswith("kafka-coop plan v")


def test_schema_of_an_unknown_name_is_bad_input(invoke_cli: Callable[..., CliResult]) -> None:
    result = invoke_cli("schema", "sideways")
    assert result.code == 2
    assert result.stderr.startswith("Error: There is no schema named 'sideways'.")

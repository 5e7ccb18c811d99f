"""The lazy command group: every command listed, only the invoked one imported, missing ones clear."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from kafka_coop.cli.main import LAZY_COMMANDS, LazyGroup, cli, main


def _installed(module: str) -> bool:
    return importlib.util.find_spec(f"kafka_coop.cli.{module}") is not None


def test_help_lists_every_installed_command_and_skips_missing_ones() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0, result.output
    listed = result.output.split("Commands:", 1)[1]
    names = [line.split()[0] for line in listed.splitlines() if line.strip()]
    expected = [name for name, (module, _) in LAZY_COMMANDS.items() if _installed(module)]
    assert names == expected
    assert {"describe", "verify-group", "sandbox", "consume", "demo"} <= set(names)


def test_the_later_commands_are_in_the_map() -> None:
    assert LAZY_COMMANDS["report"] == ("report", "report")
    assert LAZY_COMMANDS["upgrade-plan"] == ("plan", "upgrade_plan")
    assert LAZY_COMMANDS["downgrade-plan"] == ("plan", "downgrade_plan")


@click.group(cls=LazyGroup, lazy_commands={"ghost": ("no_such_module_xyz", "ghost")})
def _ghostly() -> None:
    """A group with a command whose module does not exist."""


@_ghostly.command()
def real() -> None:
    """An ordinary, eagerly added command."""
    click.echo("real ran")


def test_a_command_whose_module_is_missing_is_left_out_of_help() -> None:
    result = CliRunner().invoke(_ghostly, ["--help"])
    assert result.exit_code == 0
    commands = result.output.split("Commands:", 1)[1]
    assert "real" in commands
    assert "ghost" not in commands


def test_invoking_a_missing_command_is_one_sentence_and_exit_2() -> None:
    result = CliRunner().invoke(_ghostly, ["ghost"])
    assert result.exit_code == 2
    assert "'ghost' command is not available" in result.output
    assert "no_such_module_xyz" in result.output
    assert CliRunner().invoke(_ghostly, ["real"]).output == "real ran\n"


def test_a_module_that_fails_to_import_does_not_break_help(monkeypatch: pytest.MonkeyPatch) -> None:
    group = LazyGroup(name="g", lazy_commands={"broken": ("describe", "describe")})

    def boom(name: str) -> click.Command:
        raise ImportError("half-written module")

    monkeypatch.setattr(group, "load", boom)
    result = CliRunner().invoke(group, ["--help"])
    assert result.exit_code == 0
    assert "broken" in result.output and "unavailable" in result.output


def test_running_one_command_imports_only_its_module() -> None:
    code = (
        "import sys\n"
        "from kafka_coop.cli.main import main\n"
        "try:\n"
        "    main(['describe', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('kafka_coop.cli.')))\n"
        "print('kafka_coop.sandbox' in sys.modules, 'kafka_coop.sandbox._demo' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules, heavy = proc.stdout.strip().splitlines()[-2:]
    shared = ["kafka_coop.cli._context", "kafka_coop.cli._exit_codes", "kafka_coop.cli._tables"]
    assert modules == str([*shared, "kafka_coop.cli.describe", "kafka_coop.cli.main"])
    assert heavy == "False False"


def test_main_keeps_turning_errors_into_a_sentence_and_an_exit_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "verify-group",
                "g",
                "--bootstrap-server",
                "127.0.0.1:1",
                "--plan",
                "/nonexistent/plan.json",
                "--phase",
                "1",
            ]
        )
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Error:" in err and "does not exist" in err and "Traceback" not in err


def test_version_needs_no_command_module() -> None:
    code = (
        "import sys\n"
        "from kafka_coop.cli.main import main\n"
        "try:\n"
        "    main(['--version'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print([m for m in sys.modules if m.startswith('kafka_coop.cli.') and m != 'kafka_coop.cli.main'\n"
        "       and m != 'kafka_coop.cli._exit_codes'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "version 0" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "[]"

"""Entry point: the command group and the one place that turns errors into messages and exit codes.

Commands load lazily (click's documented LazyGroup pattern): the group knows each command's name and
where it lives, and imports only the module of the command being run, so `kafka-coop describe` does not
pay for rich tables of the demo, the sandbox or Spark. `kafka-coop --help` loads them all to list their
short help; a command whose module is not installed (yet) is left out of the list and, when invoked, is
one sentence and exit 2.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import logging
import os
import sys
from pathlib import Path
from typing import Any

import click

from kafka_coop import __version__

from ._exit_codes import as_error, guarded_stdout, signals_interrupt, stdout_written

# command name -> (module under kafka_coop.cli, attribute); the order is the order of `--help`.
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "sandbox": ("sandbox", "sandbox"),
    "consume": ("consume", "consume"),
    "describe": ("describe", "describe"),
    "verify-group": ("verify", "verify_group"),
    "upgrade-plan": ("plan", "upgrade_plan"),
    "downgrade-plan": ("plan", "downgrade_plan"),
    "report": ("report", "report"),
    "pipeline": ("pipeline", "pipeline"),
    "prepare-spark": ("prepare_spark", "prepare_spark"),
    "manifest-topic": ("manifest_topic", "manifest_topic"),
    "control-topic": ("manifest_topic", "control_topic"),
    "remove-members": ("remove_members", "remove_members"),
    "rollout": ("rollout", "rollout"),
    "watch": ("watch", "watch"),
    "demo": ("demo", "demo"),
    "schema": ("schema", "schema"),
}


class CommandUnavailable(click.UsageError):
    """A known command whose module is not part of this installation (exit 2)."""


class LazyGroup(click.Group):
    """A click Group that imports a command's module only when that command is looked up."""

    def __init__(self, *args: Any, lazy_commands: dict[str, tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        eager = [name for name in super().list_commands(ctx) if name not in self.lazy_commands]
        return [*self.lazy_commands, *sorted(eager)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands:
            try:
                return self.load(cmd_name)
            except CommandUnavailable:
                return None
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = click.utils.make_str(args[0]) if args else None
        if name in self.lazy_commands:
            return name, self.load(name), args[1:]  # raises CommandUnavailable with the reason
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Like click's, but a command whose module fails to import is listed as such, not fatal."""
        rows: list[tuple[str, str]] = []
        limit = formatter.width - 6 - max((len(n) for n in self.list_commands(ctx)), default=0)
        for name in self.list_commands(ctx):
            try:
                command = self.get_command(ctx, name)
            except Exception as exc:  # a half-written module must not take `--help` down with it
                rows.append((name, f"(unavailable: {type(exc).__name__}: {exc})"))
                continue
            if command is None or command.hidden:
                continue
            rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def load(self, cmd_name: str) -> click.Command:
        """Import the module of `cmd_name` and return its command; CommandUnavailable if not installed."""
        module_name, attribute = self.lazy_commands[cmd_name]
        qualified = f"{__package__}.{module_name}"
        try:
            module = importlib.import_module(qualified)
        except ModuleNotFoundError as exc:
            if exc.name != qualified:
                raise  # the module exists but one of its imports is missing: a real error
            raise CommandUnavailable(
                f"The {cmd_name!r} command is not available in this installation "
                f"(module {qualified} is not installed)."
            ) from None
        command = getattr(module, attribute, None)
        if not isinstance(command, click.Command):
            raise CommandUnavailable(
                f"The {cmd_name!r} command is not available in this installation "
                f"({qualified} defines no command {attribute!r})."
            )
        return command


@click.group(
    cls=LazyGroup,
    lazy_commands=LAZY_COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
)
@click.version_option(__version__, prog_name="kafka-coop")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Safe, visible, measured consumer-group rebalancing for Kafka fleets."""
    from ._context import Terminal  # lazy: --version loads no pydantic (~0.2 s)

    ctx.ensure_object(Terminal)


def _error_console() -> Any:
    from ._context import plain_console  # lazy: --version loads no pydantic (~0.2 s)

    return plain_console(stderr=True)


def _exit(code: int, *, hard: bool = True) -> None:
    """Exit without a last garbage collection over every object the imports made.

    Interpreter shutdown runs a full collection over pydantic's schemas, rich's tables and the rest
    of what was imported: ~0.15 s of a 1 s `describe`. The command is done and its clients closed by
    then; freezing moves the survivors out of the collector's sight. Output and log handlers are
    flushed here, and the process ends without running finalizers.
    """
    gc.freeze()
    if not hard:  # called with argv (tests, embedding): the caller gets SystemExit as usual
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # a reader that went away (EPIPE) has nothing left to get
            stream.flush()
    logging.shutdown()
    # Not sys.exit: a librdkafka client left in a failed state (a refused SASL login) can crash while
    # the interpreter tears it down, turning a clean "exit 3" into a segfault after the message was
    # printed (seen in CI: exit -11). Every command has closed what it opened by the time it returns.
    os._exit(code)


def main(argv: list[str] | None = None) -> None:
    """The program (no argv) ends the process at once after the message; with argv it raises SystemExit.

    The one place where errors become a message and an exit code (cli/_exit_codes.py says which): a
    KafkaCoopError as it is, an OSError on a path, a setting librdkafka refuses, an interrupt, a closed
    stdout; anything else is a bug and shows its traceback.
    """
    hard = argv is None
    args = sys.argv[1:] if argv is None else argv
    with guarded_stdout() as stdout, signals_interrupt():
        code = _run(args, _command_name(args))
    if stdout.reader_gone:
        _print_error(  # no "Hint:" line of its own: the command's own error keeps the only one
            "Note:",
            "stdout was closed by its reader before the output ended (e.g. `| head`); the rest was "
            "dropped (redirect it to a file to keep all of it).",
            None,
        )
    _exit(code, hard=hard)


def _run(args: list[str], command: str) -> int:
    try:
        result = cli.main(args=args, prog_name="kafka-coop", standalone_mode=False)
    except click.ClickException as exc:  # usage errors: one sentence, and where the options are listed
        message, hint = _usage_sentence(exc, command)
        _print_error("Error:", message, hint)
        _print_error_json(args, command, exc.exit_code, message, hint)
        return exc.exit_code
    except BaseException as exc:
        error = as_error(exc, command)
        if error is None:
            raise  # a bug: its traceback is the report
        _print_error("Error:", error.message, error.hint, error.log_path)
        _print_error_json(args, command, error.exit_code, error.message, error.hint)
        return error.exit_code
    # click returns ctx.exit(code)'s code when not in standalone mode
    return result if isinstance(result, int) else 0


def _usage_sentence(exc: click.ClickException, command: str) -> tuple[str, str | None]:
    """click's message as one line (`Error: ...`) and a hint naming the command's --help, instead of
    click's usage line, its "Try ..." line and a blank line (docs/cli.md: one line, at most one hint)."""
    message = " ".join(exc.format_message().split())
    if message and message[-1] not in ".?!":
        message += "."
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else f"kafka-coop {command}".replace(" (no command)", "")
    hint = f"`{where} --help` lists its arguments and options." if isinstance(exc, click.UsageError) else None
    return message, hint


def _print_error_json(args: list[str], command: str, code: int, message: str, hint: str | None) -> None:
    """Under `--output json`, the error object on stdout too (schema `error`, cli/_error_output.py),
    unless the command printed its own result first (a blocked plan, a failed gate: exit 1 with it)."""
    from ._error_output import error_json, wants_json  # lazy: only an error loads it

    if not wants_json(args) or stdout_written():
        return
    with contextlib.suppress(OSError):
        click.echo(error_json(command, code, message, hint, one_line=command in JSON_LINES_COMMANDS))


# Commands whose `-o json` is a record a line (progress, looks): their error object is one line too.
JSON_LINES_COMMANDS = frozenset({"rollout run", "rollout resume", "watch"})
# Commands that are groups: their name is two words (`sandbox start`, `rollout run`).
GROUP_COMMANDS = frozenset({"sandbox", "pipeline", "rollout"})


def _command_name(args: list[str]) -> str:
    """`describe`, `sandbox start`: the words of the command line before its first option."""
    words: list[str] = []
    for arg in args:
        if arg.startswith("-") or len(words) == (2 if words[:1] and words[0] in GROUP_COMMANDS else 1):
            break
        words.append(arg)
    return " ".join(words) or "(no command)"


def _print_error(label: str, message: str, hint: str | None, log_path: Path | None = None) -> None:
    # lazy: only an error prints (--version loads no rich); Text, as a message quotes user input and
    # hints name extras ("[spark]") that markup would eat
    from rich.text import Text

    try:
        console = _error_console()
        console.print(Text.assemble((label, "bold red" if label == "Error:" else "yellow"), f" {message}"))
        if hint:
            console.print(Text.assemble(("Hint:", "yellow"), f" {hint}"), highlight=False)
        if log_path:
            console.print(f"Log: {log_path}", highlight=False)
    except OSError:  # stderr is gone too: the exit code is all that is left to say it
        pass

"""Entry point: the command group and the one place that turns errors into messages and exit codes."""

from __future__ import annotations

import sys

import click

from kafka_coop import __version__
from kafka_coop.errors import KafkaCoopError

from ._context import Ctx
from .consume import consume
from .demo import demo
from .describe import describe
from .sandbox import sandbox
from .verify import verify_group


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="kafka-coop")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Safe, visible, measured consumer-group rebalancing for Kafka fleets."""
    ctx.ensure_object(Ctx)


for _command in (sandbox, consume, describe, verify_group, demo):
    cli.add_command(_command)


_LATER_COMMANDS = [(".report", "report"), (".plan", "upgrade_plan"), (".plan", "downgrade_plan")]


def _register_optional() -> None:
    """Commands from later layers; imported here so `kafka-coop --help` lists everything."""
    import importlib

    for module, name in _LATER_COMMANDS:
        try:
            command = getattr(importlib.import_module(module, __package__), name)
        except ModuleNotFoundError:
            continue
        cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    _register_optional()
    console = Ctx().err
    try:
        result = cli.main(args=argv, prog_name="kafka-coop", standalone_mode=False)
    except KafkaCoopError as exc:
        console.print(f"[bold red]Error:[/bold red] {exc.message}", highlight=False)
        if exc.hint:
            console.print(f"[yellow]Hint:[/yellow] {exc.hint}", highlight=False)
        if exc.log_path:
            console.print(f"Log: {exc.log_path}", highlight=False)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        console.print("Aborted.")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    # click returns ctx.exit(code)'s code when not in standalone mode
    sys.exit(result if isinstance(result, int) else 0)

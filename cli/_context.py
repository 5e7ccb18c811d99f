"""Shared CLI plumbing: one Console per stream, output formats, common options, param types.

The consoles are made on first use: importing rich and building a Console costs ~25 ms of CPU, which
`kafka-coop consume --quiet` (a restarting group member) never needs before it joins its group.

They never read markup or emoji codes in what they print: group ids, client ids, instance ids,
assignor names and paths are user data, and rich would drop `[prod]` as an unknown style, restyle
after `[bold]`, raise on a stray `[/x]` and turn `:id:` into an emoji. Styles are given as
`rich.text.Text` spans or `style=`, never inside strings.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from pydantic import BaseModel

if TYPE_CHECKING:
    from rich.console import Console

    from kafka_coop.admin import ClusterAdmin

F = TypeVar("F", bound=Callable[..., Any])

OUTPUT_CHOICES = ("table", "json")


def plain_console(*, stderr: bool = False) -> Console:
    """A Console that prints every string as given (no markup, no emoji codes); see the module doc."""
    from rich.console import Console

    return Console(stderr=stderr, soft_wrap=True, markup=False, emoji=False)


class Terminal:
    """Injected into every command: where to print results (stdout) and progress/errors (stderr)."""

    def __init__(self, out: Console | None = None, err: Console | None = None) -> None:
        self._out = out
        self._err = err

    @property
    def out(self) -> Console:
        if self._out is None:
            self._out = plain_console()
        return self._out

    @property
    def err(self) -> Console:
        if self._err is None:
            self._err = plain_console(stderr=True)
        return self._err

    def progress(self, message: str) -> None:
        self.err.print(message, style="dim", highlight=False)

    def emit_json(self, value: BaseModel | dict[str, Any] | list[Any]) -> None:
        text = (
            value.model_dump_json(indent=2) if isinstance(value, BaseModel) else json.dumps(value, indent=2)
        )
        # plain write: rich would wrap or colour the JSON and break parsers
        click.echo(text)


pass_terminal = click.make_pass_decorator(Terminal, ensure=True)


def output_option(choices: tuple[str, ...] = OUTPUT_CHOICES) -> Callable[[F], F]:
    return click.option(
        "--output",
        "-o",
        type=click.Choice(choices),
        default=choices[0],
        show_default=True,
        help="Result format; json is stable for pipelines.",
    )


def bootstrap_option(required: bool = True) -> Callable[[F], F]:
    return click.option(
        "--bootstrap-server",
        "bootstrap",
        envvar="KAFKA_BOOTSTRAP_SERVERS",
        required=required,
        metavar="HOST:PORT",
        help="Kafka bootstrap servers (env KAFKA_BOOTSTRAP_SERVERS).",
    )


class KeyValue(click.ParamType):  # type: ignore[type-arg]  # generic only in some click versions
    """`key=value`, parsed where click parses, so a bad pair is a usage error (exit 2)."""

    name = "key=value"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, str]:
        if isinstance(value, tuple):
            return (str(value[0]), str(value[1]))
        key, sep, val = str(value).partition("=")
        if not sep or not key.strip():
            self.fail(f"{value!r} is not of the form key=value.", param, ctx)
        return key.strip(), val.strip()


def command_config_option() -> Callable[[F], F]:
    return click.option(
        "--command-config",
        "command_config",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        metavar="FILE",
        help="Java-style properties with client settings (security), as Kafka's own tools take.",
    )


def admin_for(bootstrap: str, command_config: Path | None) -> tuple[ClusterAdmin, dict[str, str]]:
    """An admin client for a command; security settings come from --command-config, never from output."""
    from kafka_coop._vocab import connection_conf
    from kafka_coop.admin import ClusterAdmin
    from kafka_coop.settings import read_properties

    conf = connection_conf(read_properties(command_config)) if command_config is not None else {}
    return ClusterAdmin(bootstrap, conf), conf

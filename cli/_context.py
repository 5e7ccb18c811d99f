"""Shared CLI plumbing: one Console per stream, output formats, common options, param types."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click
from pydantic import BaseModel
from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])

OUTPUT_CHOICES = ("table", "json")


@dataclass
class Ctx:
    """Injected into every command: where to print results (stdout) and progress/errors (stderr)."""

    out: Console = field(default_factory=lambda: Console(soft_wrap=True))
    err: Console = field(default_factory=lambda: Console(stderr=True, soft_wrap=True))

    def progress(self, message: str) -> None:
        self.err.print(f"[dim]{message}[/dim]", highlight=False)

    def emit_json(self, value: BaseModel | dict[str, Any] | list[Any]) -> None:
        text = (
            value.model_dump_json(indent=2) if isinstance(value, BaseModel) else json.dumps(value, indent=2)
        )
        # plain write: rich would wrap or colour the JSON and break parsers
        click.echo(text)


pass_ctx = click.make_pass_decorator(Ctx, ensure=True)


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

"""`kafka-coop sandbox start|stop|status`: a local single-node Kafka for trying things, tests and demos."""

from __future__ import annotations

import time
from pathlib import Path

import click
from rich.table import Table

from kafka_coop.sandbox import (
    DEFAULT_KAFKA_VERSION,
    DEFAULT_PORT,
    Sandbox,
    SandboxState,
    java_member_archive,
    java_member_classpath,
    resolve_kafka_jars,
)

from ._context import Ctx, KeyValue, output_option, pass_ctx

_dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    envvar="KAFKA_COOP_SANDBOX_DIR",
    help="Broker state and logs (default: the user state dir, ~/.local/state/kafka-coop/sandbox).",
)


def _state_table(state: SandboxState) -> Table:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    for key, value in (
        ("bootstrap", state.bootstrap),
        ("kafka", state.kafka_version),
        ("pid", str(state.pid)),
        ("uptime", f"{state.uptime_s:.0f}s"),
        ("dir", state.dir),
        ("log", state.log),
    ):
        table.add_row(key, value)
    return table


def _state_json(state: SandboxState) -> dict[str, object]:
    return {**state.model_dump(), "uptime_s": round(state.uptime_s, 1), "running": True}


@click.group()
def sandbox() -> None:
    """A local Apache Kafka 4.x (KRaft) from Maven Central jars; no Docker needed."""


@sandbox.command()
@click.option("--kafka-version", default=DEFAULT_KAFKA_VERSION, show_default=True, help="Apache Kafka 4.x.")
@click.option("--port", type=click.IntRange(1, 65535), default=DEFAULT_PORT, show_default=True)
@_dir_option
@click.option(
    "--config", "overrides", type=KeyValue(), multiple=True, help="Broker setting key=value; repeatable."
)
@click.option(
    "--timeout", type=click.FloatRange(1), default=120.0, show_default=True, help="Seconds to wait."
)
@output_option()
@pass_ctx
def start(
    ctx: Ctx,
    kafka_version: str,
    port: int,
    directory: Path | None,
    overrides: tuple[tuple[str, str], ...],
    timeout: float,
    output: str,
) -> None:
    """Start the broker in the background and print its bootstrap address."""
    box = Sandbox(
        dir=directory, port=port, kafka_version=kafka_version, config=dict(overrides), progress=ctx.progress
    )
    began = time.monotonic()
    with ctx.err.status("Starting the sandbox broker…"):
        state = box.start(timeout_s=timeout)
    if output == "json":
        ctx.emit_json({**_state_json(state), "start_s": round(time.monotonic() - began, 2)})
    else:
        ctx.err.print(
            f"Kafka {state.kafka_version} ready in {time.monotonic() - began:.1f}s (pid {state.pid})."
        )
        click.echo(state.bootstrap)


@sandbox.command()
@click.option("--kafka-version", default=DEFAULT_KAFKA_VERSION, show_default=True, help="Apache Kafka 4.x.")
@pass_ctx
def prepare(ctx: Ctx, kafka_version: str) -> None:
    """Resolve the Kafka jars and compile the Java test-bed member into the cache (later runs are offline)."""
    began = time.monotonic()
    with ctx.err.status(f"Resolving Apache Kafka {kafka_version} from Maven Central (first time only)…"):
        lib = resolve_kafka_jars(kafka_version)
        classpath = java_member_classpath(kafka_version)
    with ctx.err.status("Training the Java member's class-data-sharing archive (first time only)…"):
        archive = java_member_archive(kafka_version)
    ctx.err.print(
        f"Kafka {kafka_version} jars in {lib}; Java member ready"
        f"{'' if archive is None else ' with its AppCDS archive'} ({time.monotonic() - began:.1f}s)."
    )
    click.echo(Path(classpath.split(":", 1)[0]).parent)


@sandbox.command()
@_dir_option
@output_option()
@pass_ctx
def status(ctx: Ctx, directory: Path | None, output: str) -> None:
    """Show the running sandbox (exit 1 if none runs)."""
    state = Sandbox(dir=directory).status()
    if state is None:
        if output == "json":
            ctx.emit_json({"running": False})
        else:
            ctx.err.print(
                "No sandbox broker is running for this --dir. Start one with `kafka-coop sandbox start`."
            )
        raise click.exceptions.Exit(1)
    if output == "json":
        ctx.emit_json(_state_json(state))
    else:
        ctx.out.print(_state_table(state))


@sandbox.command()
@_dir_option
@click.option(
    "--timeout",
    type=click.FloatRange(1),
    default=30.0,
    show_default=True,
    help="Seconds before a graceful stop turns forceful.",
)
@pass_ctx
def stop(ctx: Ctx, directory: Path | None, timeout: float) -> None:
    """Stop the broker this sandbox started (never any other process)."""
    if Sandbox(dir=directory, progress=ctx.progress).stop(timeout_s=timeout):
        ctx.err.print("Sandbox broker stopped.")
    else:
        ctx.err.print("No sandbox broker was running for this --dir.")

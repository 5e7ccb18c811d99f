"""`kafka-coop sandbox start|stop|status`: a local Kafka (one node or a cluster) for trying things, tests
and demos."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Literal

import click
from pydantic import BaseModel, RootModel
from rich.text import Text

from kafka_coop.sandbox import (
    DEFAULT_KAFKA_VERSION,
    DEFAULT_PORT,
    JAVA_MEMBER_MIN_KAFKA,
    MAX_BROKERS,
    SECURITY_CHOICES,
    SUPPORTED_KAFKA_TEXT,
    Sandbox,
    SandboxState,
    check_kafka_version,
    has_java_member,
    java_member_archive,
    java_member_classpath,
    resolve_kafka_jars,
)

from ._context import KeyValue, Terminal, output_option, pass_terminal
from ._tables import aligned_table

_dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    envvar="KAFKA_COOP_SANDBOX_DIR",
    help="Broker state and logs (default: the user state dir, ~/.local/state/kafka-coop/sandbox).",
)


# Kafka's own rule for a topic name (org.apache.kafka.common.internals.Topic): checked before the start, so
# a name the broker would refuse is bad input, not a failure after the broker is up
TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
TOPIC_NAME_MAX = 249


class TopicArg(click.ParamType):  # type: ignore[type-arg]  # generic only in some click versions
    """`orders` or `orders:6`: a topic name Kafka accepts and its partition count (default 1)."""

    name = "NAME[:PARTITIONS]"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, int]:
        if isinstance(value, tuple):
            return value  # already converted (a default)
        name, _, count = str(value).partition(":")
        if not name:
            self.fail(
                f"{value!r} has no topic name; write NAME or NAME:PARTITIONS, e.g. orders:6.", param, ctx
            )
        if name in (".", ".."):
            self.fail(f"{name!r} is not a topic name: Kafka refuses '.' and '..'; pick another.", param, ctx)
        if len(name) > TOPIC_NAME_MAX:
            self.fail(
                f"The topic name is {len(name)} characters long; Kafka takes at most {TOPIC_NAME_MAX}.",
                param,
                ctx,
            )
        if not TOPIC_NAME.fullmatch(name):
            self.fail(
                f"{name!r} is not a topic name Kafka accepts: use only a-z, A-Z, 0-9, '.', '_' and '-'.",
                param,
                ctx,
            )
        if not count:
            return name, 1
        if not count.isdigit() or int(count) < 1:
            self.fail(f"{value!r}: the partition count must be a whole number of at least 1.", param, ctx)
        return name, int(count)


def _state_table(state: SandboxState) -> Text:
    rows: list[list[str]] = [
        ["bootstrap", state.bootstrap],
        ["kafka", state.kafka_version],
        ["brokers", str(state.brokers)],
        ["security", state.security],
        ["uptime", f"{state.uptime_s:.0f}s"],
        ["dir", state.dir],
    ]
    rows += [[f"{user} config", path] for user, path in state.client_properties.items()]
    if state.proxied_bootstrap:
        rows.append(["proxied bootstrap", state.proxied_bootstrap])
    return aligned_table(None, rows)


def _nodes_table(state: SandboxState) -> Text:
    now = time.time()
    rows: list[list[Text | str]] = []
    for node in state.nodes:
        style = {"running": "green", "frozen": "yellow", "stopped": "red"}[node.status]
        rows.append(
            [
                str(node.node_id),
                Text(node.status, style=style),
                str(node.pid) if node.status != "stopped" else "-",
                node.bootstrap,
                f"127.0.0.1:{node.controller_port}",
                f"{max(0.0, now - node.started_at):.0f}s" if node.status != "stopped" else "-",
                node.log,
            ]
        )
    columns = ("node", "status", "pid", "address", "controller", "uptime", "log")
    return aligned_table(columns, rows, title="nodes (KRaft broker + controller each)")


class SandboxRunning(SandboxState):
    """`sandbox status --output json` while the sandbox runs: its state, every node's status."""

    v: Literal[1] = 1
    running: Literal[True] = True
    uptime_seconds: float


class SandboxNotRunning(BaseModel):
    """`sandbox status --output json` when no node of this --dir runs (exit 1)."""

    v: Literal[1] = 1
    running: Literal[False] = False


class SandboxStatus(RootModel[SandboxRunning | SandboxNotRunning]):
    """What `sandbox status --output json` prints (schema `sandbox-status`)."""


class SandboxStarted(SandboxRunning):
    """What `sandbox start --output json` prints (schema `sandbox-start`): the state, and how long the
    start took."""

    start_s: float


def _running(state: SandboxState) -> SandboxRunning:
    return SandboxRunning(**state.model_dump(), uptime_seconds=round(state.uptime_s, 1))


@click.group()
def sandbox() -> None:
    """A local Apache Kafka (3.7-3.9 or 4.x, KRaft) from Maven Central jars; no Docker needed."""


@sandbox.command()
@click.option(
    "--kafka-version",
    default=DEFAULT_KAFKA_VERSION,
    show_default=True,
    help=f"Apache Kafka release: {SUPPORTED_KAFKA_TEXT}.",
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Client port of node 1; a cluster's node N listens on port+N-1.",
)
@click.option(
    "--controller-port",
    type=click.IntRange(1, 65535),
    default=None,
    help="KRaft controller port of node 1 (node N: +N-1), on 127.0.0.1 only; default: a free port below "
    "the ephemeral range, kept across restarts, shown by `sandbox status`.",
)
@click.option(
    "--brokers",
    type=click.IntRange(1, MAX_BROKERS),
    default=1,
    show_default=True,
    help="Nodes (combined KRaft broker+controller); 3 gives internal topics RF 3, min.insync.replicas 2.",
)
@click.option(
    "--security",
    type=click.Choice(SECURITY_CHOICES),
    default="plaintext",
    show_default=True,
    help="sasl_ssl: SCRAM-SHA-512 over TLS with ACLs; prints the --command-config files.",
)
@_dir_option
@click.option(
    "--config", "overrides", type=KeyValue(), multiple=True, help="Broker setting key=value; repeatable."
)
@click.option(
    "--topic",
    "topics",
    type=TopicArg(),
    multiple=True,
    metavar="NAME[:PARTITIONS]",
    help="Create this topic once the broker answers (1 partition unless given); repeatable.",
)
@click.option(
    "--timeout", type=click.FloatRange(1), default=120.0, show_default=True, help="Seconds to wait."
)
@output_option()
@pass_terminal
def start(
    term: Terminal,
    kafka_version: str,
    port: int,
    controller_port: int | None,
    brokers: int,
    security: str,
    directory: Path | None,
    overrides: tuple[tuple[str, str], ...],
    topics: tuple[tuple[str, int], ...],
    timeout: float,
    output: str,
) -> None:
    """Start the broker(s) in the background and print the bootstrap address."""
    box = Sandbox(
        dir=directory,
        port=port,
        kafka_version=kafka_version,
        config=dict(overrides),
        progress=term.progress,
        brokers=brokers,
        security=security,  # type: ignore[arg-type]  # click.Choice
        controller_port=controller_port,
    )
    began = time.monotonic()
    was_running = box.status() is not None
    with term.err.status("Starting the sandbox…"):
        state = box.start(timeout_s=timeout)
    try:
        if topics:
            admin = box.admin()
            for name, partitions in topics:
                admin.create_topic(name, partitions, timeout_s=timeout)  # a refusal is bad input (exit 2)
                admin.ensure_topic(name, partitions, timeout_s=timeout)  # its partitions have leaders
                many = "s" if partitions != 1 else ""
                term.progress(f"Topic {name} ({partitions} partition{many}) is ready.")
    except BaseException:
        # a failed start leaves nothing running: the broker this call started stops again (one that
        # ran before the call keeps running)
        if not was_running:
            box.stop()
        raise
    if output == "json":
        started = _running(state).model_dump()
        term.emit_json(SandboxStarted(**started, start_s=round(time.monotonic() - began, 2)))
        return
    what = f"{state.brokers} nodes" if state.brokers > 1 else f"pid {state.pid}"
    term.err.print(
        f"Kafka {state.kafka_version} ready in {time.monotonic() - began:.1f}s ({what}; KRaft controller "
        f"on 127.0.0.1:{state.controller_port}).",
        highlight=False,
    )
    for user, path in state.client_properties.items():
        role = "super user" if user == "admin" else "restricted user (ACLs on app* topics and groups)"
        term.err.print(f"SASL_SSL {role} {user!r}: --command-config {path}", highlight=False)
    click.echo(state.bootstrap)


@sandbox.command()
@click.option(
    "--kafka-version",
    default=DEFAULT_KAFKA_VERSION,
    show_default=True,
    help=f"Apache Kafka release: {SUPPORTED_KAFKA_TEXT}.",
)
@click.option(
    "--java-member/--no-java-member",
    default=True,
    show_default=True,
    help="Also compile the Java test-bed member (tests use it; `kafka-coop demo` does not).",
)
@pass_terminal
def prepare(term: Terminal, kafka_version: str, java_member: bool) -> None:
    """Resolve the Kafka jars and compile the Java test-bed member into the cache (later runs are offline)."""
    kafka_version = check_kafka_version(kafka_version)
    began = time.monotonic()
    if not has_java_member(kafka_version):
        with term.err.status(f"Resolving Apache Kafka {kafka_version} from Maven Central (first time only)…"):
            lib = resolve_kafka_jars(kafka_version)
        term.err.print(
            f"Kafka {kafka_version} jars in {lib}; no Java member for it: the test-bed member needs "
            f"kafka-clients {'.'.join(map(str, JAVA_MEMBER_MIN_KAFKA))}+ (its CloseOptions), so members of "
            f"this release run librdkafka ({time.monotonic() - began:.1f}s)."
        )
        click.echo(lib)
        return
    with term.err.status(f"Resolving Apache Kafka {kafka_version} from Maven Central (first time only)…"):
        lib = resolve_kafka_jars(kafka_version)
        if not java_member:
            term.err.print(f"Kafka {kafka_version} jars in {lib} ({time.monotonic() - began:.1f}s).")
            click.echo(lib)
            return
        classpath = java_member_classpath(kafka_version)
    with term.err.status("Training the Java member's class-data-sharing archive (first time only)…"):
        archive = java_member_archive(kafka_version)
    term.err.print(
        f"Kafka {kafka_version} jars in {lib}; Java member ready"
        f"{'' if archive is None else ' with its AppCDS archive'} ({time.monotonic() - began:.1f}s)."
    )
    click.echo(Path(classpath.split(":", 1)[0]).parent)


@sandbox.command()
@_dir_option
@output_option()
@pass_terminal
def status(term: Terminal, directory: Path | None, output: str) -> None:
    """Show the running sandbox and every node (exit 1 if none runs)."""
    state = Sandbox(dir=directory).status()
    if state is None:
        if output == "json":
            term.emit_json(SandboxStatus(SandboxNotRunning()))
        else:
            term.err.print(
                "No sandbox broker is running for this --dir. Start one with `kafka-coop sandbox start`."
            )
        raise click.exceptions.Exit(1)
    if output == "json":
        term.emit_json(SandboxStatus(_running(state)))
    else:
        term.out.print(_state_table(state))
        term.out.print(_nodes_table(state))


@sandbox.command()
@_dir_option
@click.option(
    "--timeout",
    type=click.FloatRange(1),
    default=30.0,
    show_default=True,
    help="Seconds before a graceful stop turns forceful.",
)
@pass_terminal
def stop(term: Terminal, directory: Path | None, timeout: float) -> None:
    """Stop the broker(s) this sandbox started (never any other process)."""
    if Sandbox(dir=directory, progress=term.progress).stop(timeout_s=timeout):
        term.err.print("Sandbox stopped.")
    else:
        term.err.print("No sandbox broker was running for this --dir.")

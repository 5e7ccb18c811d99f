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
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from pydantic import BaseModel

from kafka_coop._vocab import connection_conf
from kafka_coop.errors import ClusterUnavailable, InvalidInput

if TYPE_CHECKING:
    from rich.console import Console

    from kafka_coop.admin import ClusterAdmin

F = TypeVar("F", bound=Callable[..., Any])

OUTPUT_CHOICES = ("table", "json")


def plain_console(*, stderr: bool = False) -> Console:
    """A Console that prints every string as given (no markup, no emoji codes); see the module doc."""
    from rich.console import Console  # lazy: consume --quiet builds no console (~25 ms)

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
            value.model_dump_json(indent=2, by_alias=True)
            if isinstance(value, BaseModel)
            else json.dumps(value, indent=2)
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


class BootstrapServers(click.ParamType):  # type: ignore[type-arg]  # generic only in some click versions
    """`host:port[,host:port...]`, checked where click parses: a malformed list is a usage error (exit
    2). Whether the hosts resolve is asked when the command connects (`check_resolves`)."""

    name = "HOST:PORT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value).strip()
        try:
            bootstrap_hosts(text)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        return text


def bootstrap_hosts(text: str) -> list[tuple[str, int]]:
    """(host, port) of each entry of a comma-separated `host:port` list (IPv6: `[addr]:port`): the one
    parser of --bootstrap-server, KAFKA_BOOTSTRAP_SERVERS and a conf's bootstrap.servers. ValueError is
    one sentence naming the first malformed entry: no port, a scheme (`http://`), a port out of range."""
    hosts: list[tuple[str, int]] = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        if "://" in entry:
            scheme = entry.split("://", 1)[0]
            raise ValueError(f"{entry!r} has a scheme ({scheme}://): give HOST:PORT without it.")
        if entry.startswith("["):
            host, close, rest = entry[1:].partition("]")
            sep, port = rest[:1], rest[1:]
            if not close or sep != ":":
                raise ValueError(f"{entry!r} has no port: write an IPv6 address as [ADDRESS]:PORT.")
        else:
            host, sep, port = entry.rpartition(":")
            if not sep:
                raise ValueError(f"{entry!r} has no port: give HOST:PORT (e.g. {entry}:9092).")
            if ":" in host:
                raise ValueError(f"{entry!r} is ambiguous: write an IPv6 address as [ADDRESS]:PORT.")
        if not host or any(c.isspace() or c in "/@?#[]" for c in host):
            raise ValueError(f"{entry!r} is not HOST:PORT (e.g. 127.0.0.1:9092).")
        if not port.isdigit():
            raise ValueError(f"{entry!r} is not HOST:PORT: the port {port!r} is not a number.")
        if not 1 <= int(port) <= 65535:
            raise ValueError(f"{entry!r} is not HOST:PORT: the port {int(port)} is not in 1-65535.")
        hosts.append((host, int(port)))
    if not hosts:
        raise ValueError("no HOST:PORT given.")
    return hosts


def check_conf_bootstrap(conf: dict[str, str], *, source: str) -> None:
    """A bootstrap.servers in a conf is read by the same parser as --bootstrap-server (exit 2)."""
    value = conf.get("bootstrap.servers")
    if value is None:
        return
    try:
        bootstrap_hosts(value)
    except ValueError as exc:
        raise InvalidInput(
            f"{source} sets bootstrap.servers={value!r}: {str(exc)[0].lower()}{str(exc)[1:]}",
            hint="Give a comma-separated list of HOST:PORT, e.g. 127.0.0.1:9092.",
        ) from None


# librdkafka reads these when a client is made and fails with an OpenSSL code that names no path
FILE_KEY_SUFFIXES = (".location", ".file")
FILE_KEY_SPECIAL_VALUES = frozenset({"probe"})  # ssl.ca.location=probe: the system's CA paths


def check_conf_files(conf: dict[str, str], *, source: str) -> None:
    """Every *.location and *.file setting names a path this user can read, checked before a client is
    made: one sentence naming the key and the path (exit 2)."""
    for key in sorted(conf):
        value = str(conf[key]).strip()
        if not key.endswith(FILE_KEY_SUFFIXES) or not value or value in FILE_KEY_SPECIAL_VALUES:
            continue
        path = os.path.expanduser(value)
        if not os.path.exists(path):
            why = "which does not exist"
        elif not os.access(path, os.R_OK):
            why = "which this user may not read"
        elif os.path.isdir(path) and key != "ssl.ca.location":  # a CA directory is allowed there only
            why = "which is a directory, not a file"
        else:
            continue
        raise InvalidInput(
            f"{source} sets {key} to {value!r}, {why}.",
            hint=f"Give {key} the path of a readable file.",
        )


def check_resolves(bootstrap: str) -> None:
    """One sentence at once (exit 3) when no bootstrap host resolves: librdkafka would only retry the
    name until the request times out, which reads as an unreachable cluster after --timeout."""
    hosts = bootstrap_hosts(bootstrap)
    if any(_resolves(host, port) for host, port in hosts):
        return
    raise ClusterUnavailable(
        f"The host of bootstrap server {hosts[0][0]}:{hosts[0][1]} does not resolve to any address.",
        hint="Check the host names in --bootstrap-server (or KAFKA_BOOTSTRAP_SERVERS).",
    )


def _resolves(host: str, port: int) -> bool:
    try:
        return bool(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
    except (OSError, UnicodeError):
        return False


def bootstrap_option(
    required: bool = True, help: str = "Kafka bootstrap servers (env KAFKA_BOOTSTRAP_SERVERS)."
) -> Callable[[F], F]:
    return click.option(
        "--bootstrap-server",
        "bootstrap",
        type=BootstrapServers(),
        envvar="KAFKA_BOOTSTRAP_SERVERS",
        required=required,
        help=help,
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


COMMAND_CONFIG_HELP = (
    "Properties file (key=value) of librdkafka client settings for a secured cluster: security.protocol, "
    "sasl.mechanism, sasl.username, sasl.password, ssl.ca.location, ... Java-only keys "
    "(ssl.truststore.*, sasl.jaas.config) are refused with their librdkafka equivalent."
)


def read_command_config(path: Path) -> dict[str, str]:
    """The client settings of a --command-config file (librdkafka names), read before anything reaches
    a cluster: a missing or unreadable file or a Java-only key is one sentence (exit 2)."""
    from kafka_coop.settings import read_properties, refuse_java_only  # lazy: describe --help: ~30 ms

    conf = read_properties(path)
    source = f"--command-config {path}"
    refuse_java_only(conf, source=source)
    check_conf_bootstrap(conf, source=source)
    check_conf_files(conf, source=source)
    return conf


def command_config_option() -> Callable[[F], F]:
    return click.option(
        "--command-config",
        "command_config",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        metavar="FILE",
        help=COMMAND_CONFIG_HELP,
    )


def connection_conf_of(command_config: Path | None, bootstrap: str | None = None) -> dict[str, str]:
    """The connection and security settings of --command-config (none without it); a bootstrap.servers
    there that is not --bootstrap-server's list is refused (it would silently win)."""
    if command_config is None:
        return {}
    conf = connection_conf(read_command_config(command_config))
    if bootstrap is not None and "bootstrap.servers" in conf:
        refuse_conflict(
            "--bootstrap-server",
            bootstrap,
            "bootstrap.servers",
            conf["bootstrap.servers"],
            source=f"--command-config {command_config}",
            same=same_bootstrap,
        )
    return conf


def same_bootstrap(a: str, b: str) -> bool:
    """Two bootstrap lists naming the same brokers (order, spaces and host case aside)."""

    def brokers(text: str) -> set[tuple[str, int]]:
        return {(host.lower(), port) for host, port in bootstrap_hosts(text)}

    return brokers(a) == brokers(b)


def refuse_conflict(
    flag: str,
    flag_value: str,
    key: str,
    conf_value: str,
    *,
    source: str,
    same: Callable[[str, str], bool] | None = None,
    shown: str | None = None,
) -> None:
    """A typed flag and a setting of --conf or --command-config that mean the same thing must agree:
    otherwise one of them would silently lose. One sentence naming both (exit 2)."""
    agree = same(flag_value, conf_value) if same is not None else _norm(flag_value) == _norm(conf_value)
    if agree:
        return
    raise InvalidInput(
        f"{shown or f'{flag} {flag_value}'} and {source} {key}={conf_value} contradict each other.",
        hint="Give one of them, or the same value in both.",
    )


def _norm(value: str) -> str:
    return ",".join(part.strip() for part in value.lower().split(","))


LIST_GROUPS = "`kafka-coop describe --all` lists the groups this principal can see."


def missing_group(group: str, bootstrap: str) -> InvalidInput:
    """The one error of every command for a group the cluster does not know (exit 2)."""
    return InvalidInput(
        f"Group {group!r} does not exist on {bootstrap}.",
        hint=f"Check the name: {LIST_GROUPS}",
    )


def admin_for(bootstrap: str, command_config: Path | None) -> tuple[ClusterAdmin, dict[str, str]]:
    """An admin client for a command; security settings come from --command-config, never from output."""
    from kafka_coop.admin import ClusterAdmin  # lazy: consume makes no admin client (~0.2 s)

    conf = connection_conf_of(command_config, bootstrap)
    check_resolves(bootstrap)
    return ClusterAdmin(bootstrap, conf), conf

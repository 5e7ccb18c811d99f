"""`kafka-coop consume`: a real CoopConsumer member that prints its rebalance events as they happen."""

from __future__ import annotations

import logging
import os
import signal
import socket
import time
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from kafka_coop._extras import require
from kafka_coop._vocab import REBALANCE_MODE_ASSIGNOR, REBALANCE_MODES
from kafka_coop.errors import Interrupted, InvalidInput, SettingsError
from kafka_coop.events import RebalanceEvent
from kafka_coop.identity import resolve_instance_id
from kafka_coop.settings import KNOWN_CONSUMER_KEYS, ConsumerSettings, refuse_java_only
from kafka_coop.sinks import JsonlSink

from ._context import (
    KeyValue,
    Terminal,
    bootstrap_option,
    check_conf_bootstrap,
    check_conf_files,
    check_resolves,
    command_config_option,
    pass_terminal,
    read_command_config,
    refuse_conflict,
    same_bootstrap,
)
from ._exit_codes import LIBRDKAFKA_NAMES_HINT, stdout_reader_gone

if TYPE_CHECKING:
    from rich.text import Text

REBALANCE_CHOICES = REBALANCE_MODES
# librdkafka (sparse connections) waits reconnect.backoff.ms / 2 between picking brokers to connect to,
# and it drops the bootstrap connection once it has learned the real brokers: with the 100 ms default, a
# starting member sits ~50 ms without any connection before it can ask for its coordinator. 20 ms makes
# that pause 11 ms (librdkafka's floor); reconnect backoff still grows exponentially up to
# reconnect.backoff.max.ms (10 s) for a broker that stays down. --conf or --command-config override it.
JOIN_RECONNECT_BACKOFF_MS = "20"
_KIND_STYLE = {
    "assigned": "green",
    "revoked": "yellow",
    "lost": "bold red",
    "started": "dim",
    "closed": "dim",
    "warning": "bold yellow",
    "reconfigured": "bold cyan",
}


def _render_event(event: RebalanceEvent) -> Text:
    from rich.text import Text  # lazy: --quiet members never import rich (~40 ms)

    parts = ", ".join(f"{t}-{p}" for t, p in event.partitions) or "-"
    text = Text()
    text.append(f"{event.kind:<8}", style=_KIND_STYLE.get(event.kind, ""))
    text.append(f" {event.protocol:<11} partitions [{parts}] owned {len(event.owned)}")
    text.append(f" {event.callback_ms:.1f} ms", style="dim")
    if event.committed:
        text.append(f" committed {len(event.committed)}", style="cyan")
    if event.error:
        text.append(f" error: {event.error}", style="red")
    return text


class _Stop:
    """SIGTERM/SIGINT set a flag; the poll loop ends and the consumer closes cleanly (SIGTERM is how a
    member is meant to stop: exit 0; Ctrl-C is an interrupt: exit 130 once closed). So does a reader of
    --print-records that went away."""

    def __init__(self) -> None:
        self.signum: int | None = None
        signal.signal(signal.SIGTERM, self._handle)
        signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.signum = signum

    @property
    def requested(self) -> bool:
        return self.signum is not None or stdout_reader_gone()


@click.command()
@click.argument("group")
@click.argument("topics", nargs=-1, required=True)
@bootstrap_option()
@click.option(
    "--rebalance",
    type=click.Choice(REBALANCE_CHOICES),
    default="cooperative-sticky",
    show_default=True,
    help="Rebalance protocol and assignor.",
)
@click.option(
    "--remote-assignor",
    default=None,
    help="Broker-side assignor for --rebalance consumer (KIP-848): uniform, range, or a custom one the "
    "brokers list in group.consumer.assignors.",
)
@click.option(
    "--instance-id", default=None, help="group.instance.id (static membership); {pod},{ordinal} ok."
)
@click.option(
    "--events",
    "events_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Append rebalance events as JSON lines to this file.",
)
@click.option(
    "--conf",
    "confs",
    type=KeyValue(),
    multiple=True,
    help="librdkafka setting key=value; repeatable. Defaults here: reconnect.backoff.ms=20 (a restarted "
    "member reaches its coordinator ~40 ms sooner).",
)
@command_config_option()
@click.option("--print-records", is_flag=True, help="Print each record's topic, partition, offset and value.")
@click.option(
    "--records",
    "records_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Append 'client topic partition offset produced_ms consumed_ms' per processed record.",
)
@click.option("--process-ms", type=click.IntRange(0), default=0, help="Simulated work per record.")
@click.option(
    "--manifests/--no-manifests",
    default=True,
    show_default=True,
    help="Publish this member's manifest to _kafka_coop_manifests.",
)
@click.option(
    "--duplicate-check",
    type=click.Choice(("off", "warn", "fail")),
    default="warn",
    show_default=True,
    help="Check the live group for this instance id before joining.",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Serve Prometheus metrics of the rebalance events at http://ADDR:PORT/metrics (0: a free port).",
)
@click.option(
    "--metrics-addr",
    default="0.0.0.0",  # noqa: S104  # a scrape target listens where Prometheus can reach it
    show_default=True,
    help="Address the metrics endpoint listens on.",
)
@click.option(
    "--control",
    is_flag=True,
    help="Follow the control topic (_kafka_coop_control) for this group: `rollout run` may reconfigure this "
    "member live (docs/consumer.md, live reconfiguration).",
)
@click.option("--quiet", "-q", is_flag=True, help="Do not print events (they still go to --events).")
@pass_terminal
def consume(
    term: Terminal,
    group: str,
    topics: tuple[str, ...],
    bootstrap: str,
    rebalance: str,
    remote_assignor: str | None,
    instance_id: str | None,
    events_path: Path | None,
    confs: tuple[tuple[str, str], ...],
    command_config: Path | None,
    print_records: bool,
    records_path: Path | None,
    process_ms: int,
    manifests: bool,
    duplicate_check: str,
    metrics_port: int | None,
    metrics_addr: str,
    control: bool,
    quiet: bool,
) -> None:
    """Join GROUP on TOPICS as a CoopConsumer member, like kafka-console-consumer with rebalance events."""
    from kafka_coop.consumer import CoopConsumer  # lazy: consume --help loads no client (~0.3 s)

    conf: dict[str, Any] = {"reconnect.backoff.ms": JOIN_RECONNECT_BACKOFF_MS}
    from_file = read_command_config(command_config) if command_config is not None else {}
    conf.update(from_file)
    _refuse_conflicts(
        group,
        bootstrap,
        rebalance,
        remote_assignor,
        instance_id,
        from_file,
        f"--command-config {command_config}",
    )
    _refuse_conflicts(group, bootstrap, rebalance, remote_assignor, instance_id, dict(confs), "--conf")
    conf.update(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.offset.store": "false",
            "auto.offset.reset": "earliest",
        }
    )
    if rebalance == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf["partition.assignment.strategy"] = REBALANCE_MODE_ASSIGNOR[rebalance]
    if remote_assignor:
        conf["group.remote.assignor"] = remote_assignor
    resolved_id = resolve_instance_id(instance_id, group=group)
    if resolved_id:
        conf["group.instance.id"] = resolved_id
    # librdkafka's default client id is `rdkafka` for every member: the events, describe and the report
    # could not tell two members apart. A static member is named by its instance id, others by host+pid.
    conf.setdefault("client.id", resolved_id or f"kafka-coop-{socket.gethostname()}-{os.getpid()}")
    conf.update(dict(confs))
    refuse_java_only(dict(confs), source="--conf")
    check_conf_bootstrap(dict(confs), source="--conf")
    check_conf_files(dict(confs), source="--conf")
    refuse_unknown_keys(conf)
    settings = ConsumerSettings.from_conf(conf)
    check_resolves(bootstrap)

    sinks: list[Any] = []
    records, events_sink = _open_outputs(records_path, events_path)
    if events_sink is not None:
        sinks.append(events_sink)
    server = None
    if metrics_port is not None:
        server = _serve_metrics(term, metrics_port, metrics_addr)
        sinks.append(server[1])

    def on_event(event: RebalanceEvent) -> None:
        for sink in sinks:
            sink.emit(event)
        if not quiet:
            term.err.print(_render_event(event), highlight=False)

    stop = _Stop()
    consumer = CoopConsumer(
        settings,
        events=on_event,
        manifests=manifests,
        duplicate_check=duplicate_check,  # type: ignore[arg-type]
        control=control,
    )
    client = settings.render().get("client.id", "rdkafka")
    try:
        consumer.subscribe(list(topics))
        _poll_loop(consumer, stop, records, client, print_records, process_ms)
    finally:
        consumer.close()
        for sink in sinks:
            sink.close()
        if records is not None:
            records.close()
        if server is not None:
            server[0].close()
    if stop.signum == signal.SIGINT:
        raise Interrupted(
            "Interrupted by Ctrl-C (SIGINT): the member closed, its offsets committed.",
            hint="SIGTERM stops a member with exit 0.",
        )


def _refuse_conflicts(
    group: str,
    bootstrap: str,
    rebalance: str,
    remote_assignor: str | None,
    instance_id: str | None,
    conf: dict[str, str],
    source: str,
) -> None:
    """A typed argument and a setting of `conf` that mean the same thing must agree, or one would
    silently lose (`--rebalance eager-range` ran cooperative under --conf
    partition.assignment.strategy=cooperative-sticky). --rebalance counts only when typed: its default
    gives way to a conf that chooses."""
    typed_rebalance = click.get_current_context().get_parameter_source("rebalance") not in (
        ParameterSource.DEFAULT,
        ParameterSource.DEFAULT_MAP,
        None,
    )
    if "group.id" in conf:
        refuse_conflict("GROUP", group, "group.id", conf["group.id"], source=source, same=str.__eq__)
    if "bootstrap.servers" in conf:
        refuse_conflict(
            "--bootstrap-server",
            bootstrap,
            "bootstrap.servers",
            conf["bootstrap.servers"],
            source=source,
            same=same_bootstrap,
        )
    if remote_assignor is not None and "group.remote.assignor" in conf:
        refuse_conflict(
            "--remote-assignor",
            remote_assignor,
            "group.remote.assignor",
            conf["group.remote.assignor"],
            source=source,
        )
    if instance_id is not None and "group.instance.id" in conf:
        refuse_conflict(
            "--instance-id",
            instance_id,
            "group.instance.id",
            conf["group.instance.id"],
            source=source,
            same=str.__eq__,
        )
    if not typed_rebalance:
        return
    protocol = "consumer" if rebalance == "consumer" else "classic"
    if "group.protocol" in conf:
        refuse_conflict(
            "--rebalance",
            protocol,
            "group.protocol",
            conf["group.protocol"],
            source=source,
            shown=f"--rebalance {rebalance} (group.protocol {protocol})",
        )
    if rebalance != "consumer" and "partition.assignment.strategy" in conf:
        assignor = REBALANCE_MODE_ASSIGNOR[rebalance]
        refuse_conflict(
            "--rebalance",
            assignor,
            "partition.assignment.strategy",
            conf["partition.assignment.strategy"],
            source=source,
            shown=f"--rebalance {rebalance} (partition.assignment.strategy {assignor})",
        )


def refuse_unknown_keys(conf: dict[str, Any]) -> None:
    """A key kafka-coop does not know is asked of librdkafka itself (a newer one may know it), with no
    broker involved: one it refuses is one sentence (exit 2) instead of a warning and then an error."""
    unknown = {k: v for k, v in conf.items() if k not in KNOWN_CONSUMER_KEYS}
    if not unknown:
        return
    from confluent_kafka import Consumer, KafkaException  # lazy: consume --help loads no client

    quiet = logging.getLogger("kafka_coop.cli.probe")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False

    for key, value in sorted(unknown.items()):
        try:
            Consumer({"group.id": "kafka-coop-probe", "logger": quiet, key: value}).close()
        except KafkaException as exc:
            why = str(exc.args[0].str() if exc.args else exc).rstrip(".")
            raise SettingsError(
                f"librdkafka refused the setting {key}={value!r} from --conf or --command-config: {why}.",
                hint=LIBRDKAFKA_NAMES_HINT,
            ) from None


def _open_outputs(records_path: Path | None, events_path: Path | None) -> tuple[IO[str] | None, Any]:
    """The --records file and the --events sink, or neither: a path that cannot be written leaves no
    file created for the other behind (the error itself is the top level's one sentence, exit 2)."""
    created = records_path is not None and not records_path.exists()
    records = records_path.open("a", encoding="utf-8") if records_path is not None else None
    try:
        return records, JsonlSink(events_path) if events_path is not None else None
    except OSError:
        if records is not None:
            records.close()
            if created and records_path is not None:
                records_path.unlink(missing_ok=True)
        raise


def _serve_metrics(term: Terminal, port: int, addr: str) -> tuple[Any, Any]:
    """The endpoint first, so a port already taken is one sentence (exit 2) before joining the group."""
    require("prometheus_client", "--metrics-port")
    from kafka_coop.sinks import PrometheusSink, serve_metrics  # lazy: an extra, named by require() first

    try:
        server = serve_metrics(port, addr)
    except OSError as exc:
        raise InvalidInput(
            f"Cannot serve metrics on {addr}:{port}: {exc.strerror or exc}.",
            hint="Choose another --metrics-port (0 picks a free one).",
        ) from None
    term.progress(f"Prometheus metrics at http://{addr}:{server.port}/metrics")
    return server, PrometheusSink()


def _poll_loop(
    consumer: Any, stop: _Stop, records: IO[str] | None, client: str, print_records: bool, process_ms: int
) -> None:
    poll = consumer.poll
    store = consumer.store_offsets
    while not stop.requested:
        msg = poll(0.1)
        if msg is None:
            if records is not None:
                records.flush()
            continue
        if msg.error():
            continue
        if process_ms:
            time.sleep(process_ms / 1000.0)
        if records is not None:
            _, produced = msg.timestamp()
            records.write(
                f"{client} {msg.topic()} {msg.partition()} {msg.offset()} {produced} "
                f"{time.time_ns() // 1_000_000}\n"
            )
        if print_records:
            value = msg.value()
            click.echo(f"{msg.topic()}-{msg.partition()}@{msg.offset()} {value!r}")
        store(msg)

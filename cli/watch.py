"""`kafka-coop watch GROUP`: the group as `rollout run` shows it, without a rollout, look after look.

Members (family, protocol, partitions, lag), the group's state and assignor, and the partitions no one
owns now with since when; a live table on a terminal, a line per look otherwise, one JSON record per
look with -o json (schema `watch`). Ctrl-C ends it with exit 0.
"""

from __future__ import annotations

import time
from pathlib import Path

import click
from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from kafka_coop.events import PartitionKey
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC
from kafka_coop.rollout import WatchRecord, watch_record

from ._context import (
    Terminal,
    admin_for,
    bootstrap_option,
    command_config_option,
    output_option,
    pass_terminal,
)


def _table(record: WatchRecord) -> Table:
    title = (
        f"{record.group}: {record.state}, {record.group_type} group, "
        f"assignor {record.selected_assignor or '-'}, "
        f"{len(record.members)} members, lag {record.total_lag if record.total_lag is not None else '-'}"
    )
    table = Table(title=title, title_justify="left")
    for column in ("member", "family", "protocol", "partitions", "lag"):
        table.add_column(column)
    for m in record.members:
        table.add_row(
            m.name,
            m.client_family,
            m.rebalance_protocol,
            str(m.partitions),
            "-" if m.lag is None else str(m.lag),
        )
    return table


def _unowned_line(record: WatchRecord) -> Text:
    if not record.unowned:
        return Text("unowned now: none", style="green")
    oldest = min(u.since_ms for u in record.unowned)
    names = ", ".join(f"{u.topic}-{u.partition}" for u in record.unowned[:6])
    more = f" (+{len(record.unowned) - 6})" if len(record.unowned) > 6 else ""
    return Text(
        f"unowned now: {len(record.unowned)} ({names}{more}), the oldest for "
        f"{(record.taken_ms - oldest) / 1000:.1f} s",
        style="yellow",
    )


@click.command("watch")
@click.argument("group")
@bootstrap_option()
@command_config_option()
@click.option("--interval", type=click.FloatRange(min=0.2), default=2.0, show_default=True, help="Seconds.")
@click.option(
    "--count", type=click.IntRange(min=1), default=None, help="Stop after N looks (default: never)."
)
@click.option("--manifests-topic", default=DEFAULT_MANIFEST_TOPIC, show_default=True, help="'' to read none.")
@output_option(("table", "json"))
@pass_terminal
def watch(
    term: Terminal,
    group: str,
    bootstrap: str,
    command_config: Path | None,
    interval: float,
    count: int | None,
    manifests_topic: str,
    output: str,
) -> None:
    """Watch GROUP: members, protocol, assignment, lag, partitions unowned now and since when. Ctrl-C ends
    it (exit 0); exit 2 bad input, 3 the cluster."""
    from kafka_coop.inspection import take_snapshot  # lazy: watch --help loads no client

    admin, conf = admin_for(bootstrap, command_config)
    since: dict[PartitionKey, int] = {}
    live = None
    if output != "json" and term.out.is_terminal:
        live = Live(console=term.out, refresh_per_second=2)
        live.start()
    looks = 0
    try:
        while count is None or looks < count:
            snap = take_snapshot(
                admin, group, conf=conf, manifests_topic=manifests_topic or None, with_broker=False
            )
            record, since = watch_record(snap, since)
            looks += 1
            if output == "json":
                click.echo(record.model_dump_json())
            elif live is not None:
                live.update(Group(_table(record), _unowned_line(record)))
            else:
                term.out.print(_table(record))
                term.out.print(_unowned_line(record), highlight=False)
            if count is None or looks < count:
                time.sleep(interval)
    except KeyboardInterrupt:
        return  # Ctrl-C is how a watch ends: exit 0
    finally:
        if live is not None:
            live.stop()

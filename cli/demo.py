"""`kafka-coop demo`: the main job on the embedded default, a local sandbox broker."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from kafka_coop.demo import DemoResult, run_demo
from kafka_coop.sandbox import DEFAULT_PORT, Sandbox, free_port
from kafka_coop.sandbox._broker import port_is_free

from ._context import Ctx, output_option, pass_ctx

_KIND_STYLE = {"assigned": "green", "revoked": "yellow", "lost": "bold red"}


def _event_line(event: dict[str, Any]) -> Text | None:
    if event["kind"] not in _KIND_STYLE:
        return None
    parts = ",".join(str(p) for _, p in event["partitions"]) or "-"
    text = Text("  ")
    text.append(f"{event['client_id'] or event['member_id'][:12]:<14}")
    text.append(f"{event['kind']:<9}", style=_KIND_STYLE[event["kind"]])
    text.append(f"{event['protocol']:<12}[{parts}] owned {len(event['owned'])}")
    return text


def _summary(result: DemoResult) -> Table:
    table = Table(
        title=f"Rebalance cost per phase ({result.members} members, {result.partitions} partitions)",
        caption="unavailable ms: partition-milliseconds without an owner, summed over partitions",
    )
    table.add_column("phase", no_wrap=True)
    for column in ("callbacks", "revoked", "unavailable ms", "secs"):
        table.add_column(column, justify="right", no_wrap=True)
    for phase in result.phases:
        table.add_row(
            phase.name,
            str(phase.rebalance_events),
            str(phase.partitions_revoked),
            f"{phase.partition_unavailable_ms:,}",
            f"{phase.duration_s:.1f}",
        )
    return table


@click.command()
@click.option(
    "--bootstrap-server",
    "bootstrap",
    default=None,
    metavar="HOST:PORT",
    help="Use this cluster instead of starting the sandbox.",
)
@click.option("--members", type=click.IntRange(2, 20), default=3, show_default=True)
@click.option("--partitions", type=click.IntRange(1, 200), default=6, show_default=True)
@click.option("--keep-sandbox", is_flag=True, help="Leave the sandbox broker running afterwards.")
@output_option()
@pass_ctx
def demo(
    ctx: Ctx, bootstrap: str | None, members: int, partitions: int, keep_sandbox: bool, output: str
) -> None:
    """Start a sandbox Kafka and walk a real group from eager to cooperative rebalancing."""
    box: Sandbox | None = None
    if bootstrap is None:
        existing = Sandbox().status()
        if existing is not None:
            bootstrap = existing.bootstrap
            ctx.progress(f"Using the running sandbox at {bootstrap}")
        else:
            port = DEFAULT_PORT if port_is_free(DEFAULT_PORT) else free_port()
            box = Sandbox(port=port, progress=ctx.progress)
            with ctx.err.status("Starting the sandbox broker…"):
                bootstrap = box.start().bootstrap
    workdir = Path(tempfile.mkdtemp(prefix="kafka-coop-demo-"))

    def on_event(event: dict[str, Any]) -> None:
        line = _event_line(event)
        if line is not None:
            ctx.err.print(line, highlight=False)

    def on_phase(_name: str, text: str) -> None:
        ctx.err.rule(text)

    try:
        result = run_demo(
            bootstrap, workdir, members=members, partitions=partitions, on_event=on_event, on_phase=on_phase
        )
    finally:
        if box is not None and not keep_sandbox:
            box.stop()
    if output == "json":
        ctx.emit_json(result)
        return
    ctx.out.print(_summary(result))
    ctx.out.print(f"Produced {result.produced:,} records during the walk. Member events and logs: {workdir}")

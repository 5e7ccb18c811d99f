"""`kafka-coop demo`: the main job on the embedded default, a local sandbox broker."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table
from rich.text import Text

from kafka_coop.inspection import GroupSnapshot
from kafka_coop.rollout import Plan, PlanPhase
from kafka_coop.sandbox import (
    DEFAULT_PORT,
    DemoHooks,
    DemoResult,
    GateRun,
    MemberProcess,
    Sandbox,
    free_port,
    port_is_free,
    run_demo,
)

from ._context import Terminal, command_config_option, output_option, pass_terminal
from .describe import render_snapshot
from .plan import render_table

if TYPE_CHECKING:
    from kafka_coop.analytics import ReportResult

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
        title=f"Rebalance cost per step ({result.members} members, {result.partitions} partitions)",
        caption="unavailable ms: partition-milliseconds without an owner; pause ms: member-milliseconds "
        "processing nothing because of a rebalance (kafka-coop report's definitions)",
    )
    table.add_column("step", no_wrap=True)
    for column in ("rebalances", "revoked", "unavailable ms", "pause ms", "secs"):
        table.add_column(column, justify="right", no_wrap=True)
    for step in result.steps:
        table.add_row(
            step.name,
            str(step.rebalances),
            str(step.partitions_revoked),
            f"{step.partition_unavailable_ms:,}",
            f"{step.pause_ms:,}",
            f"{step.duration_s:.1f}",
        )
    return table


def narration(term: Terminal, *, table: bool) -> DemoHooks:
    """The walk narrated on stderr as it happens (results go to stdout); with `table` False (json
    output) only the step and phase rules and the commands run are shown."""
    say = term.err

    def on_event(event: dict[str, Any]) -> None:
        line = _event_line(event)
        if line is not None and table:
            say.print(line, highlight=False)

    def on_step(_name: str, text: str) -> None:
        say.rule(Text(text, style="bold"))

    def on_snapshot(snap: GroupSnapshot) -> None:
        if table:
            render_snapshot(Terminal(out=say, err=say), snap)

    def on_plan(plan: Plan) -> None:
        if table:
            render_table(Terminal(out=say, err=say), plan)

    def on_phase(phase: PlanPhase) -> None:
        say.rule(f"Phase {phase.n}: {phase.title} [{phase.action}]", style="cyan")

    def on_gate(run: GateRun) -> None:
        # the runner reports the steps it runs besides gates (remove-members) the same way
        label = "gate PASS " if " verify-group " in f" {run.command} " else "ran OK "
        say.print(
            Text.assemble((label, "green"), f"in {run.seconds:.1f} s: ", (run.command, "dim")),
            highlight=False,
        )

    def on_member(member: MemberProcess) -> None:
        say.print(
            Text(
                f"  restarted {member.spec.name} ({member.spec.group_protocol}, "
                f"{','.join(member.spec.assignors)})",
                style="dim",
            )
        )

    return DemoHooks(
        on_event=on_event,
        on_step=on_step,
        on_snapshot=on_snapshot,
        on_plan=on_plan,
        on_phase=on_phase,
        on_gate=on_gate,
        on_member=on_member,
    )


@click.command()
@click.option(
    "--bootstrap-server",
    "bootstrap",
    default=None,
    metavar="HOST:PORT",
    help="Use this cluster instead of starting the sandbox.",
)
@click.option(
    "--to",
    "target",
    type=click.Choice(["cooperative", "consumer"]),
    default="cooperative",
    show_default=True,
    help="Walk the upgrade to cooperative (librdkafka: gated cutover) or to KIP-848 (live), and back.",
)
@click.option("--members", type=click.IntRange(2, 20), default=3, show_default=True)
@click.option("--partitions", type=click.IntRange(1, 200), default=6, show_default=True)
@click.option("--rate", type=click.FloatRange(1, 5000), default=100.0, show_default=True, help="Records/s.")
@click.option("--report/--no-report", default=True, show_default=True, help="End with kafka-coop report.")
@click.option("--keep-sandbox", is_flag=True, help="Leave the sandbox broker running afterwards.")
@command_config_option()
@output_option()
@pass_terminal
def demo(
    term: Terminal,
    bootstrap: str | None,
    command_config: Path | None,
    target: str,
    members: int,
    partitions: int,
    rate: float,
    report: bool,
    keep_sandbox: bool,
    output: str,
) -> None:
    """Start a sandbox Kafka, plan and walk a real fleet's protocol upgrade behind gates, and back."""
    box: Sandbox | None = None
    if command_config is not None and bootstrap is None:
        raise click.UsageError("--command-config is for a cluster given with --bootstrap-server.")
    if bootstrap is None:
        existing = Sandbox().status()
        if existing is not None:
            bootstrap = existing.bootstrap
            term.progress(f"Using the running sandbox at {bootstrap}")
        else:
            port = DEFAULT_PORT if port_is_free(DEFAULT_PORT) else free_port()
            box = Sandbox(port=port, progress=term.progress)
            with term.err.status("Starting the sandbox broker…"):
                bootstrap = box.start().bootstrap
    workdir = Path(tempfile.mkdtemp(prefix="kafka-coop-demo-"))
    hooks = narration(term, table=output != "json")
    try:
        result = run_demo(
            bootstrap,
            workdir,
            members=members,
            partitions=partitions,
            rate=rate,
            target=target,  # type: ignore[arg-type]  # click.Choice
            hooks=hooks,
            command_config=command_config,
        )
    finally:
        if box is not None and not keep_sandbox:
            box.stop()
    done = _report(term, result) if report else None
    for note in done.notes if done is not None else ():
        term.err.print(Text(f"note: {note}", style="yellow"), highlight=False)
    if output == "json":
        data = result.model_dump(mode="json")
        if done is not None:
            data["report"] = {
                "engine": done.engine,
                "out_dir": str(done.out_dir),
                "paths": [str(p) for p in done.paths],
                "summary": done.summary.model_dump(mode="json"),
            }
        term.emit_json(data)
        return
    term.out.print(_summary(result))
    audit = result.records
    term.out.print(
        f"Records: {audit.produced:,} produced, {audit.processed:,} processed, {audit.lost} lost, "
        f"{audit.duplicates:,} redelivered after rebalances.",
        highlight=False,
    )
    if done is not None:
        summary = done.summary
        term.out.print(
            f"Report ({done.engine} engine, {summary.events:,} events, {done.elapsed_s:.1f} s): "
            f"{summary.partition_unavailable_ms_total:,} partition-unavailable ms, "
            f"{summary.pause_ms_total:,} member pause ms in total; written to {done.out_dir} "
            f"({', '.join(p.name for p in done.paths)})",
            highlight=False,
        )
        term.out.print(
            f"Re-run: kafka-coop report {result.workdir}/*.events.jsonl "
            f"--phases {result.phases_file} --out DIR",
            highlight=False,
        )
    term.out.print(f"Member events, logs and phases: {workdir}", highlight=False)


def _report(term: Terminal, result: DemoResult) -> ReportResult:
    """The walk's events through `kafka-coop report` (summary.json, Parquet, the unowned-partitions plot)."""
    from kafka_coop.analytics import run_report

    with term.err.status("kafka-coop report over the walk's events…"):
        return run_report(result.event_files, Path(result.workdir) / "report", phases=result.phases_file)

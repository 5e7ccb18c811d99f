"""`kafka-coop demo`: the main job on the embedded default, a local sandbox broker."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click
from pydantic import BaseModel
from rich.text import Text

from kafka_coop.analytics import Summary, run_report
from kafka_coop.inspection import GroupSnapshot
from kafka_coop.rollout import Plan, PlanPhase
from kafka_coop.sandbox import (
    DEFAULT_PORT,
    CommandRun,
    DemoHooks,
    DemoResult,
    GateRun,
    MemberProcess,
    Sandbox,
    free_port,
    port_is_free,
    run_demo,
)

from ._context import (
    BootstrapServers,
    Terminal,
    check_resolves,
    command_config_option,
    output_option,
    pass_terminal,
    read_command_config,
)
from ._tables import aligned_table, heading
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


def _summary(result: DemoResult) -> Text:
    rows = [
        [
            step.name,
            str(step.rebalances),
            str(step.partitions_revoked),
            f"{step.partition_unavailable_ms:,}",
            f"{step.pause_ms:,}",
            f"{step.duration_s:.1f}",
        ]
        for step in result.steps
    ]
    title = f"Rebalance cost per step ({result.members} members, {result.partitions} partitions)"
    table = aligned_table(
        ("step", "rebalances", "revoked", "unavailable ms", "pause ms", "secs"), rows, title=title
    )
    table.append(
        "\nunavailable ms: partition-milliseconds without an owner; pause ms: member-milliseconds "
        "processing nothing because of a rebalance (kafka-coop report's definitions)",
        style="dim",
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
        say.print(heading(text))

    def on_snapshot(snap: GroupSnapshot) -> None:
        if table:
            render_snapshot(Terminal(out=say, err=say), snap)

    def on_plan(plan: Plan) -> None:
        if table:
            render_table(Terminal(out=say, err=say), plan)

    def on_phase(phase: PlanPhase) -> None:
        say.print(heading(f"Phase {phase.n}: {phase.title} [{phase.action}]", "cyan"))

    def on_gate(run: GateRun | CommandRun) -> None:
        # the runner reports the steps it runs besides gates (remove-members) the same way
        label = "gate PASS " if isinstance(run, GateRun) else "ran OK "  # a run gate passed (warnings too)
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
        on_note=lambda note: say.print(Text(f"note: {note}", style="yellow"), highlight=False),
    )


@click.command()
@click.option(
    "--bootstrap-server",
    "bootstrap",
    type=BootstrapServers(),
    default=None,
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
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=None,
    help=f"Client port of the sandbox the demo starts (default {DEFAULT_PORT}, or a free one if taken).",
)
@click.option(
    "--controller-port",
    type=click.IntRange(1, 65535),
    default=None,
    help="KRaft controller port of the sandbox the demo starts, on 127.0.0.1 (default: a free one).",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep the member events, logs, the report and the sandbox's data here (default: a temporary "
    "directory, removed at the end).",
)
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
    port: int | None,
    controller_port: int | None,
    directory: Path | None,
    output: str,
) -> None:
    """Start a sandbox Kafka, plan and walk a real fleet's protocol upgrade behind gates, and back.

    However it ends (done, failed, Ctrl-C) it stops its members, deletes its group and topic, stops the
    sandbox it started and removes its files, unless --dir (keep them there) or --keep-sandbox."""
    if command_config is not None and bootstrap is None:
        raise click.UsageError("--command-config is for a cluster given with --bootstrap-server.")
    if port is not None and bootstrap is not None:
        raise click.UsageError("--port is for the sandbox the demo starts, not a --bootstrap-server.")
    if controller_port is not None and bootstrap is not None:
        raise click.UsageError(
            "--controller-port is for the sandbox the demo starts, not a --bootstrap-server."
        )
    if bootstrap is not None:
        if command_config is not None:
            read_command_config(command_config)  # a bad file is one sentence before anything starts
        check_resolves(bootstrap)
    keep_files = directory is not None
    workdir = (directory or Path(tempfile.mkdtemp(prefix="kafka-coop-demo-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    box: Sandbox | None = None
    try:
        if bootstrap is None:
            existing = Sandbox().status() if port is None and controller_port is None else None
            if existing is not None:
                bootstrap = existing.bootstrap
                term.progress(f"Using the running sandbox at {bootstrap}")
            else:
                chosen = (
                    port if port is not None else DEFAULT_PORT if port_is_free(DEFAULT_PORT) else free_port()
                )
                box = Sandbox(
                    dir=workdir / "sandbox",
                    port=chosen,
                    controller_port=controller_port,
                    progress=term.progress,
                )
                with term.err.status("Starting the sandbox broker…"):
                    bootstrap = box.start().bootstrap
        hooks = narration(term, table=output != "json")
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
        done = _report(term, result) if report else None
    finally:
        if box is not None and not keep_sandbox:
            box.stop()
        if box is not None and keep_sandbox:
            keep_files = True
            term.err.print(
                f"The sandbox keeps running at {box.bootstrap}: `kafka-coop sandbox stop --dir {box.dir}`.",
                highlight=False,
            )
        if not keep_files:
            shutil.rmtree(workdir, ignore_errors=True)
    for note in done.notes if done is not None else ():
        term.err.print(Text(f"note: {note}", style="yellow"), highlight=False)
    if output == "json":
        term.emit_json(demo_output(result, done, kept=keep_files))
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
        where = f"; written to {done.out_dir} ({', '.join(p.name for p in done.paths)})" if keep_files else ""
        term.out.print(
            f"Report ({done.engine} engine, {summary.events:,} events, {done.elapsed_s:.1f} s): "
            f"{summary.partition_unavailable_ms_total:,} partition-unavailable ms, "
            f"{summary.pause_ms_total:,} member pause ms in total{where}",
            highlight=False,
        )
    if keep_files:
        term.out.print(
            f"Re-run: kafka-coop report {result.workdir}/*.events.jsonl "
            f"--phases {result.phases_file} --out DIR",
            highlight=False,
        )
        term.out.print(f"Member events, logs and phases: {workdir}", highlight=False)
    else:
        term.out.print(
            "Member events, logs and the report were removed; --dir DIR keeps them.", highlight=False
        )


class DemoReport(BaseModel):
    """The report over the walk's events (`kafka-coop report`'s summary)."""

    engine: str
    out_dir: str
    paths: list[str]
    summary: Summary


class DemoOutput(DemoResult):
    """What `demo --output json` prints: the walk, its report, and whether its files were kept."""

    v: Literal[3] = 3  # v3: its report is summary v2 (vanished_*); v2: its plans are plan v2
    report: DemoReport | None = None
    files_kept: bool


def demo_output(result: DemoResult, done: ReportResult | None, *, kept: bool) -> DemoOutput:
    report = None
    if done is not None:
        report = DemoReport(
            engine=done.engine,
            out_dir=str(done.out_dir),
            paths=[str(p) for p in done.paths],
            summary=done.summary,
        )
    return DemoOutput(**result.model_dump(), report=report, files_kept=kept)


def _report(term: Terminal, result: DemoResult) -> ReportResult:
    """The walk's events through `kafka-coop report` (summary.json, Parquet, the unowned-partitions plot)."""
    with term.err.status("kafka-coop report over the walk's events…"):
        return run_report(result.event_files, Path(result.workdir) / "report", phases=result.phases_file)

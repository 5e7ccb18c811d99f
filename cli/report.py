"""`kafka-coop report`: rebalance analytics over event streams (files, directories, globs, kafka://TOPIC)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click
from rich.text import Text

from kafka_coop.analytics import ENGINES, ReportResult, run_report
from kafka_coop.errors import InvalidInput

from ._context import (
    Terminal,
    bootstrap_option,
    check_resolves,
    command_config_option,
    connection_conf_of,
    output_option,
    pass_terminal,
)
from ._tables import aligned_table

TOP_MEMBERS = 15
TOP_PARTITIONS = 10
MALFORMED_SHOWN = 5


def _ms(value: int) -> str:
    return f"{value:,}"


def render_report(term: Terminal, result: ReportResult) -> None:
    s = result.summary
    head = [
        ["events", f"{s.events:,}", "malformed", f"{s.malformed:,}", "engine", result.engine],
        [
            "unavailable",
            f"{_ms(s.partition_unavailable_ms_total)} partition-ms in {s.intervals:,} intervals",
            "paused",
            f"{_ms(s.pause_ms_total)} member-ms in {s.pauses:,} pauses",
            "took",
            f"{result.elapsed_s:.1f} s",
        ],
    ]
    if s.vanished_intervals:  # no event says when a SIGKILLed owner stopped: these are upper bounds
        gone = f"{s.vanished_intervals:,} from a vanished owner: at most {_ms(s.vanished_unavailable_ms)}"
        head.append(["", f"{gone} partition-ms", "", "", "", ""])
    out = term.out
    out.print(aligned_table(None, head))
    protocols = [
        [
            name,
            str(p.members),
            f"{p.events:,}",
            f"{p.rebalances:,}",
            f"{p.revoked:,}",
            f"{p.revoked_partitions:,}",
            f"{p.lost:,}",
        ]
        for name, p in s.rebalances.items()
    ]
    columns = ("protocol", "members", "callbacks", "rebalances", "revoked", "revoked partitions", "lost")
    out.print(aligned_table(columns, protocols, title="rebalances by protocol"))
    phases = [
        [
            ph.name,
            f"{(ph.end_ms - ph.start_ms) / 1000:,.1f}",
            f"{ph.events:,}",
            f"{ph.rebalances:,}",
            f"{ph.revoked_partitions:,}",
            _ms(ph.partition_unavailable_ms),
            _ms(ph.pause_ms),
        ]
        for ph in s.phases
    ]
    columns = ("phase", "secs", "events", "rebalances", "revoked partitions", "unavailable ms", "pause ms")
    out.print(aligned_table(columns, phases, title="phases"))
    members = [
        [
            m.group,
            m.name,
            _ms(m.pause_ms),
            str(m.pauses),
            str(m.rebalances),
            str(m.revoked_partitions),
            str(m.lost_partitions),
            f"{m.callback_ms_total:,.1f}",
            f"{m.callback_ms_max:,.1f}",
        ]
        for m in sorted(s.members, key=lambda m: (-m.pause_ms, m.group, m.name))[:TOP_MEMBERS]
    ]
    member_columns = (
        "group",
        "member",
        "pause ms",
        "pauses",
        "rebalances",
        "revoked",
        "lost",
        "callback ms",
        "max cb",
    )
    title = f"members by pause (top {min(TOP_MEMBERS, len(s.members))} of {len(s.members)})"
    out.print(aligned_table(member_columns, members, title=title))
    worst = sorted((p for p in s.partitions if p.unavailable_ms), key=lambda p: -p.unavailable_ms)
    if worst:
        shown = min(TOP_PARTITIONS, len(worst))
        rows = [
            [part.group, f"{part.topic}-{part.partition}", _ms(part.unavailable_ms), str(part.intervals)]
            for part in worst[:TOP_PARTITIONS]
        ]
        title = f"partitions by unavailability (top {shown} of {len(s.partitions)})"
        out.print(aligned_table(("group", "partition", "unavailable ms", "intervals"), rows, title=title))
    out.print(Text(f"wrote {', '.join(p.name for p in result.paths)} in {result.out_dir}", style="dim"))


def report_malformed(term: Terminal, result: ReportResult) -> None:
    """Refused lines go to stderr (never silently dropped), the full list to malformed.jsonl."""
    count = result.summary.malformed
    if not count:
        return
    term.err.print(
        Text.assemble(
            (f"{count:,} malformed lines were not counted", "yellow"),
            f" (all listed in {result.out_dir / 'malformed.jsonl'}):",
        ),
        highlight=False,
    )
    for m in result.malformed[:MALFORMED_SHOWN]:
        term.err.print(f"  {m.path}:{m.line}: {m.reason}", highlight=False)
    if count > MALFORMED_SHOWN:
        term.err.print(f"  … and {count - MALFORMED_SHOWN:,} more", highlight=False)


def epoch_ms(value: str | None, what: str) -> int | None:
    """ISO 8601 (UTC unless it says otherwise) or epoch milliseconds; anything else is exit 2."""
    if value is None:
        return None
    if value.strip().isdigit():
        return int(value)
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidInput(
            f"{what} {value!r} is not a time.",
            hint="Write it as 2026-11-26T10:00:00 (UTC) or epoch milliseconds.",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


@click.command()
@click.argument("events", nargs=-1, required=True, metavar="EVENTS...")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Directory for summary.json, unowned.png, malformed.jsonl and (spark) Parquet tables.",
)
@click.option(
    "--engine",
    type=click.Choice(ENGINES),
    default="auto",
    show_default=True,
    help="auto: python for local files up to 64 MiB, spark otherwise (and for kafka:// sources).",
)
@click.option("--master", default=None, metavar="URL", help="Spark master URL (default local[*]).")
@click.option(
    "--phases",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help='JSON [{"name", "start_ms", "end_ms"}, ...]; default: the whole stream is one phase "all".',
)
@click.option(
    "--group", "groups", multiple=True, metavar="GROUP", help="Live pipeline output only: these groups."
)
@click.option(
    "--since",
    default=None,
    metavar="TIME",
    help="Live pipeline output only: from TIME (ISO 8601 or epoch ms).",
)
@click.option(
    "--until", default=None, metavar="TIME", help="Live pipeline output only: until TIME, exclusive."
)
@bootstrap_option(required=False)
@command_config_option()
@click.option("--no-plot", is_flag=True, help="Skip the PNG.")
@output_option()
@pass_terminal
def report(
    term: Terminal,
    events: tuple[str, ...],
    out_dir: Path,
    engine: str,
    master: str | None,
    phases: Path | None,
    groups: tuple[str, ...],
    since: str | None,
    until: str | None,
    bootstrap: str | None,
    command_config: Path | None,
    no_plot: bool,
    output: str,
) -> None:
    """Rebalance analytics over RebalanceEvent JSON lines (files, directories, globs) or kafka://TOPIC:
    per-partition unavailability, pause per member and phase, rebalances by protocol."""
    conf = connection_conf_of(command_config, bootstrap) if command_config is not None else None
    if bootstrap is not None and any(e.startswith("kafka://") for e in events):
        check_resolves(bootstrap)
    term.progress(f"Reading {len(events)} source(s)…")
    result = run_report(
        list(events),
        out_dir,
        engine=engine,  # type: ignore[arg-type]  # click.Choice(ENGINES) narrows it
        phases=phases,
        bootstrap=bootstrap,
        master=master,
        plot=not no_plot,
        conf=conf,
        groups=list(groups) or None,
        since_ms=epoch_ms(since, "--since"),
        until_ms=epoch_ms(until, "--until"),
    )
    report_malformed(term, result)
    for note in result.notes:  # stderr, so `-o json` stays one JSON document
        term.err.print(Text(f"note: {note}", style="yellow"), highlight=False)
    if output == "json":
        term.emit_json(result.summary)
    else:
        render_report(term, result)

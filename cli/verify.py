"""`kafka-coop verify-group`: the preflight gate a deploy pipeline runs before and between bounces."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click
from rich.text import Text

from kafka_coop.analytics import (
    MARKERS_TOPIC,
    Judged,
    PauseFigures,
    PhaseMarker,
    check_pipeline_out,
    judge_pause,
)
from kafka_coop.errors import GateFailed, InvalidInput
from kafka_coop.inspection import LAG_RANK, GroupLagStatus
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC
from kafka_coop.rollout import (
    PLAN_HINT,
    GateProgress,
    GateReport,
    MigrationSpec,
    Plan,
    group_missing,
    load_migration,
    load_plan,
    migration_names,
    run_gate,
)

from ._context import (
    LIST_GROUPS,
    Terminal,
    admin_for,
    bootstrap_option,
    command_config_option,
    missing_group,
    output_option,
    pass_terminal,
)
from ._tables import aligned_table, fit_width, fold
from .pipeline import topic_of
from .report import epoch_ms

if TYPE_CHECKING:
    from kafka_coop.analytics import Judged


class VerifyOutput(GateReport):
    """What `verify-group --output json` prints: the gate's checks and verdict (schema `verify-group`);
    v2: the pause figures the `pause-budget` check judged, its budget, and the marker a pass wrote."""

    v: Literal[2] = 2
    pause: PauseFigures | None = None
    pause_budget_ms: int | None = None
    marker: PhaseMarker | None = None


STATUS_STYLE = {"pass": "green", "not-judged": "dim", "warn": "yellow", "fail": "bold red"}


class LagWindow(click.ParamType):  # type: ignore[type-arg]  # generic only in some click versions
    """`auto` (None: the window is the time gathering takes) or a number of seconds >= 0."""

    name = "auto|SECONDS"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float | None:
        if value is None or isinstance(value, float | int):
            return None if value is None else float(value)
        text = str(value).strip().lower()
        if text == "auto":
            return None
        try:
            seconds = float(text)
        except ValueError:
            self.fail(f"{value!r} is neither 'auto' nor a number of seconds.", param, ctx)
        if seconds < 0:
            self.fail(f"{value!r} is negative.", param, ctx)
        return seconds


def plan_for(path: Path, group: str) -> Plan:
    """A plan file (upgrade-plan --output json) names its group and migration; the spec is the source
    of truth. A plan made for another group is refused: its phases say nothing about this one."""
    plan = load_plan(path)
    if plan.group != group:
        raise InvalidInput(
            f"Plan file {str(path)!r} is the plan of group {plan.group!r}, not of {group!r}.",
            hint=f"Check the group name, or make its own plan: `kafka-coop upgrade-plan {group} ...`.",
        )
    if not plan.migration:
        raise InvalidInput(
            f"Plan file {str(path)!r} names no migration (its status is {plan.status}: "
            "there are no phases to verify).",
            hint=PLAN_HINT,
        )
    return plan


def render_report(term: Terminal, report: GateReport) -> None:
    rows: list[list[Text | str]] = []
    for check in report.checks:
        members = ", ".join(check.members[:8]) + (
            f" (+{len(check.members) - 8})" if len(check.members) > 8 else ""
        )
        rows.append(
            [
                check.name,
                Text(check.status.upper(), style=STATUS_STYLE[check.status]),
                check.reason + (f" [{members}]" if members else ""),
            ]
        )
    width = fit_width(term.out)
    columns = ("check", "status", "reason [members]")
    term.out.print(aligned_table(columns, rows, title=_title(report), width=width))
    if report.lag is not None and report.lag.partitions:
        term.out.print(_lag_table(report.lag, width))
    term.out.print(Text(f"gate {report.status.upper()}", style=STATUS_STYLE[report.status]))


LAG_STYLE = {
    "OK": "green",
    "NOT_JUDGED": "dim",
    "WARNING": "yellow",
    "STOPPED": "bold red",
    "STALLED": "bold red",
    "REWIND": "bold red",
}
LAG_ROWS = 12


def _shown(status: str) -> str:
    """A status as the gate prints every status: Burrow's NOT_JUDGED reads NOT-JUDGED, as the checks'
    not-judged does (`-o json` keeps each vocabulary's own spelling: its schema fixes it)."""
    return status.upper().replace("_", "-")


def _lag_table(lag: GroupLagStatus, width: int | None = None) -> Text:
    """Per partition, worst first: Burrow's status, the window and the evidence."""
    ranked = sorted(lag.partitions, key=lambda p: (-LAG_RANK[p.status], -p.lag_last, p.topic, p.partition))
    shown = ranked[:LAG_ROWS]
    title = (
        f"lag-status {_shown(lag.status)} (Burrow's rules over {lag.window_s:g} s, the group takes its worst)"
    )
    if len(ranked) > len(shown):
        title += f"; {len(ranked) - len(shown)} more partitions in -o json"
    rows: list[list[Text | str]] = [
        [
            f"{p.topic}-{p.partition}",
            Text(_shown(p.status), style=LAG_STYLE[p.status]),
            f"{p.committed_first} -> {p.committed_last}",
            f"{p.lag_first} -> {p.lag_last}",
            {True: "yes", False: "no", None: "?"}[p.owned],
            f"{p.window_s:g} s / {p.samples}",
            p.evidence,
        ]
        for p in shown
    ]
    columns = ("partition", "status", "committed", "lag", "owned", "window", "evidence")
    return aligned_table(columns, rows, title=title, width=width)


def _title(report: GateReport) -> str:
    target = report.target
    where = f" against {target.migration} phase {target.phase}" if target.migration else ""
    return f"verify-group {report.group}{where}"


@click.command("verify-group")
@click.argument("group")
@bootstrap_option()
@command_config_option()
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Plan JSON from upgrade-plan.",
)
@click.option("--migration", help=f"A migration by name ({', '.join(migration_names())}) or a YAML file.")
@click.option(
    "--phase", type=click.IntRange(min=0), help="Check the state after phase N (0 = before phase 1)."
)
@click.option(
    "--expect-members", type=click.IntRange(min=0), help="The number of members the group must have."
)
@click.option("--wait", is_flag=True, help="Re-check until the gate passes or --timeout runs out.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=120.0,
    show_default=True,
    help="Seconds the check may take (retrying a moving coordinator); with --wait, for all re-checks.",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.1),
    default=2.0,
    show_default=True,
    help="Seconds between checks.",
)
@click.option(
    "--lag-window",
    type=LagWindow(),
    default="auto",
    show_default=True,
    help="lag-not-growing compares the lag read when the command starts with the lag read after "
    "everything else was gathered. auto: the window is however long gathering took (no waiting); "
    "SECONDS: at least that long (waits only for what gathering did not cover); 0: one sample, "
    "no trend. The check's reason states the window used. Offsets move in steps of the members' "
    "commit interval (5 s by default), so a window of several seconds, or --wait, sees a real trend.",
)
@click.option("--strict", is_flag=True, help="Treat warnings as failures.")
@click.option("--manifests-topic", default=DEFAULT_MANIFEST_TOPIC, show_default=True, help="'' to read none.")
@click.option(
    "--max-pause-ms",
    type=click.IntRange(min=0),
    default=None,
    help="Fail when the members' pause p95 in the phase exceeds N ms (with --plan: default the plan's "
    "pause_budget_ms of --phase). Needs --pipeline-out or --events.",
)
@click.option(
    "--pipeline-out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Pause figures from the live pipeline's output (`kafka-coop pipeline run --out`).",
)
@click.option(
    "--events",
    "events_source",
    default=None,
    metavar="kafka://TOPIC",
    help="Pause figures computed from the events topic (the Python engine).",
)
@click.option(
    "--since",
    default=None,
    metavar="TIME",
    help="Judge the pause from TIME (ISO 8601 UTC or epoch ms), not from the phase's rollout marker.",
)
@click.option(
    "--markers-topic",
    default=MARKERS_TOPIC,
    show_default=True,
    help="Rollout markers: a passing --phase gate with a figures source records there that the next "
    "phase begins.",
)
@output_option()
@pass_terminal
def verify_group(
    term: Terminal,
    group: str,
    bootstrap: str,
    command_config: Path | None,
    plan_file: Path | None,
    migration: str | None,
    phase: int | None,
    expect_members: int | None,
    wait: bool,
    timeout: float,
    interval: float,
    lag_window: float | None,
    strict: bool,
    manifests_topic: str,
    max_pause_ms: int | None,
    pipeline_out: Path | None,
    events_source: str | None,
    since: str | None,
    markers_topic: str,
    output: str,
) -> None:
    """Named pass/warn/fail checks on GROUP; exit 0 when the gate passes, 1 when it fails."""
    if plan_file is not None and migration is not None:
        raise InvalidInput("Give --plan or --migration, not both.")
    plan = plan_for(plan_file, group) if plan_file is not None else None
    spec = load_migration(plan.migration) if plan is not None and plan.migration else None
    spec = load_migration(migration) if migration is not None else spec
    if (spec is None) != (phase is None):
        raise InvalidInput(
            "--phase goes with --plan or --migration, and they need --phase.",
            hint="e.g. `--migration eager-to-cooperative --phase 1` checks the state after phase 1.",
        )
    if spec is not None and phase is not None and phase > len(spec.phases):
        spec.phase(phase)  # the one sentence about which phases exist
    pause_budget, judged = pause_request(
        group,
        plan,
        spec,
        phase,
        max_pause_ms=max_pause_ms,
        source=pipeline_out if pipeline_out is not None else events_source,
        both=pipeline_out is not None and events_source is not None,
        since_ms=epoch_ms(since, "--since"),
    )
    if pipeline_out is not None:
        check_pipeline_out(pipeline_out)
    admin, conf = admin_for(bootstrap, command_config)

    def progress(step: GateProgress) -> None:
        seen, left = step.report, f"{step.left_s:.0f} s left"
        term.progress(f"[{step.attempt}] gate {seen.status}: {seen.summary()} — re-checking, {left}")

    report = run_gate(
        admin,
        group,
        conf=conf,
        spec=spec,
        phase=phase,
        expect_members=expect_members,
        wait=wait,
        timeout_s=timeout,
        interval_s=interval,
        lag_window_s=lag_window,
        strict=strict,
        manifests_topic=manifests_topic or None,
        on_progress=progress,
    )
    if group_missing(report):
        if wait:  # a deploy's first gate runs before its members have created the group: a verdict
            raise GateFailed(
                f"Group {group!r} did not appear on {bootstrap} within the {timeout:g} s wait.",
                hint=f"Check that the members started and the name is right: {LIST_GROUPS}",
            )
        raise missing_group(group, bootstrap)
    figures: PauseFigures | None = None
    marker: PhaseMarker | None = None
    if judged is not None:
        source = pipeline_out if pipeline_out is not None else events_source
        assert source is not None  # pause_request: a judged phase has a source
        report, figures, marker = judge_pause(
            report,
            judged,
            pause_budget,
            source=source,
            bootstrap=bootstrap,
            conf=conf,
            markers_topic=markers_topic,
            spec=spec,
            phase=phase,
            strict=strict,
            on_progress=term.progress,
        )
    if output == "json":
        shown = VerifyOutput.model_construct(
            **dict(report), pause=figures, pause_budget_ms=pause_budget if figures else None, marker=marker
        )
        term.emit_json(shown)
    else:
        render_report(term, report)
        if marker is not None:
            said = Text(f"marker written to {markers_topic}: {marker.begins} begins now", style="dim")
            term.out.print(fold(said, fit_width(term.out), indent=2), highlight=False)
    if report.failed(strict):
        raise GateFailed(
            f"The gate on group {group} did not pass: {report.summary()}.",
            hint=_hint(report, strict, waited=timeout if wait else None),
        )


def pause_request(
    group: str,
    plan: Plan | None,
    spec: MigrationSpec | None,
    phase: int | None,
    *,
    max_pause_ms: int | None,
    source: Path | str | None,
    both: bool,
    since_ms: int | None,
) -> tuple[int | None, Judged | None]:
    """(budget, what to judge) from the flags, or one sentence (exit 2) before any cluster call. A
    source without a budget is fine at phase 0 (the gate only writes the marker that starts phase 1)."""
    if both:
        raise InvalidInput("Give --pipeline-out or --events, not both.")
    if isinstance(source, str):
        topic_of(source)  # the pipeline's own sentence for what is not kafka://EVENTS_TOPIC
    if source is None:
        if max_pause_ms is not None or since_ms is not None:
            raise InvalidInput(
                "--max-pause-ms and --since need the pause figures: give --pipeline-out DIR (the live "
                "pipeline's output) or --events kafka://TOPIC.",
            )
        return None, None
    budget = max_pause_ms
    if budget is None and plan is not None and phase is not None and phase >= 1:
        budget = next((p.pause_budget_ms for p in plan.phases if p.n == phase), None)
    spans = since_ms is not None or (spec is not None and phase is not None and phase >= 1)
    judged = Judged(group, spec.name if spec else None, phase, since_ms)
    if budget is None:
        if spans and plan is not None:
            raise InvalidInput(
                f"The plan states no pause budget for phase {phase}: there is nothing to judge the "
                "pause against.",
                hint="Make the plan with --pause-budget-ms N, or give --max-pause-ms N.",
            )
        if spans or spec is None or phase is None:
            raise InvalidInput(
                "--pipeline-out and --events give the pause figures, but no budget judges them.",
                hint="Give --max-pause-ms N (or --plan with a plan made with --pause-budget-ms N).",
            )
        return None, judged  # phase 0: only the marker
    if not spans:
        raise InvalidInput(
            "--max-pause-ms judges a phase, and there is none: give --plan or --migration with --phase N "
            "(N >= 1; it began at the marker the gate after phase N-1 wrote), or --since TIME.",
        )
    return budget, judged


def _hint(report: GateReport, strict: bool, waited: float | None = None) -> str:
    """The failing checks' own hints, or the way to wait for them: --wait, or, when this run already
    waited (`waited`: its --timeout), a longer --timeout."""
    failing = [c for c in report.checks if c.status == "fail" or (strict and c.status == "warn")]
    hints = list(dict.fromkeys(c.hint for c in failing if c.hint))
    if waited is None:
        return " ".join(hints) or "Fix what the failing checks name, or re-run with --wait."
    kept = [h for h in hints if "--wait" not in h]  # "--wait re-checks": this run did
    still = f"Still so after waiting {waited:g} s: raise --timeout, or fix what the failing checks name."
    return " ".join([*kept, still] if len(kept) < len(hints) or not kept else kept)

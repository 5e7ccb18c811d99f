"""`kafka-coop verify-group`: the preflight gate a deploy pipeline runs before and between bounces."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click
from rich.text import Text

from kafka_coop.analytics import MARKERS_TOPIC, PauseFigures, PhaseMarker, pause_check
from kafka_coop.coordinator import CoordinatorClient, open_client
from kafka_coop.errors import GateFailed, InvalidInput
from kafka_coop.inspection import (
    LAG_RANK,
    GroupLagStatus,
    GroupSnapshot,
    snapshot_with_lag_trend,
    take_snapshot,
)
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC
from kafka_coop.rollout import (
    PLAN_HINT,
    GateReport,
    MigrationSpec,
    Plan,
    evaluate,
    load_migration,
    load_plan,
    migration_names,
    worst,
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
from ._tables import aligned_table
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
    term.out.print(aligned_table(("check", "status", "reason [members]"), rows, title=_title(report)))
    if report.lag is not None and report.lag.partitions:
        term.out.print(_lag_table(report.lag))
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


def _lag_table(lag: GroupLagStatus) -> Text:
    """Per partition, worst first: Burrow's status, the window and the evidence."""
    ranked = sorted(lag.partitions, key=lambda p: (-LAG_RANK[p.status], -p.lag_last, p.topic, p.partition))
    shown = ranked[:LAG_ROWS]
    title = f"lag-status {lag.status} (Burrow's rules over {lag.window_s:g} s, the group takes its worst)"
    if len(ranked) > len(shown):
        title += f"; {len(ranked) - len(shown)} more partitions in -o json"
    rows: list[list[Text | str]] = [
        [
            f"{p.topic}-{p.partition}",
            Text(p.status, style=LAG_STYLE[p.status]),
            f"{p.committed_first} -> {p.committed_last}",
            f"{p.lag_first} -> {p.lag_last}",
            {True: "yes", False: "no", None: "?"}[p.owned],
            f"{p.window_s:g} s / {p.samples}",
            p.evidence,
        ]
        for p in shown
    ]
    columns = ("partition", "status", "committed", "lag", "owned", "window", "evidence")
    return aligned_table(columns, rows, title=title)


def _title(report: GateReport) -> str:
    target = report.target
    where = f" against {target.migration} phase {target.phase}" if target.migration else ""
    return f"verify-group {report.group}{where}"


# The confirming look of verify-group: longer than KIP-1263's default assignment interval (1 s), so a
# group epoch bumped just before the first look shows its new target assignment in the second.
CONFIRM_LOOK_S = 1.2
# A classic group's rebalance shows in its state and generation: a short pause between the looks will do.
CONFIRM_CLASSIC_S = 0.3


def _unconfirmed(report: GateReport) -> bool:
    """Every check passed but the one that asks a second look to confirm the first."""
    looks = [c for c in report.checks if c.name == "consistent-looks"]
    others = [c for c in report.checks if c.name != "consistent-looks"]
    return (
        bool(looks)
        and looks[0].status == "fail"
        and looks[0].reason.startswith("one consistent look only")
        and not any(c.status == "fail" for c in others)
    )


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
        from kafka_coop.analytics import check_pipeline_out

        check_pipeline_out(pipeline_out)
    admin, conf = admin_for(bootstrap, command_config)
    deadline = time.monotonic() + timeout
    # The first look opens its own coordinator connection, alongside its other reads: an unreachable
    # cluster is told within --timeout, not after a connection's wait and then the look's. Only a
    # --wait loop keeps one open for the looks after it.
    coordinator: CoordinatorClient | None = None

    def budget() -> float:
        """Every read of a look retries a moving coordinator, but never past --timeout."""
        return max(1.0, deadline - time.monotonic())

    def look() -> GroupSnapshot:
        return take_snapshot(
            admin,
            group,
            conf=conf,
            manifests_topic=manifests_topic or None,
            timeout_s=budget(),
            coordinator=coordinator,
        )

    try:
        previous: GroupSnapshot | None = None
        history: list[GroupSnapshot] = []  # every look of this run: the lag window grows with --wait
        attempt = 0
        while True:
            attempt += 1
            if attempt == 1 and (lag_window is None or lag_window > 0):
                # The first lag sample goes out with the look's other reads, the second is read after all
                # of them answered (and at least --lag-window seconds later when given): the window is
                # measured, and the check's reason states it.
                previous, snap = snapshot_with_lag_trend(
                    admin,
                    group,
                    min_window_s=lag_window or 0.0,
                    conf=conf,
                    manifests_topic=manifests_topic or None,
                    timeout_s=budget(),
                    coordinator=coordinator,
                )
            else:
                snap = look()  # later rounds compare with the previous round, --interval apart
            history += [s for s in (previous, snap) if s is not None and s not in history]
            report = evaluate(
                snap,
                spec=spec,
                phase=phase,
                expect_members=expect_members,
                previous=previous,
                history=history[:-1],
                two_looks=True,
            )
            pause = CONFIRM_LOOK_S if snap.coordinator_view.group_epoch is not None else CONFIRM_CLASSIC_S
            if _unconfirmed(report) and time.monotonic() + pause < deadline:
                # everything else passed on one look: a second, `pause` later, must find the group
                # where the first did (rollout/_looks.py)
                time.sleep(pause)
                snap = look()  # `previous` stays: the lag trend keeps the window the first look measured
                history.append(snap)
                report = evaluate(
                    snap,
                    spec=spec,
                    phase=phase,
                    expect_members=expect_members,
                    previous=previous,
                    history=history[:-1],
                    two_looks=True,
                )
            if not wait or not report.failed(strict) or time.monotonic() + interval > deadline:
                break
            if coordinator is None:
                coordinator = open_client(bootstrap, conf, timeout_s=min(budget(), 10.0))
            left = deadline - time.monotonic()
            term.progress(
                f"[{attempt}] gate {report.status}: {report.summary()} — re-checking, {left:.0f} s left"
            )
            previous = snap
            time.sleep(interval)
    finally:
        if coordinator is not None:
            coordinator.close()
    expect_empty = spec is not None and phase is not None and spec.expect_at(phase).empty
    if not snap.exists and not expect_empty:
        if wait:  # a deploy's first gate runs before its members have created the group: a verdict
            raise GateFailed(
                f"Group {group!r} did not appear on {bootstrap} within the {timeout:g} s wait.",
                hint=f"Check that the members started and the name is right: {LIST_GROUPS}",
            )
        raise missing_group(group, bootstrap)
    figures: PauseFigures | None = None
    if judged is not None and pause_budget is not None:
        from kafka_coop.analytics import from_events, from_pipeline

        term.progress(f"Measuring the pause of group {group} …")
        if pipeline_out is not None:
            figures = from_pipeline(pipeline_out, judged)
        else:
            assert events_source is not None  # pause_request: a judged phase has a source
            figures = from_events(
                events_source, judged, bootstrap=bootstrap, conf=conf, markers_topic=markers_topic
            )
        check = pause_check(figures, pause_budget)
        checks = (*report.checks, check)
        report = report.model_copy(update={"checks": checks, "status": worst(c.status for c in checks)})
    marker: PhaseMarker | None = None
    if judged is not None and spec is not None and phase is not None and not report.failed(strict):
        from kafka_coop.analytics import now_ms, write_marker

        marker = PhaseMarker(
            ts_ms=now_ms(), group=group, migration=spec.name, phase=phase, phases=len(spec.phases)
        )
        write_marker(bootstrap, marker, markers_topic, conf)
    if output == "json":
        shown = VerifyOutput.model_construct(
            **dict(report), pause=figures, pause_budget_ms=pause_budget if figures else None, marker=marker
        )
        term.emit_json(shown)
    else:
        render_report(term, report)
        if marker is not None:
            term.out.print(
                Text(f"marker written to {markers_topic}: {marker.begins} begins now", style="dim"),
                highlight=False,
            )
    if report.failed(strict):
        raise GateFailed(
            f"The gate on group {group} did not pass: {report.summary()}.",
            hint=_hint(report, strict),
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
    from kafka_coop.analytics import Judged

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


def _hint(report: GateReport, strict: bool) -> str:
    """The failing checks' own hints, or the way to wait for them."""
    failing = [c for c in report.checks if c.status == "fail" or (strict and c.status == "warn")]
    hints = list(dict.fromkeys(c.hint for c in failing if c.hint))
    return " ".join(hints) or "Fix what the failing checks name, or re-run with --wait."

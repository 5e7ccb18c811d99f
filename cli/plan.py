"""`kafka-coop upgrade-plan` / `downgrade-plan`: a phased, gated plan for a live group or a fleet file."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.text import Text

from kafka_coop.errors import GateFailed, InvalidInput
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC
from kafka_coop.rollout import (
    TARGETS,
    Direction,
    FleetDescription,
    GateCommand,
    MigrationSpec,
    Plan,
    PlanPhase,
    Target,
    all_migrations,
    config_lines,
    fleet_from_snapshot,
    load_fleet,
    load_migration,
    make_plan,
)

from ._context import (
    Terminal,
    admin_for,
    bootstrap_option,
    command_config_option,
    missing_group,
    output_option,
    pass_terminal,
)
from ._tables import fit_width, fold, fold_command, heading, plural
from .pipeline import topic_of

STATUS_STYLE = {"ready": "green", "in-progress": "cyan", "done": "green", "blocked": "bold red"}
PHASE_STYLE = {"done": "dim", "in-progress": "cyan", "todo": ""}


def _fleet(
    term: Terminal,
    group: str | None,
    bootstrap: str | None,
    command_config: Path | None,
    fleet_file: Path | None,
    manifests_topic: str,
    timeout: float,
) -> FleetDescription:
    if fleet_file is not None:
        fleet = load_fleet(fleet_file)
        if group is not None and group != fleet.group:
            raise InvalidInput(
                f"GROUP {group!r} differs from the fleet file's group {fleet.group!r}.",
                hint="Leave GROUP out with --fleet, or make them agree.",
            )
        return fleet
    if group is None or bootstrap is None:
        raise InvalidInput(
            "Give GROUP and --bootstrap-server (a live group), or --fleet FILE (offline).",
            hint="e.g. `kafka-coop upgrade-plan orders --to cooperative --bootstrap-server localhost:9092`.",
        )
    from kafka_coop.inspection import take_snapshot  # lazy: a --fleet plan loads no client (~0.2 s)

    admin, conf = admin_for(bootstrap, command_config)
    term.progress(f"Inspecting group {group} …")
    snap = take_snapshot(
        admin, group, conf=conf, manifests_topic=manifests_topic or None, with_lag=False, timeout_s=timeout
    )
    if not snap.exists:
        raise missing_group(group, bootstrap)
    return fleet_from_snapshot(snap)


def _migrations(forced: str | None) -> list[tuple[str, MigrationSpec]]:
    if forced is not None:
        return [(forced, load_migration(forced))]
    return [(spec.name, spec) for spec in all_migrations()]


def render_table(term: Terminal, plan: Plan) -> None:
    """Phase by phase, commands on lines of their own so they can be copied whole; on a terminal every
    line fits its width (prose wraps, a command continues with a backslash)."""
    out = term.out
    width = fit_width(out)

    def say(text: Text | str, indent: int = 2) -> None:
        out.print(fold(text, width, indent=indent), highlight=False)

    def command(line: str) -> None:
        out.print(Text(fold_command(line, width, indent=2), style="bold"), highlight=False)

    fleet = plan.fleet
    say(
        Text.assemble(
            (f"{plan.direction}-plan {plan.group} → {plan.to}: ", "bold"),
            (plan.status.upper(), STATUS_STYLE[plan.status]),
        )
    )
    say(
        f"fleet: {plural(fleet.members, 'member')} ({_counts(fleet.families)}), {fleet.group_type} group, "
        f"protocols {_counts(fleet.protocols)}, selected assignor {fleet.selected_assignor or '-'}, "
        f"{fleet.static} static, assignor lists declared by {fleet.lists_declared}; "
        f"detected: {plan.from_} (source: {fleet.source})"
    )
    if plan.migration:
        say(Text(f"path: {plan.title} ({plan.migration})", style="bold"))
        say(Text(plan.summary or "", style="dim"))
    for check in plan.preconditions:
        style = {"pass": "green", "not-judged": "dim", "warn": "yellow", "fail": "bold red"}[check.status]
        say(Text.assemble("precondition ", (check.status.upper(), style), f" {check.name}: {check.reason}"))
        if check.rule:
            say(Text(f"    broker rule: {check.rule}", style="dim"), 6)
        if check.hint and check.status != "pass":
            say(Text(f"    {check.hint}", style="yellow"), 6)
    for phase in plan.phases:
        out.print()
        title = f"Phase {phase.n}: {phase.title} [{phase.action}, {phase.status}]"
        say(heading(title, PHASE_STYLE[phase.status] or "bold"), 3)
        if phase.progress:
            say(Text(phase.progress, style="cyan"))
        out.print(Text("gate before it:", style="dim"))
        command(phase.gate)
        out.print(Text("config after it:", style="dim"))
        for line in config_lines(phase):
            say(f"  {line}", 4)
        if phase.alongside:
            say(Text("start together with the action (it waits for the members to close):", style="dim"))
            for line in phase.alongside:
                command(line)
        if phase.then:
            out.print(Text("right after the action:", style="dim"))
            for line in phase.then:
                command(line)
        say(Text.assemble(("pause: ", "dim"), phase_pause(phase)))
        if phase.pause_budget_ms is not None:
            say(Text.assemble(("pause budget: ", "dim"), f"p95 <= {phase.pause_budget_ms:,} ms"))
        say(Text.assemble(("rollback: ", "dim"), phase.rollback))
        for note in phase.notes:
            say(Text.assemble(("note: ", "dim"), note))
    if plan.final_gate:
        out.print()
        say(heading("After the last phase"), 3)
        command(plan.final_gate)
    if plan.warnings or plan.blockers or plan.alternatives:
        out.print()
    for warning in plan.warnings:
        say(Text.assemble(("warning: ", "yellow"), warning))
    for blocker in plan.blockers:
        say(Text.assemble(("BLOCKED ", "bold red"), f"{blocker.name}: {blocker.reason}"))
        if blocker.hint:
            say(Text.assemble(("  hint: ", "yellow"), blocker.hint), 4)
    for alt in plan.alternatives:
        say(Text.assemble(("alternative: ", "cyan"), f"{alt.migration}: {alt.why}"))
        command(alt.command)


def phase_pause(phase: PlanPhase) -> str:
    """The pause kind, then its note: `full-stop: all 3 members are down ...`."""
    return f"{phase.pause}: {phase.pause_note}"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {k}" for k, n in counts.items()) or "-"


def render_markdown(plan: Plan) -> str:
    """For a change ticket: plain GitHub-flavoured markdown, commands in code blocks."""
    fleet = plan.fleet
    out = [
        f"## {plan.direction.capitalize()} plan: `{plan.group}` → {plan.to} ({plan.status})",
        "",
        f"- Fleet: {plural(fleet.members, 'member')} ({_counts(fleet.families)}); {fleet.group_type} group; "
        f"protocols {_counts(fleet.protocols)}; selected assignor `{fleet.selected_assignor or '-'}`; "
        f"{fleet.static} static; detected state **{plan.from_}** (source: {fleet.source})",
    ]
    if plan.migration:
        out += [f"- Path: **{plan.title}** (`{plan.migration}`)", "", plan.summary or ""]
    if plan.preconditions:
        out += ["", "### Preconditions", ""]
        out += [
            f"- {c.status.upper()} `{c.name}`: {c.reason}"
            + (f" (rule: {c.rule})" if c.rule else "")
            + (f" — {c.hint}" if c.hint and c.status != "pass" else "")
            for c in plan.preconditions
        ]
    for phase in plan.phases:
        out += [
            "",
            f"### Phase {phase.n}: {phase.title} ({phase.action}, {phase.status})",
            "",
            "Gate before it:",
            "",
            "```sh",
            phase.gate,
            "```",
            "",
        ]
        out += [f"- {line}" for line in config_lines(phase)]
        if phase.alongside:
            out += ["", "Start together with the action (it waits for the members to close):", ""]
            out += ["```sh", *phase.alongside, "```", ""]
        if phase.then:
            out += ["", "Right after the action:", "", "```sh", *phase.then, "```", ""]
        out += [f"- Pause ({phase.pause}): {phase.pause_note}"]
        if phase.pause_budget_ms is not None:
            out += [f"- Pause budget: p95 <= {phase.pause_budget_ms:,} ms"]
        out += [f"- Rollback: {phase.rollback}"]
        out += [f"- Note: {note}" for note in phase.notes]
    if plan.final_gate:
        out += ["", "### After the last phase", "", "```sh", plan.final_gate, "```"]
    if plan.warnings:
        out += ["", "### Warnings", ""] + [f"- {w}" for w in plan.warnings]
    if plan.blockers:
        out += ["", "### Blockers", ""]
        out += [f"- **{b.name}**: {b.reason}" + (f" — {b.hint}" if b.hint else "") for b in plan.blockers]
    if plan.alternatives:
        out += ["", "### Alternatives", ""]
        out += [f"- `{a.migration}`: {a.why}\n\n  ```sh\n  {a.command}\n  ```" for a in plan.alternatives]
    return "\n".join(out) + "\n"


def _plan_command(direction: Direction) -> click.Command:
    verb = f"{direction}-plan"
    targets = TARGETS[direction]

    @click.command(verb)
    @click.argument("group", required=False)
    @click.option("--to", "to", type=click.Choice(targets), required=True, help="The protocol to end on.")
    @bootstrap_option(required=False, help="Inspect the live group here (env KAFKA_BOOTSTRAP_SERVERS).")
    @command_config_option()
    @click.option(
        "--fleet",
        "fleet_file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Plan offline from a fleet description (YAML/JSON) instead of a live group.",
    )
    @click.option(
        "--migration",
        "forced",
        help="Use this migration (name or YAML file) instead of choosing one; blocked if it does not fit.",
    )
    @click.option(
        "--manifests-topic", default=DEFAULT_MANIFEST_TOPIC, show_default=True, help="'' to read none."
    )
    @click.option("--timeout", type=click.FloatRange(min=1), default=15.0, show_default=True, help="Seconds.")
    @click.option(
        "--restart-time",
        "restart_s",
        type=click.FloatRange(min=0),
        help="Seconds one member's restart takes: held against the broker's session under KIP-848 (static "
        "members keep their partitions only when back within it); the plan prints the command that raises "
        "the group's session when needed.",
    )
    @click.option(
        "--pause-budget-ms",
        type=click.IntRange(min=0),
        default=None,
        help="The most a member pause may take in each phase (p95, ms): written in the plan as each "
        "phase's pause_budget_ms; `verify-group --plan --phase N --events|--pipeline-out` fails the phase "
        "above it.",
    )
    @click.option(
        "--pause-figures",
        default=None,
        metavar="kafka://TOPIC|DIR",
        help="Where the printed gates read the members' pauses: the events topic, or the live pipeline's "
        "output directory; they then judge each phase against --pause-budget-ms (needed with it).",
    )
    @click.option(
        "--gate-timeout",
        type=click.IntRange(min=1),
        default=300,
        show_default=True,
        help="--timeout in the printed gate commands.",
    )
    @output_option(("table", "json", "markdown"))
    @pass_terminal
    def command(
        term: Terminal,
        group: str | None,
        to: str,
        bootstrap: str | None,
        command_config: Path | None,
        fleet_file: Path | None,
        forced: str | None,
        manifests_topic: str,
        timeout: float,
        restart_s: float | None,
        pause_budget_ms: int | None,
        pause_figures: str | None,
        gate_timeout: int,
        output: str,
    ) -> None:
        migrations = _migrations(forced)  # a bad --migration fails before any cluster call
        if pause_figures is not None:
            if pause_budget_ms is None:
                raise InvalidInput(
                    "--pause-figures says where the gates read the pauses, but no --pause-budget-ms judges "
                    "them.",
                    hint="Give --pause-budget-ms N too.",
                )
            if pause_figures.startswith("kafka://"):
                topic_of(pause_figures)  # kafka:// with no topic is one sentence
        fleet = _fleet(term, group, bootstrap, command_config, fleet_file, manifests_topic, timeout)
        gate = GateCommand(
            bootstrap=bootstrap if fleet_file is None else None,
            command_config=str(command_config) if command_config else None,
            timeout_s=gate_timeout,
            pause_figures=pause_figures,
            pause_budget_ms=pause_budget_ms,
        )
        target: Target = to  # type: ignore[assignment]  # click.Choice narrowed it
        plan = make_plan(
            fleet,
            direction,
            target,
            migrations,
            gate=gate,
            forced=forced is not None,
            restart_s=restart_s,
            pause_budget_ms=pause_budget_ms,
        )
        if output == "json":
            click.echo(json.dumps(plan.model_dump(mode="json", by_alias=True), indent=2))
        elif output == "markdown":
            click.echo(render_markdown(plan), nl=False)
        else:
            render_table(term, plan)
        if plan.blocked:
            first = plan.blockers[0]
            more = f" (and {len(plan.blockers) - 1} more)" if len(plan.blockers) > 1 else ""
            raise GateFailed(
                f"The {direction} of {plan.group} to {plan.to} is blocked: "
                f"{first.name}: {first.reason}{more}.",
                hint=first.hint or "The plan lists every blocker and the alternatives.",
            )

    command.help = (
        f"Plan the {direction} of GROUP to --to {'|'.join(targets)}: phases, config per client family, "
        "the gate before each phase, pauses and rollbacks. Exit 0 with a plan, 1 when blocked."
    )
    return command


upgrade_plan = _plan_command("upgrade")
downgrade_plan = _plan_command("downgrade")

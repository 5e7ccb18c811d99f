"""`kafka-coop rollout run` / `rollout resume`: a plan executed, step by step, each behind its gate.

Thin: the walk, the journal and the appliers are the library's (kafka_coop/rollout: `_walk`,
`_journal`, `_run`); this module reads the flags, makes or reads the plan, shows the progress (a live
view on a terminal, a line per event otherwise, JSON lines with -o json) and turns the first Ctrl-C
into a stop between two steps. docs/rollout-run.md is the guide.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import click
from rich.live import Live
from rich.text import Text

from kafka_coop.errors import InvalidInput
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC
from kafka_coop.rollout import (
    TARGETS,
    Direction,
    GateCommand,
    PauseTally,
    Plan,
    Progress,
    Target,
    all_migrations,
    default_journal,
    load_plan,
    make_plan,
    read_journal,
    unowned_now,
)

from ._context import (
    Terminal,
    admin_for,
    bootstrap_option,
    command_config_option,
    output_option,
    pass_terminal,
)
from ._exit_codes import Signalled
from .plan import _fleet

if TYPE_CHECKING:
    from kafka_coop.inspection import GroupSnapshot

ALL_TARGETS: tuple[str, ...] = (*TARGETS["upgrade"], *TARGETS["downgrade"])
HOOK_HELP = (
    "The command that restarts one member that does not run kafka-coop, run by the shell once per member "
    "(all at once for a cutover); {member} (group.instance.id, else client.id), {instance_id}, {phase} "
    "and {settings} (the phase's settings as one JSON object, a removed key null) are filled in, "
    "shell-quoted. It should return once the member runs on the new settings; a non-zero exit stops the "
    "walk. Settings never carry credentials."
)
JOURNAL_HELP = "The walk's journal (JSON lines); default .kafka-coop/rollout-GROUP.jsonl in this directory."


def _direction(to: str) -> Direction:
    return "upgrade" if to in TARGETS["upgrade"] else "downgrade"


def _live_plan(
    term: Terminal, group: str, to: str, bootstrap: str, command_config: Path | None, manifests_topic: str
) -> Plan:
    """The plan `upgrade-plan GROUP --to TO` prints for the live group now."""
    fleet = _fleet(term, group, bootstrap, command_config, None, manifests_topic, 15.0)
    gate = GateCommand(bootstrap=bootstrap, command_config=str(command_config) if command_config else None)
    target: Target = to  # type: ignore[assignment]  # click.Choice narrowed it
    return make_plan(fleet, _direction(to), target, [(s.name, s) for s in all_migrations()], gate=gate)


class StopBetweenSteps:
    """The first Ctrl-C (SIGINT, SIGTERM, SIGHUP) asks the walk to stop after the step in hand; the
    second interrupts at once (the journal then shows the step begun: resume re-checks it)."""

    def __init__(self, term: Terminal) -> None:
        self.term = term
        self.asked = False

    def __call__(self) -> bool:
        return self.asked

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        def handle(signum: int, _frame: FrameType | None) -> None:
            if self.asked:
                raise Signalled(signum)
            self.asked = True
            with contextlib.suppress(OSError):
                sys.stderr.write("Stopping after the step in hand (once more to stop at once)…\n")
                sys.stderr.flush()

        signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        before = {s: signal.getsignal(s) for s in signals}
        for s in signals:
            signal.signal(s, handle)
        try:
            yield
        finally:
            for s, old in before.items():
                signal.signal(s, old)


class View:
    """What a person sees: a line per step event (a live panel on a terminal), the group as last seen."""

    def __init__(self, term: Terminal, output: str) -> None:
        self.term = term
        self.json = output == "json"
        self.snap: GroupSnapshot | None = None
        self.last: Progress | None = None
        self.live: Any = None
        self.pause = PauseTally()

    def look(self, snap: GroupSnapshot) -> None:
        """Every look of the runner's and of its gates' (while they wait): the group, and the pause."""
        self.snap = snap
        self.pause = self.pause.look(snap)
        self._refresh()

    def progress(self, record: Progress) -> None:
        self.last = record
        if self.json:
            click.echo(record.model_dump_json())
            return
        if self.live is None:
            self.term.out.print(self._line(record), highlight=False)
        self._refresh()

    def _group(self) -> str:
        snap = self.snap
        if snap is None:
            return "group: not seen yet"
        unowned = unowned_now(snap)
        return (
            f"group {snap.state}, {len(snap.members)} members, assignor {snap.selected_assignor or '-'}, "
            f"unowned now {len(unowned)}"
        )

    def _line(self, r: Progress) -> Text:
        style = {"gate-failed": "bold red", "apply-failed": "bold red", "gate-passed": "green"}.get(
            r.event, ""
        )
        members = ", ".join(r.members) or "-"
        took = f" {r.seconds:.1f} s" if r.seconds is not None else ""
        detail = f": {r.gate or r.reason}" if (r.gate or r.reason) and r.event != "started" else ""
        return Text.assemble(
            (f"[{r.mode} step {r.step}/{r.steps} phase {r.phase}] ", "dim"),
            (r.event, style),
            f" {members}{took}{detail}  ",
            (f"{self._group()}, pause so far {self.pause.wall_ms / 1000:.1f} s", "dim"),
        )

    def _panel(self) -> Text:
        r = self.last
        head = (
            f"{r.mode} step {r.step}/{r.steps}, phase {r.phase}: {r.event} {', '.join(r.members)}"
            if r is not None
            else "starting"
        )
        took = f" ({r.seconds:.1f} s in this step)" if r is not None and r.seconds is not None else ""
        return Text.assemble((head, "bold"), took, "\n", self._group(), "\n", self._pause())

    def _pause(self) -> str:
        p = self.pause
        return (
            f"pause so far {p.wall_ms / 1000:.1f} s with a partition unowned "
            f"({p.partition_ms / 1000:.1f} partition-s), as the looks saw it"
        )

    def _refresh(self) -> None:
        if self.live is not None:
            self.live.update(self._panel())

    @contextlib.contextmanager
    def shown(self) -> Iterator[None]:
        if self.json or not self.term.out.is_terminal:
            yield
            return
        with Live(self._panel(), console=self.term.out, refresh_per_second=4, transient=False) as live:
            self.live = live
            try:
                yield
            finally:
                self.live = None


@dataclasses.dataclass(frozen=True)
class _Options:
    """The options `run` and `resume` share (`_common`), as one value."""

    bootstrap: str
    command_config: Path | None
    hook: str | None
    journal: Path | None
    plan_file: Path | None
    gate_timeout: float
    apply_timeout: float
    manifests_topic: str
    unprotected_control: bool
    output: str


class _Walking:
    """What `run` and `resume` share: Ctrl-C between steps, the live view, and the runner reporting to
    both; `shown()` installs the first and shows the second around the walk."""

    def __init__(self, term: Terminal, group: str, options: _Options) -> None:
        from kafka_coop.rollout import Runner  # loads the clients: not at `rollout --help`

        self.stop = StopBetweenSteps(term)
        self.view = View(term, options.output)
        admin, conf = admin_for(options.bootstrap, options.command_config)
        self.runner = Runner(
            admin,
            group,
            conf=conf,
            hook=options.hook,
            command_config=options.command_config,
            gate_timeout_s=options.gate_timeout,
            apply_timeout_s=options.apply_timeout,
            manifests_topic=options.manifests_topic or None,
            stop_requested=self.stop,
            on_look=self.view.look,
            unprotected_control=options.unprotected_control,
        )

    @contextlib.contextmanager
    def shown(self) -> Iterator[None]:
        with self.stop.installed(), self.view.shown():
            yield


def _common(f: Any) -> Any:
    """The shared options, handed to the command as one `options: _Options`."""

    @functools.wraps(f)
    def packed(*args: Any, **kwargs: Any) -> Any:
        options = _Options(**{name: kwargs.pop(name) for name in _OPTION_NAMES})
        return f(*args, options=options, **kwargs)

    for option in reversed(
        [
            bootstrap_option(),
            command_config_option(),
            click.option("--restart", "hook", default=None, metavar="CMD", help=HOOK_HELP),
            click.option(
                "--journal",
                type=click.Path(dir_okay=False, path_type=Path),
                default=None,
                help=JOURNAL_HELP,
            ),
            click.option(
                "--plan",
                "plan_file",
                type=click.Path(dir_okay=False, path_type=Path),
                default=None,
                help="The plan to walk (upgrade-plan/downgrade-plan -o json); default: planned from the live "
                "group now, and kept beside the journal (JOURNAL.plan.json).",
            ),
            click.option(
                "--gate-timeout",
                type=click.FloatRange(min=1),
                default=300.0,
                show_default=True,
                help="Seconds each step's gate may wait for the group.",
            ),
            click.option(
                "--apply-timeout",
                type=click.FloatRange(min=1),
                default=300.0,
                show_default=True,
                help="Seconds a restart hook or a live member may take to apply a step.",
            ),
            click.option(
                "--manifests-topic",
                default=DEFAULT_MANIFEST_TOPIC,
                show_default=True,
                help="'' to read none.",
            ),
            click.option(
                "--unprotected-control",
                is_flag=True,
                help="Walk kafka-coop members through a control topic that others than this principal may "
                "write, or on a cluster without an authorizer: for a sandbox or a dev cluster only.",
            ),
            output_option(("table", "json")),
        ]
    ):
        packed = option(packed)
    return packed


_OPTION_NAMES = tuple(f.name for f in dataclasses.fields(_Options))


def _kept_plan(journal: Path) -> Path:
    return journal.with_name(journal.name + ".plan.json")


@click.group("rollout")
def rollout() -> None:
    """Execute a plan: phase by phase, member by member, each step behind its gate, journalled."""


@rollout.command("run")
@click.argument("group")
@click.option("--to", "to", type=click.Choice(ALL_TARGETS), required=True, help="The protocol to end on.")
@click.option(
    "--rollback",
    is_flag=True,
    help="Walk back from the point the journal's walk reached: each change undone, newest first.",
)
@_common
@pass_terminal
def run(term: Terminal, group: str, to: str, rollback: bool, options: _Options) -> None:
    """Walk GROUP's plan to --to: apply each phase's settings to one member (all, for a cutover), wait for
    the gate, go on. Exit 0 done, 1 a gate or an apply failed (the walk stops there), 2 bad input, 3 the
    cluster, 130 stopped by Ctrl-C between steps; `rollout resume` continues."""
    from kafka_coop.rollout import start_walk  # loads the clients: not at `rollout --help`

    journal, plan_file, output = options.journal or default_journal(group), options.plan_file, options.output
    kept = _kept_plan(journal)
    if plan_file is None and (rollback or journal.exists()) and kept.exists():
        plan_file = kept
    elif plan_file is None and rollback and journal.exists():
        # a walk of a --plan FILE is rolled back on that plan (its journal names it)
        header = next((e for e in read_journal(journal) if e.kind == "walk"), None)
        plan_file = Path(header.plan_file) if header is not None and header.plan_file else None
    if rollback and not journal.exists():
        raise InvalidInput(
            f"Journal {str(journal)!r} does not exist: there is no walk to roll back.",
            hint="Give the --journal of the walk to roll back.",
        )
    plan = load_plan(plan_file) if plan_file is not None else None
    if plan is not None and plan.to != to:
        raise InvalidInput(
            f"The plan goes to {plan.to}, not to --to {to}.", hint="Give the --to the plan was written for."
        )
    walking = _Walking(term, group, options)
    if plan is None:
        plan = _live_plan(term, group, to, options.bootstrap, options.command_config, options.manifests_topic)
        if not journal.exists():
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.write_text(json.dumps(plan.model_dump(mode="json", by_alias=True), indent=2) + "\n")
            plan_file = kept
    if not term.out.is_terminal and output != "json":
        term.progress(f"Journal: {journal}")
    with walking.shown():
        walk, taken = start_walk(
            walking.runner,
            plan,
            journal,
            plan_file=str(plan_file) if plan_file else None,
            hook=options.hook,
            rollback=rollback,
            on_progress=walking.view.progress,
        )
    if output != "json":
        term.out.print(
            f"{'Rolled back' if rollback else 'Walked'} {group}: {taken} of {len(walk.steps)} steps taken; "
            f"journal {journal}.",
            highlight=False,
        )


@rollout.command("resume")
@click.argument("group")
@_common
@pass_terminal
def resume(term: Terminal, group: str, options: _Options) -> None:
    """Continue GROUP's walk from its journal: a finished step is not taken again, a begun one is re-checked
    by its gate before it is redone. Exit codes as `rollout run`."""
    from kafka_coop.rollout import resume_walk  # loads the clients: not at `rollout --help`

    journal, plan_file = options.journal or default_journal(group), options.plan_file
    entries = read_journal(journal)
    header = next((e for e in entries if e.kind == "walk"), None)
    if plan_file is None:
        if header is None or header.plan_file is None:
            raise InvalidInput(
                f"Journal {str(journal)!r} names no plan file.", hint="Give the plan with --plan FILE."
            )
        plan_file = Path(header.plan_file)
    plan = load_plan(plan_file)
    walking = _Walking(term, group, options)
    with walking.shown():
        walk, taken = resume_walk(
            walking.runner, plan, journal, entries, hook=options.hook, on_progress=walking.view.progress
        )
    if options.output != "json":
        term.out.print(
            f"Resumed {group}: {taken} more of {len(walk.steps)} steps; journal {journal}.", highlight=False
        )

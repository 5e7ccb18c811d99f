"""The rollout journal: one JSON line per step event, appended and fsync'd before the walk goes on.

A file, not a topic: it is where the operator runs the walk, it needs no ACL, and a crash can at worst
tear its last line, which the reader drops (that event never finished, so its step is re-checked).
Each line is versioned (`v`); the first line of a walk (`walk`) names the plan, the group and the mode,
so `rollout resume` refuses a journal of another plan or group before any step. A rollback appends its
own `walk` line to the same file and goes on from the point the forward walk reached.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from kafka_coop.errors import InvalidInput
from kafka_coop.rollout._walk import StepEvent, Walk, WalkMode

JOURNAL_VERSION = 1
DEFAULT_JOURNAL_DIR = ".kafka-coop"


def default_journal(group: str) -> Path:
    """`.kafka-coop/rollout-GROUP.jsonl` in the working directory (stated in --help)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in group)
    return Path(DEFAULT_JOURNAL_DIR) / f"rollout-{safe}.jsonl"


class JournalEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    v: Literal[1] = 1
    kind: Literal["walk", "step", "stopped", "done"]
    plan_id: str
    group: str
    mode: WalkMode
    at_ms: int
    step: int = 0
    event: StepEvent | None = None
    members: tuple[str, ...] = ()
    detail: str | None = None
    # the `walk` line: the plan file the walk reads (resume reads it again) and its target
    plan_file: str | None = None
    to: str | None = None
    steps: int | None = None
    reached: int | None = None  # rollback: the forward step it walks back from
    # the `walk` line's walk itself, every step: resume and rollback take the steps from here, not
    # from the group as it is now (a member restarting in that instant shows no family yet)
    walk: Walk | None = None


def read_journal(path: Path) -> list[JournalEntry]:
    """Every entry of the journal in order; a torn last line (a crash mid-append) is dropped, any other
    line that is not an entry is one sentence naming the line (exit 2)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise InvalidInput(
            f"Journal {str(path)!r} does not exist.",
            hint="Give the --journal the walk was started with (`rollout run` prints it).",
        ) from None
    *lines, last = text.split("\n")
    entries: list[JournalEntry] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entries.append(JournalEntry.model_validate_json(line))
        except ValidationError:
            raise InvalidInput(
                f"Journal {str(path)!r} line {number} is not a rollout journal entry of a version this "
                "kafka-coop reads.",
                hint="Give the journal `rollout run` wrote, unedited.",
            ) from None
    if last.strip():
        with contextlib.suppress(ValidationError):  # else torn by a crash mid-append: never finished
            entries.append(JournalEntry.model_validate_json(last))
    return entries


def walks_of(entries: Sequence[JournalEntry]) -> list[tuple[JournalEntry, list[JournalEntry]]]:
    """The journal cut into its walks: each `walk` line with the entries after it."""
    out: list[tuple[JournalEntry, list[JournalEntry]]] = []
    for entry in entries:
        if entry.kind == "walk":
            out.append((entry, []))
        elif out:
            out[-1][1].append(entry)
    return out


def step_events(entries: Sequence[JournalEntry]) -> list[tuple[int, StepEvent]]:
    return [(e.step, e.event) for e in entries if e.kind == "step" and e.event is not None]


def check_journal(entries: Sequence[JournalEntry], path: Path, *, group: str, plan_id: str) -> None:
    """A journal of another group or plan is refused before any step (exit 2)."""
    if not entries:
        return
    first = entries[0]
    if first.group != group:
        raise InvalidInput(
            f"Journal {str(path)!r} is the walk of group {first.group!r}, not of {group!r}.",
            hint="Give each group's walk its own --journal.",
        )
    if first.plan_id != plan_id:
        raise InvalidInput(
            f"Journal {str(path)!r} is the walk of another plan ({first.plan_id}, this one is {plan_id}).",
            hint="Resume with the plan file the walk began with, or start a new walk with another --journal.",
        )


class JournalFile:
    """Appends entries to a journal: each line in one write on an O_APPEND descriptor, then fsync,
    before the caller goes on (the directory is fsync'd once when the file is made)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        made = not path.exists()
        if not made:
            _drop_torn_tail(path)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if made:
            directory = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)

    def append(self, entry: JournalEntry) -> None:
        line = (
            json.dumps(entry.model_dump(mode="json", exclude_none=True), separators=(",", ":")) + "\n"
        ).encode()
        written = 0
        while written < len(line):
            written += os.write(self._fd, line[written:])
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


def _drop_torn_tail(path: Path) -> None:
    """A line a crash tore (no newline after it) is cut off before the next append goes after it."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        os.truncate(path, data.rfind(b"\n") + 1)


def walk_entry(
    walk: Walk, *, at_ms: int, plan_file: str | None, to: str | None, reached: int | None
) -> JournalEntry:
    return JournalEntry(
        kind="walk",
        plan_id=walk.plan_id,
        group=walk.group,
        mode=walk.mode,
        at_ms=at_ms,
        plan_file=plan_file,
        to=to,
        steps=len(walk.steps),
        reached=reached,
        walk=walk,
    )

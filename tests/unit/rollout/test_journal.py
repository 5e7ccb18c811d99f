"""The rollout journal file: versioned JSON lines, appended whole, a torn last line dropped, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_coop.errors import InvalidInput
from kafka_coop.rollout import JournalEntry, default_journal, read_journal
from kafka_coop.rollout._journal import JournalFile, check_journal, step_events, walks_of


def _step(n: int, event: str, group: str = "orders", plan: str = "p1") -> JournalEntry:
    return JournalEntry(kind="step", plan_id=plan, group=group, mode="forward", at_ms=n, step=n, event=event)  # type: ignore[arg-type]


def _walk(group: str = "orders", plan: str = "p1", mode: str = "forward") -> JournalEntry:
    return JournalEntry(kind="walk", plan_id=plan, group=group, mode=mode, at_ms=0, steps=3)  # type: ignore[arg-type]


def _write(path: Path, *entries: JournalEntry) -> None:
    journal = JournalFile(path)
    for entry in entries:
        journal.append(entry)
    journal.close()


def test_the_default_journal_is_per_group_in_the_working_directory() -> None:
    assert default_journal("orders/eu") == Path(".kafka-coop/rollout-orders_eu.jsonl")


def test_appended_entries_read_back_in_order_each_on_its_own_versioned_line(tmp_path: Path) -> None:
    path = tmp_path / "j" / "walk.jsonl"
    _write(path, _walk(), _step(1, "started"), _step(1, "applied"))
    lines = path.read_text().splitlines()
    assert len(lines) == 3 and all(line.startswith('{"v":1,') for line in lines)
    assert step_events(read_journal(path)) == [(1, "started"), (1, "applied")]


def test_a_line_torn_by_a_crash_is_dropped_and_cut_off_before_the_next_append(tmp_path: Path) -> None:
    path = tmp_path / "walk.jsonl"
    _write(path, _walk(), _step(1, "started"))
    with path.open("a") as f:
        f.write('{"v":1,"kind":"step","plan_id":"p1","gr')
    assert step_events(read_journal(path)) == [(1, "started")]
    _write(path, _step(1, "applied"))
    assert step_events(read_journal(path)) == [(1, "started"), (1, "applied")]


def test_a_line_that_is_no_entry_in_the_middle_is_one_sentence_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "walk.jsonl"
    path.write_text('{"v":1,"kind":"walk"}\n' + _step(1, "started").model_dump_json() + "\n")
    with pytest.raises(InvalidInput, match="line 1 is not a rollout journal entry"):
        read_journal(path)


def test_a_missing_journal_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="does not exist"):
        read_journal(tmp_path / "none.jsonl")


def test_a_journal_of_another_group_or_plan_is_refused(tmp_path: Path) -> None:
    entries = [_walk(group="payments", plan="p1")]
    with pytest.raises(InvalidInput, match="walk of group 'payments', not of 'orders'"):
        check_journal(entries, tmp_path, group="orders", plan_id="p1")
    with pytest.raises(InvalidInput, match="walk of another plan"):
        check_journal([_walk(plan="p0")], tmp_path, group="orders", plan_id="p1")


def test_a_rollback_is_a_walk_of_its_own_after_the_forward_one() -> None:
    entries = [_walk(), _step(1, "gate-passed"), _walk(mode="rollback"), _step(1, "started")]
    walks = walks_of(entries)
    assert [(w.mode, step_events(rest)) for w, rest in walks] == [
        ("forward", [(1, "gate-passed")]),
        ("rollback", [(1, "started")]),
    ]

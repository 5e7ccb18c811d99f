"""Output fits a terminal's width, and pipes and files get every row whole (issue: output that fits).

The renderers are given a Console over a fake tty of a fixed width, as a person's terminal is; the
real pseudo-terminal test is tests/integration/cli/test_fits_the_terminal.py.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from kafka_coop.cli._context import Terminal
from kafka_coop.cli._tables import aligned_table, fit_width, fold, fold_command
from kafka_coop.cli.describe import render_snapshot
from kafka_coop.cli.plan import render_table
from kafka_coop.cli.verify import render_report
from kafka_coop.inspection import GroupSnapshot, MemberSnapshot
from kafka_coop.rollout import Check, GateReport, GateTarget, all_migrations, load_fleet, make_plan
from tests.unit.builders import group_snapshot, member_snapshot

LONG_ID = "kafka-coop-vm-11050-6e02dbee-839c-4a4b-9b52-148e8c1be946"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _terminal(width: int | None) -> tuple[Terminal, io.StringIO]:
    """A Terminal printing to a tty `width` columns wide, or to a pipe (None)."""
    file = _Tty() if width is not None else io.StringIO()
    console = Console(
        file=file, width=width or 80, soft_wrap=True, markup=False, emoji=False, color_system=None
    )
    return Terminal(out=console), file


def _widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def test_a_table_that_fits_is_unchanged_by_the_width() -> None:
    rows = [["a", "b"]]
    assert aligned_table(("k", "v"), rows, width=80).plain == aligned_table(("k", "v"), rows).plain


def test_a_wide_last_column_wraps_under_itself() -> None:
    reason = "the group has 3 members on cooperative-sticky and one on range " * 3
    table = aligned_table(("check", "status", "reason"), [["members", "PASS", reason]], width=60).plain
    lines = table.splitlines()
    assert _widest(table) <= 60
    assert lines[2].startswith("members  PASS    the group")
    assert all(line.startswith(" " * 16) for line in lines[3:])
    assert " ".join(line[16:].strip() for line in lines[2:]) == reason.strip()


def test_a_row_too_wide_for_its_columns_becomes_a_record_of_named_cells() -> None:
    columns = ("member", "client id", "host", "assigned")
    rows = [[Text(LONG_ID, style="bold"), "kafka-coop-vm-11050", "127.0.0.1", "orders:0,1,2"]]
    table = aligned_table(columns, rows, width=60)
    lines = table.plain.splitlines()
    assert _widest(table.plain) <= 60
    assert lines[0] == LONG_ID
    assert "client id: kafka-coop-vm-11050" in table.plain and "assigned: orders:0,1,2" in table.plain
    assert any(span.style == "bold" for span in table.spans)


def test_a_word_longer_than_the_line_is_folded_only_then() -> None:
    folded = fold(Text("x " + "y" * 30), 10).plain.splitlines()
    assert folded == ["x", "yyyyyyyyyy", "yyyyyyyyyy", "yyyyyyyyyy"]


def test_a_long_command_is_continued_with_backslashes_so_it_still_pastes() -> None:
    command = "kafka-coop verify-group orders --migration eager-to-cooperative --phase 1 --wait --timeout 300"
    lines = fold_command(command, 40, indent=2).splitlines()
    assert all(len(line) <= 40 for line in lines)
    assert all(line.endswith(" \\") for line in lines[:-1])
    assert " ".join(line.rstrip(" \\").strip() for line in lines) == command


def test_a_pipe_gets_no_width_even_when_colour_is_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "80")
    assert fit_width(Console(file=io.StringIO())) is None
    assert fit_width(Console(file=_Tty(), width=80)) == 80


def _long_named_member(n: int) -> MemberSnapshot:
    return member_snapshot(
        f"{LONG_ID}-{n}",
        client_id="kafka-coop-vm-11050",
        host="/127.0.0.1",
        assignment=(("orders", n), ("orders", n + 3)),
    )


def _snapshot() -> GroupSnapshot:
    return group_snapshot(_long_named_member(0), _long_named_member(1), group="g1")


@pytest.mark.parametrize("width", [80, 120])
def test_describe_fits_the_terminal_and_keeps_every_member_and_partition(width: int) -> None:
    term, file = _terminal(width)
    render_snapshot(term, _snapshot())
    shown = file.getvalue()
    assert _widest(shown) <= width
    assert f"{LONG_ID}-0" in shown and f"{LONG_ID}-1" in shown
    assert "orders:0,3" in shown and "orders:1,4" in shown


def test_describe_into_a_pipe_keeps_one_line_per_member() -> None:
    term, file = _terminal(None)
    render_snapshot(term, _snapshot())
    rows = [line for line in file.getvalue().splitlines() if line.startswith(LONG_ID)]
    assert len(rows) == 2 and all("orders:" in row for row in rows)


def test_verify_group_fits_the_terminal_and_keeps_every_check_and_the_verdict() -> None:
    long_reason = "3 of 3 members run cooperative-sticky as their only assignor, as phase 2 expects " * 2
    report = GateReport(
        group="g1",
        target=GateTarget(),
        status="warn",
        taken_ms=0,
        checks=(
            Check(name="group-stable", status="pass", reason="Stable"),
            Check(name="assignor-lists", status="warn", reason=long_reason, members=(LONG_ID,)),
        ),
    )
    term, file = _terminal(80)
    render_report(term, report)
    shown = file.getvalue()
    assert _widest(shown) <= 80
    assert "group-stable" in shown and "assignor-lists" in shown and "gate WARN" in shown
    assert LONG_ID in shown


@pytest.mark.parametrize("width", [80, 120])
def test_a_plan_fits_the_terminal(tmp_path: Path, width: int) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "group: orders\n"
        'broker: {version: "4.1", migration_policy: bidirectional,'
        " rebalance_protocols: [classic, consumer]}\n"
        "members:\n  - {family: librdkafka, count: 2, assignors: [range]}\n"
    )
    plan = make_plan(
        load_fleet(fleet),
        "upgrade",
        "cooperative",
        [(spec.name, spec) for spec in all_migrations()],
    )
    term, file = _terminal(width)
    render_table(term, plan)
    shown = file.getvalue()
    assert _widest(shown) <= width
    assert plan.phases and "kafka-coop verify-group orders" in shown


def test_not_judged_is_spelled_one_way_in_the_gate_output() -> None:
    from kafka_coop.inspection import GroupLagStatus
    from kafka_coop.inspection._lag import PartitionLagStatus

    part = PartitionLagStatus(
        topic="orders",
        partition=0,
        status="NOT_JUDGED",
        window_s=2,
        samples=2,
        committed_first=5,
        committed_last=5,
        lag_first=0,
        lag_last=0,
        owned=True,
        evidence="offset did not move over 2 s",
    )
    report = GateReport(
        group="g1",
        target=GateTarget(),
        status="pass",
        taken_ms=0,
        checks=(Check(name="lag-status", status="not-judged", reason="not judged"),),
        lag=GroupLagStatus(status="NOT_JUDGED", window_s=2, partitions=(part,)),
    )
    term, file = _terminal(None)
    render_report(term, report)
    shown = file.getvalue()
    assert "NOT-JUDGED" in shown and "NOT_JUDGED" not in shown, shown


def test_a_failed_gate_that_waited_does_not_say_re_run_with_wait() -> None:
    from kafka_coop.cli.verify import _hint

    report = GateReport(
        group="g1",
        target=GateTarget(),
        status="fail",
        taken_ms=0,
        checks=(Check(name="group-stable", status="fail", reason="rebalancing"),),
    )
    assert "--wait" in _hint(report, strict=False, waited=None)
    waited = _hint(report, strict=False, waited=120.0)
    assert "--wait" not in waited and "--timeout" in waited and "120" in waited
    unsettled = Check(name="group-stable", status="fail", reason="x", hint="Wait (--wait re-checks).")
    told = _hint(report.model_copy(update={"checks": (unsettled,)}), strict=False, waited=120.0)
    assert "--wait" not in told and "raise --timeout" in told

"""The close soak's bookkeeping (no broker): the schedule, one run's outcome, the counts and figures, the
member's conf, and the kill of a child that outlives its timeout (a stand-in process, not a consumer)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from bench.close_soak import (
    VARIANTS,
    classify,
    figures_for,
    is_fenced,
    last_stage,
    member_command,
    parse_report,
    plot,
    schedule,
    selected_variants,
    soak,
    tally,
    variant_key,
)
from bench.harness.frame import BenchResult, new_result, render_png
from testbed.close_soak_member import consumer_conf


def test_every_rebalance_runs_with_both_offset_modes_round_by_round() -> None:
    assert VARIANTS == (
        "eager-range/explicit",
        "eager-range/librdkafka-defaults",
        "cooperative-sticky/explicit",
        "cooperative-sticky/librdkafka-defaults",
    )
    assert selected_variants("all") == list(VARIANTS)
    assert selected_variants("cooperative-sticky/explicit, eager-range/explicit") == [
        "eager-range/explicit",
        "cooperative-sticky/explicit",
    ]
    with pytest.raises(ValueError, match="unknown variant"):
        selected_variants("eager/explicit")
    assert schedule(["x", "y"], 2) == [(0, "x"), (0, "y"), (1, "x"), (1, "y")]
    assert variant_key("eager-range/librdkafka-defaults") == "eager_range_librdkafka_defaults"


def test_the_member_command_and_conf_are_the_reproduction_scenario() -> None:
    cmd = member_command("b:9092", "eager-range/explicit", Path("/t/x.log"), "cgrp")
    assert cmd[1:3] == ["-m", "testbed.close_soak_member"]
    assert cmd[cmd.index("--rebalance") + 1] == "eager-range"
    assert cmd[cmd.index("--offsets") + 1] == "explicit"
    marks = consumer_conf("b:9092", "g", "g-a", "eager-range", marks=True, debug="cgrp,consumer")
    assert marks["enable.auto.offset.store"] == "false"
    assert marks["partition.assignment.strategy"] == "range"
    assert marks["group.instance.id"] == "g-a"
    assert (marks["session.timeout.ms"], marks["max.poll.interval.ms"], marks["heartbeat.interval.ms"]) == (
        "6000",
        "7000",
        "500",
    )
    assert marks["debug"] == "cgrp,consumer"
    defaults = consumer_conf("b:9092", "g", "g-a", "cooperative-sticky", marks=False, debug="")
    assert "enable.auto.offset.store" not in defaults and "debug" not in defaults
    assert defaults["partition.assignment.strategy"] == "cooperative-sticky"


def test_the_report_is_the_last_json_line_and_the_stage_the_last_mark() -> None:
    out = 'noise\n{"seen": 20, "failure": null, "errors": []}\n'
    assert parse_report(out) == {"seen": 20, "failure": None, "errors": []}
    assert parse_report("no json here\n[1, 2]\n") == {}
    assert last_stage("stage setup\nstage closing_a\nTraceback ...\n") == "closing_a"
    assert last_stage("") is None


def test_a_hang_beats_a_failure_and_a_failure_beats_fencing() -> None:
    fenced = {"failure": None, "errors": ["commit failed: Broker: Static consumer FENCED by another member"]}
    assert is_fenced(fenced)
    assert is_fenced({"failure": "ConsumerFailed: ...", "errors": []})
    assert is_fenced({"failure": None, "failure_b": "ConsumerFailed: ...", "errors": []})
    assert is_fenced({"errors": ["the group has another running member with this instance id"]})
    assert not is_fenced({"failure": None, "errors": ["member id reset (max.poll.interval.ms exceeded)"]})
    assert classify(None, True, fenced) == "hang"
    assert classify(2, False, fenced) == "failed"
    assert classify(0, False, fenced) == "fenced"
    assert classify(0, False, {"errors": []}) == "ok"


def _runs() -> list[dict[str, Any]]:
    outcomes = {
        "eager-range/explicit": ["ok", "hang", "hang"],
        "cooperative-sticky/explicit": ["fenced", "ok"],
    }
    return [
        {"variant": v, "round": i, "outcome": o, "close_a_s": 1.5 if o != "hang" else None}
        for v, os_ in outcomes.items()
        for i, o in enumerate(os_)
    ]


def test_counts_per_variant_and_figures() -> None:
    counts = tally(_runs(), VARIANTS)
    assert counts["eager-range/explicit"] == {"runs": 3, "ok": 1, "fenced": 0, "failed": 0, "hang": 2}
    assert counts["cooperative-sticky/explicit"]["fenced"] == 1
    assert counts["eager-range/librdkafka-defaults"]["runs"] == 0
    figures = figures_for(counts, 75.0)
    assert (figures["hangs"].value, figures["hangs"].passed) == (2, False)
    assert (figures["fenced"].value, figures["fenced"].passed) == (1, False)
    assert figures["runs"].value == 5 and figures["failed"].value == 0
    assert figures["eager_range_explicit_hangs"].value == 2
    assert not figures["eager_range_explicit_hangs"].show
    clean = figures_for(tally([{"variant": VARIANTS[0], "outcome": "ok"}], VARIANTS), 75.0)
    assert clean["hangs"].passed and clean["fenced"].passed


def test_the_plot_draws_a_bar_per_variant_that_ran() -> None:
    result: BenchResult = new_result("close-soak", "t", {})
    result.runs = _runs()
    result.figures = figures_for(tally(result.runs, VARIANTS), 75.0)
    assert render_png(result, plot).startswith(b"\x89PNG")


def test_a_child_past_its_timeout_is_killed_and_counted_as_a_hang(tmp_path: Path) -> None:
    def command(bootstrap: str, variant: str, log: Path, debug: str) -> list[str]:
        if variant.startswith("eager"):  # ignores SIGTERM, as a process whose close holds the GIL does
            code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
        else:
            code = "import sys; print('stage closed', file=sys.stderr); print('{\"errors\": []}')"
        return [sys.executable, "-c", code]

    jobs = [(0, "eager-range/explicit"), (0, "cooperative-sticky/explicit")]
    records = soak(
        "b:9092",
        jobs,
        parallel=2,
        timeout_s=1.0,
        debug="",
        py_spy=None,
        results_dir=tmp_path,
        command=command,
    )
    by_variant = {r["variant"]: r for r in records}
    hung = by_variant["eager-range/explicit"]
    assert hung["outcome"] == "hang" and hung["returncode"] is None and hung["wall_s"] < 10
    assert "py_spy" not in hung
    ok = by_variant["cooperative-sticky/explicit"]
    assert (ok["outcome"], ok["returncode"], ok["stage"]) == ("ok", 0, "closed")

"""Benchmark plumbing without a broker: result round-trip, verdicts, interleaving, the README table."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from bench.harness.frame import (
    BenchArgs,
    BenchResult,
    Figure,
    Machine,
    Series,
    Versions,
    ab_order,
    parse_meminfo,
    read_result,
    write_result,
)
from bench.readme_table import (
    END,
    HEADLINES,
    START,
    format_value,
    load_results,
    render_headlines,
    render_table,
    replace_section,
)

T0 = dt.datetime(2026, 11, 23, 6, 0, tzinfo=dt.UTC)


def make_result(name: str = "wrapper-overhead", ratio: float = 0.99) -> BenchResult:
    return BenchResult(
        name=name,
        title="Wrapper overhead",
        started=T0,
        finished=T0 + dt.timedelta(seconds=90),
        wall_s=90.0,
        machine=Machine(
            cores=2, memory_total_bytes=24 * 1024**3, platform="Linux", python_implementation="CPython"
        ),
        versions=Versions(python="3.11.7", confluent_kafka="2.16.1", git_commit="9f3053f4aea835bd"),
        parameters={"records": 1_000_000, "repeats": 7},
        samples={"pair_ratio": Series(unit="ratio", values=[0.98, 1.01, ratio])},
        runs=[{"side": "raw", "records_per_s": 812345.6}],
        figures={
            "throughput_ratio": Figure(value=ratio, unit="ratio", target=0.97, better="higher"),
            "raw_records_per_s": Figure(value=812345.6, unit="records/s"),
            "hidden": Figure(value=1.0, unit="ratio", show=False),
        },
        notes=["a note"],
    )


def test_figure_verdict_follows_target_and_direction() -> None:
    assert Figure(value=0.98, unit="ratio", target=0.97, better="higher").passed is True
    assert Figure(value=0.96, unit="ratio", target=0.97, better="higher").passed is False
    assert Figure(value=1.5, unit="s", target=2.0, better="lower").passed is True
    assert Figure(value=2.5, unit="s", target=2.0, better="lower").passed is False
    assert Figure(value=2.5, unit="s").passed is None


def test_result_round_trips_through_json_file(tmp_path: Path) -> None:
    result = make_result()
    json_path, png_path = write_result(result, results_dir=tmp_path)
    assert json_path == tmp_path / "wrapper-overhead.json"
    assert png_path.read_bytes().startswith(b"\x89PNG")
    assert read_result(json_path) == result
    assert not list(tmp_path.glob("*.tmp"))  # written atomically, nothing left behind
    raw = json.loads(json_path.read_text())
    assert raw["figures"]["throughput_ratio"]["passed"] is True
    assert raw["samples"]["pair_ratio"]["values"] == [0.98, 1.01, 0.99]


def test_ab_order_alternates_who_goes_first() -> None:
    assert ab_order(3, ("raw", "wrapped")) == [
        (0, "raw"),
        (0, "wrapped"),
        (1, "wrapped"),
        (1, "raw"),
        (2, "raw"),
        (2, "wrapped"),
    ]


def test_bench_args_param_takes_the_type_of_the_default() -> None:
    args = BenchArgs(params={"records": "2000000", "quick": "yes", "rate": "1.5"})
    assert args.param("records", 1) == 2_000_000
    assert args.param("quick", False) is True
    assert args.param("rate", 1.0) == 1.5
    assert args.param("missing", "x") == "x"


def test_parse_meminfo_in_bytes() -> None:
    info = parse_meminfo(
        "MemTotal:       24683656 kB\nMemAvailable:   23000000 kB\nHugePages_Total:       0\n"
    )
    assert info["MemTotal"] == 24683656 * 1024
    assert info["HugePages_Total"] == 0


def test_table_lists_shown_figures_with_target_and_verdict() -> None:
    table = render_table([make_result(ratio=0.95)])
    lines = table.splitlines()
    assert lines[0] == "| Benchmark | Figure | Value | Target | Result | Run |"
    assert lines[2] == (
        "| [wrapper-overhead](../bench/results/wrapper-overhead.png) | throughput_ratio | 0.950 | >= 0.97 "
        "| **FAIL** | 2026-11-23, 2 cores, 24 GiB, 9f3053f |"
    )
    assert "| 812,346 records/s |  |  |" in lines[3]
    assert "hidden" not in table
    assert len(lines) == 4


def test_table_reads_older_result_files() -> None:
    legacy = {
        "name": "inspection-scale",
        "machine": {"cores": 2},
        "figures": {"describe_median_s": 3.09, "ok": False},
    }
    table = render_table([("inspection-scale", legacy)])
    assert "| inspection-scale | describe_median_s | 3.090 s |  |  | 2 cores (older format) |" in table
    assert "| inspection-scale | ok |  |  | **FAIL** |" in table


def test_empty_results_say_how_to_get_some() -> None:
    assert "make bench" in render_table([])


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (1234567.8, "records/s", "1,234,568 records/s"),
        (0.9734, "ratio", "0.973"),
        (1.0, "ratio", "1.000"),
        (3.0945, "s", "3.095 s"),
        (0.0123, "s", "0.0123 s"),
    ],
)
def test_format_value(value: float, unit: str, text: str) -> None:
    assert format_value(value, unit) == text


def test_replace_section_keeps_everything_outside_the_markers() -> None:
    readme = f"# title\n\n## Benchmarks\n\nintro\n\n{START}\nold table\n{END}\n\ntrailer\n"
    updated = replace_section(readme, "| new |")
    assert updated.startswith("# title\n\n## Benchmarks\n\nintro\n\n" + START + "\n")
    assert updated.endswith(f"\n| new |\n{END}\n\ntrailer\n")
    assert "old table" not in updated
    assert replace_section(updated, "| new |") == updated  # idempotent
    with pytest.raises(ValueError, match="markers"):
        replace_section("no markers here", "| new |")


def test_the_readme_headlines_show_value_target_and_verdict_and_link_nowhere() -> None:
    table = render_headlines([make_result(ratio=0.99)])
    row = next(line for line in table.splitlines() if "CoopConsumer.consume" in line)
    assert row.split(" | ")[1:] == ["0.990", ">= 0.97", "pass |"]
    assert "](" not in table, "the README is also the package page, where repository links lead nowhere"


def test_the_pipeline_headline_is_its_ratio_to_the_ceiling_with_the_absolute_rate_beside_it() -> None:
    table = render_headlines(load_results())
    row = next(line for line in table.splitlines() if line.startswith("| live pipeline"))
    assert row.split(" | ")[1:] == ["0.877 (93,580 events/s)", ">= 0.85", "pass |"]
    assert "100,000/s" not in row


def test_a_headline_without_a_result_says_so_instead_of_vanishing() -> None:
    table = render_headlines([])
    assert table.count("not measured yet") == len(HEADLINES)


def test_every_headline_is_a_figure_of_a_committed_result() -> None:
    figures = {(r.name, key) for r in load_results() if isinstance(r, BenchResult) for key in r.figures}
    assert [(bench, key) for bench, key, _ in HEADLINES if (bench, key) not in figures] == []


def test_load_results_reads_both_formats(tmp_path: Path) -> None:
    write_result(make_result(), results_dir=tmp_path)
    (tmp_path / "old.json").write_text(json.dumps({"name": "old", "figures": {"x_s": 1.0}}))
    loaded = load_results(tmp_path)
    assert isinstance(loaded[1], BenchResult)
    assert loaded[0] == ("old", {"name": "old", "figures": {"x_s": 1.0}})


def test_proc_cpu_reads_a_live_process_and_its_threads_and_none_once_it_is_gone() -> None:
    import os
    import subprocess
    import sys

    from bench.harness.frame import proc_cpu_s, thread_cpu_s

    assert (proc_cpu_s(os.getpid()) or 0) > 0
    assert thread_cpu_s(os.getpid()), "at least this thread"
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert proc_cpu_s(child.pid) is None
    assert thread_cpu_s(child.pid) == []

"""Regenerate the benchmark tables from bench/results/*.json: every figure in docs/benchmarks.md, the
headline figures in README.md.

`python -m bench.readme_table` rewrites the part of each file between its markers (`<!-- bench:start -->`
and `<!-- bench:end -->` in docs/benchmarks.md, `<!-- bench-headline:start -->` and
`<!-- bench-headline:end -->` in README.md); `--check` only reports (exit 1) whether one is out of date.
The rendering is pure (`render_table`, `render_headlines`, `replace_section`) so it is unit-tested without
files. A result file that is not a `BenchResult` (an older hand-written format with a plain `figures`
dict) is still listed, with what can be read from it. The README table links nowhere: it is also the
package's long description, where a repository path leads nowhere.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bench.harness.frame import REPO_ROOT, RESULTS_DIR, BenchResult, Figure, target_text

START = "<!-- bench:start -->"
END = "<!-- bench:end -->"
HEADLINE_START = "<!-- bench-headline:start -->"
HEADLINE_END = "<!-- bench-headline:end -->"
README = REPO_ROOT / "README.md"
BENCHMARKS_DOC = REPO_ROOT / "docs" / "benchmarks.md"
# (benchmark, figure, what it says): the README's few rows, each from a committed result file.
HEADLINES: tuple[tuple[str, str, str], ...] = (
    (
        "service-bounce",
        "svc_py_coop_static_pause_reduction",
        "rolling bounce of a Python service fleet: pause of eager dynamic / cooperative static members",
    ),
    (
        "partition-add",
        "classic-eager_vs_consumer_speedup",
        "900 partitions added under 10 members: time to all owned, classic eager / KIP-848",
    ),
    ("chaos", "cooperative_static_lost", "records lost under kills, freezes and network cuts (cooperative)"),
    ("wrapper-overhead", "throughput_ratio", "CoopConsumer.consume throughput / confluent Consumer.consume"),
    ("inspection-scale", "describe_median_s", "describe of a 1,000-member group"),
    ("analytics-scale", "events_per_s", "report with the Spark engine on local[2], 10 M events"),
    (
        "pipeline-throughput",
        "pipeline_vs_ceiling",
        "live pipeline on local[2], 5 s trigger: its rate / Spark writing its output with no step",
    ),
    ("pipeline-latency", "latency_p95_s", "live pipeline: event produced -> figure visible, p95, 10,000/s"),
    (
        "rollout-live",
        "live_vs_restart_unavailable",
        "a 10-member fleet's rollout walked live / by process restarts (the kindest restart): unavailable ms",
    ),
)
# A headline judged as a ratio shows the absolute figure of the same run beside it.
BESIDE: dict[tuple[str, str], str] = {("pipeline-throughput", "pipeline_vs_ceiling"): "events_per_s"}
HEADLINE_HEADER = ("| What | Value | Target | Result |", "|---|---|---|---|")
GIB = 1024**3
HEADER = (
    "| Benchmark | Figure | Value | Target | Result | Run |",
    "|---|---|---|---|---|---|",
)


@dataclass(frozen=True)
class Row:
    bench: str
    figure: str
    value: str
    target: str
    result: str
    run: str

    def markdown(self) -> str:
        cells = (self.bench, self.figure, self.value, self.target, self.result, self.run)
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def format_value(value: float, unit: str) -> str:
    """Readable, stable numbers: 1,234,567 / 123.4 / 0.950 / 0.0123 / 1.50e-05, then the unit."""
    magnitude = abs(value)
    if magnitude >= 1000:
        text = f"{value:,.0f}"
    elif magnitude >= 100:
        text = f"{value:.1f}"
    elif magnitude >= 0.1 or value == 0:
        text = f"{value:.3f}"
    elif magnitude >= 0.001:
        text = f"{value:.3g}"
    else:
        text = f"{value:.2e}"
    return f"{text} {unit}" if unit and unit not in {"ratio", "x"} else text


def verdict(passed: bool | None) -> str:
    return "" if passed is None else ("pass" if passed else "**FAIL**")


def run_text(result: BenchResult) -> str:
    when = (result.finished or result.started).date().isoformat()
    machine = f"{result.machine.cores} cores"
    if result.machine.memory_total_bytes:
        machine += f", {result.machine.memory_total_bytes / GIB:.0f} GiB"
    commit = (result.versions.git_commit or "")[:7]
    return ", ".join(part for part in (when, machine, commit) if part)


def rows_for(result: BenchResult, link: str | None = None) -> list[Row]:
    bench = f"[{result.name}]({link})" if link else result.name
    rows = []
    for key, fig in result.figures.items():
        if not fig.show:
            continue
        rows.append(_row(bench, key, fig, run_text(result)))
    return rows


def _row(bench: str, key: str, fig: Figure, run: str) -> Row:
    return Row(bench, key, format_value(fig.value, fig.unit), target_text(fig), verdict(fig.passed), run)


def legacy_rows(data: dict[str, Any], fallback_name: str, link: str | None = None) -> list[Row]:
    """Rows from an older result file: numeric figures as values, boolean `*_pass` ones as verdicts."""
    name = str(data.get("name") or fallback_name)
    bench = f"[{name}]({link})" if link else name
    cores = (data.get("machine") or {}).get("cores")
    run = f"{cores} cores (older format)" if cores else "(older format)"
    figures = data.get("figures") or {}
    rows = []
    for key, value in figures.items():
        if isinstance(value, bool):
            rows.append(Row(bench, key, "", "", verdict(value), run))
        elif isinstance(value, int | float):
            unit = "s" if key.endswith("_s") else ""
            rows.append(Row(bench, key, format_value(float(value), unit), "", "", run))
    return rows


def render_table(
    results: Iterable[BenchResult | tuple[str, dict[str, Any]]], links: bool = True, link_prefix: str = "../"
) -> str:
    """The markdown table; `results` are BenchResults or (file stem, raw dict) for older files. Plots
    are linked relative to the page the table sits on (docs/ by default)."""
    lines = list(HEADER)
    for item in results:
        if isinstance(item, BenchResult):
            link = f"{link_prefix}bench/results/{item.name}.png" if links else None
            lines.extend(r.markdown() for r in rows_for(item, link))
        else:
            stem, data = item
            lines.extend(r.markdown() for r in legacy_rows(data, stem))
    if len(lines) == len(HEADER):
        return "No benchmark results yet: run `make bench`."
    return "\n".join(lines)


def render_headlines(results: Iterable[BenchResult | tuple[str, dict[str, Any]]]) -> str:
    """The README's rows, in HEADLINES order; a headline with no result says so instead of vanishing."""
    figures = {
        (item.name, key): fig
        for item in results
        if isinstance(item, BenchResult)
        for key, fig in item.figures.items()
    }
    lines = list(HEADLINE_HEADER)
    for bench, key, what in HEADLINES:
        fig = figures.get((bench, key))
        if fig is None:
            lines.append(f"| {what} | not measured yet | | |")
        else:
            value = format_value(fig.value, fig.unit)
            other = figures.get((bench, BESIDE.get((bench, key), "")))
            if other is not None:
                value += f" ({format_value(other.value, other.unit)})"
            lines.append(f"| {what} | {value} | {target_text(fig)} | {verdict(fig.passed)} |")
    return "\n".join(lines)


def replace_section(text: str, table: str, start_marker: str = START, end_marker: str = END) -> str:
    """Put `table` between the markers, keeping everything outside them byte for byte."""
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < 0 or end < start:
        raise ValueError(f"the page needs the markers {start_marker} and {end_marker}, in that order")
    note = "<!-- generated by `python -m bench.readme_table` from bench/results/*.json; do not edit -->"
    return f"{text[: start + len(start_marker)]}\n{note}\n{table}\n{text[end:]}"


def load_results(results_dir: Path = RESULTS_DIR) -> list[BenchResult | tuple[str, dict[str, Any]]]:
    out: list[BenchResult | tuple[str, dict[str, Any]]] = []
    for path in sorted(results_dir.glob("*.json")):
        text = path.read_text()
        try:
            out.append(BenchResult.model_validate_json(text))
        except ValidationError:
            data = json.loads(text)
            if isinstance(data, dict):
                out.append((path.stem, data))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.readme_table", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a table is out of date")
    parser.add_argument("--readme", type=Path, default=README)
    parser.add_argument("--doc", type=Path, default=BENCHMARKS_DOC)
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    ns = parser.parse_args(argv)
    results = load_results(ns.results_dir)
    pages = (
        (ns.doc, render_table(results), START, END),
        (ns.readme, render_headlines(results), HEADLINE_START, HEADLINE_END),
    )
    stale = 0
    for page, table, start, end in pages:
        current = page.read_text()
        updated = replace_section(current, table, start, end)
        if updated == current:
            continue
        if ns.check:
            print(f"{page} benchmark table is out of date: run `python -m bench.readme_table`")
            stale += 1
        else:
            page.write_text(updated)
            print(f"updated the benchmark table in {page}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())

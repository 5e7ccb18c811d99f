"""Close soak: how often `CoopConsumer.close()` hangs in the scenario of librdkafka issue 4041.

What it measures. One run (testbed/close_soak_member.py, each in its own process) is the scenario the
hang was reproduced with: a static member `a` consumes 20 records from a fresh 2-partition topic and
commits; a static joiner `b` subscribes and polls once; nothing polls until both overran their poll
limit (max.poll.interval.ms 7000, session.timeout.ms 6000), so an assignment is queued and unserved;
then `a.close()`, then `b.close()`. A run whose process has not exited `timeout_s` (75 s) after it
started is a hang (a run that does not hang takes ~11 s): it is dumped with `py-spy dump --native` when
py-spy is on PATH (the dump is kept in the run's record) and killed with SIGKILL (a hung close holds the
GIL, so a Python SIGTERM handler never runs). Every run is counted once, per variant (eager-range /
cooperative-sticky x explicit marks / librdkafka's default offset store): `hang`, `failed` (non-zero
exit: the scenario did not get to the closes), `fenced` (exit 0, but `a.failure` or `b.failure` was
set, or an event error of a's says FENCED or "another running member"), or `ok`.

Why. librdkafka's close terminates the group handler first; for a classic member that makes a queued
rebalance stale, the close serves it afterwards, and confluent-kafka's rebalance callback then waits on
the terminated handler with the GIL held: the whole process stops (docs/consumer.md, "Close
semantics"). `close()` therefore serves every queued rebalance before the client's close (step 3
there). A loop of this scenario (6 runs at once, librdkafka debug logging to a file) hung 3 times in
192 runs before step 3 (all in the 48 eager, explicit-marks runs) and never in 120 after; this
benchmark, at 6 at once, did not reproduce the hang before step 3 (0 in 60 runs at 03fabe2), so its 0
after is a loose guard, not a proof.

Figures: `hangs` and `fenced`, totals over every run, target 0 each; `failed` and `runs`; per variant
the same counts (not in the README table). The plot: one stacked bar of outcomes per variant.

Run: `.venv/bin/python -m bench --only close_soak [--param rounds=10] [--param parallel=4]`
-> bench/results/close-soak.json/.png (the librdkafka log of each run that was not ok next to them,
close-soak.<variant>.r<round>.log.gz, not committed). Other params: `timeout_s` (75), `variants`
(comma-separated, e.g. `eager-range/explicit`), `debug` (librdkafka debug contexts, `cgrp,consumer` as
in the reproduction; empty for none), `py_spy` (false: do not dump hung runs).
Not part of CI (nor of the unit tests, which check its bookkeeping only): the default size (10 rounds of
the 4 variants, 4 at once) takes ~2 min plus 75 s per hang and keeps a broker and `parallel` Python
processes busy.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from bench.harness.frame import (
    REPO_ROOT,
    BenchArgs,
    BenchResult,
    Figure,
    Series,
    main_for,
    new_result,
    sandbox,
    select_named,
)
from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION
from testbed.close_soak_member import OFFSETS, REBALANCES

NAME = "close-soak"
TITLE = "close() of static members past their poll limit: hangs (librdkafka issue 4041)"
VARIANTS: tuple[str, ...] = tuple(f"{r}/{o}" for r in REBALANCES for o in OFFSETS)
OUTCOMES = ("ok", "fenced", "failed", "hang")
FENCED_MARKS = ("fenced", "another running member")  # case-insensitive
POLL_S = 0.2
PY_SPY_TIMEOUT_S = 60.0
STDERR_TAIL_LINES = 20


# --- pure parts: the schedule, one run's outcome, the counts ------------------------------------------
def selected_variants(spec: str) -> list[str]:
    """The variants `spec` names (comma-separated; `all` or empty: every one), in VARIANTS order."""
    named = set(select_named(spec, {v: v for v in VARIANTS}, VARIANTS, "variant"))
    return [v for v in VARIANTS if v in named]


def schedule(variants: Sequence[str], rounds: int) -> list[tuple[int, str]]:
    """(round, variant), round by round: the variants run side by side under the same load."""
    return [(r, v) for r in range(rounds) for v in variants]


def variant_key(variant: str) -> str:
    """`eager-range/explicit` -> `eager_range_explicit` (figure names, log file names)."""
    return variant.replace("/", "_").replace("-", "_")


def parse_report(stdout: str) -> dict[str, Any]:
    """The child's one JSON line (the last line that parses as a JSON object); {} if none."""
    for line in reversed(stdout.splitlines()):
        with contextlib.suppress(ValueError):
            data = json.loads(line)
            if isinstance(data, dict):
                return data
    return {}


def last_stage(stderr: str) -> str | None:
    """The last `stage NAME` mark the child wrote on stderr."""
    stages = [line.split(None, 1)[1].strip() for line in stderr.splitlines() if line.startswith("stage ")]
    return stages[-1] if stages else None


def is_fenced(report: Mapping[str, Any]) -> bool:
    """`a.failure` or `b.failure` set, or an event error of a's that says it was fenced."""
    if report.get("failure") or report.get("failure_b"):
        return True
    errors = report.get("errors") or []
    return any(mark in str(e).lower() for e in errors for mark in FENCED_MARKS)


def classify(returncode: int | None, timed_out: bool, report: Mapping[str, Any]) -> str:
    """One run's outcome: a hang beats a failure, a failure beats fencing."""
    if timed_out:
        return "hang"
    if returncode != 0:
        return "failed"
    return "fenced" if is_fenced(report) else "ok"


def tally(runs: Iterable[Mapping[str, Any]], variants: Sequence[str]) -> dict[str, dict[str, int]]:
    """Per variant: runs and the count of each outcome (every variant listed, even with no run)."""
    counts = {v: {"runs": 0, **dict.fromkeys(OUTCOMES, 0)} for v in variants}
    for run_ in runs:
        c = counts.setdefault(str(run_["variant"]), {"runs": 0, **dict.fromkeys(OUTCOMES, 0)})
        c["runs"] += 1
        c[str(run_["outcome"])] += 1
    return counts


def close_a_s(runs: Iterable[Mapping[str, Any]], variant: str) -> list[float]:
    """How long a.close() took in each of the variant's runs that got past it."""
    return [float(r["close_a_s"]) for r in runs if r["variant"] == variant and r.get("close_a_s") is not None]


def figures_for(counts: Mapping[str, Mapping[str, int]], timeout_s: float) -> dict[str, Figure]:
    total = {k: sum(c[k] for c in counts.values()) for k in ("runs", *OUTCOMES)}
    figures = {
        "hangs": Figure(
            value=total["hang"],
            unit="runs",
            description=f"runs whose closes had not returned {timeout_s:g} s after the start, of "
            f"{total['runs']}",
            target=0,
            better="lower",
        ),
        "fenced": Figure(
            value=total["fenced"],
            unit="runs",
            description="runs where a or b failed, or an event error of a's said FENCED or another running "
            "member",
            target=0,
            better="lower",
        ),
        "failed": Figure(
            value=total["failed"], unit="runs", description="runs that exited non-zero before the closes"
        ),
        "runs": Figure(value=total["runs"], unit="runs", description="every variant, every round"),
    }
    for variant, c in counts.items():
        key = variant_key(variant)
        for outcome in ("runs", "hang", "fenced", "failed"):
            name = "hangs" if outcome == "hang" else outcome
            figures[f"{key}_{name}"] = Figure(
                value=c[outcome], unit="runs", description=f"{variant}: {name}", show=False
            )
    return figures


# --- running the children ---------------------------------------------------------------------------
@dataclass
class _Child:
    round: int
    variant: str
    proc: subprocess.Popen[bytes]
    started: float
    log: Path
    out: Path
    err: Path
    record: dict[str, Any] = field(default_factory=dict)


def member_command(bootstrap: str, variant: str, log: Path, debug: str) -> list[str]:
    """The child process of one run (testbed/close_soak_member.py)."""
    rebalance, offsets = variant.split("/")
    return [
        sys.executable, "-m", "testbed.close_soak_member", "--bootstrap", bootstrap,
        "--rebalance", rebalance, "--offsets", offsets, "--log", str(log), "--debug", debug,
    ]  # fmt: skip


CommandFn = Callable[[str, str, Path, str], list[str]]


def _start(
    command: CommandFn, bootstrap: str, workdir: Path, round_: int, variant: str, debug: str
) -> _Child:
    stem = f"{variant_key(variant)}.r{round_}"
    log, out, err = (workdir / f"{stem}.{ext}" for ext in ("log", "out", "err"))
    cmd = command(bootstrap, variant, log, debug)
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr)
    return _Child(round_, variant, proc, time.monotonic(), log, out, err)


def _py_spy_dump(py_spy: str | None, pid: int) -> str | None:
    if py_spy is None:
        return None
    try:
        proc = subprocess.run(
            [py_spy, "dump", "--native", "--pid", str(pid)],
            capture_output=True,
            text=True,
            timeout=PY_SPY_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"py-spy failed: {exc}"
    return proc.stdout + proc.stderr


def _finish(child: _Child, timed_out: bool, dump: str | None, results_dir: Path) -> dict[str, Any]:
    wall_s = round(time.monotonic() - child.started, 3)
    stdout = child.out.read_text(errors="replace")
    stderr = child.err.read_text(errors="replace")
    report = parse_report(stdout)
    outcome = classify(child.proc.returncode, timed_out, report)
    rebalance, offsets = child.variant.split("/")
    record: dict[str, Any] = {
        "variant": child.variant,
        "rebalance": rebalance,
        "offsets": offsets,
        "round": child.round,
        "outcome": outcome,
        "returncode": None if timed_out else child.proc.returncode,
        "wall_s": wall_s,
        "stage": last_stage(stderr),
        "close_a_s": report.get("close_a_s"),
        "close_b_s": report.get("close_b_s"),
        "failure": report.get("failure"),
        "failure_b": report.get("failure_b"),
        "errors": report.get("errors"),
        "error": report.get("error"),
    }
    if outcome != "ok":
        record["stderr_tail"] = [
            line for line in stderr.splitlines()[-STDERR_TAIL_LINES:] if not line.startswith("stage ")
        ]
        if dump is not None:
            record["py_spy"] = dump
        if child.log.exists():
            kept = results_dir / f"{NAME}.{variant_key(child.variant)}.r{child.round}.log.gz"
            with child.log.open("rb") as src, gzip.open(kept, "wb") as dst:
                shutil.copyfileobj(src, dst)
            record["log"] = kept.name
    return record


def soak(
    bootstrap: str,
    jobs: Sequence[tuple[int, str]],
    *,
    parallel: int,
    timeout_s: float,
    debug: str,
    py_spy: str | None,
    results_dir: Path,
    command: CommandFn = member_command,
) -> list[dict[str, Any]]:
    """Run every (round, variant) job in its own process, `parallel` at once; one record per run."""
    results_dir.mkdir(parents=True, exist_ok=True)
    pending = list(jobs)
    live: list[_Child] = []
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kafka-coop-close-soak-") as tmp:
        try:
            while pending or live:
                while pending and len(live) < parallel:
                    round_, variant = pending.pop(0)
                    live.append(_start(command, bootstrap, Path(tmp), round_, variant, debug))
                time.sleep(POLL_S)
                for child in list(live):
                    timed_out = child.proc.poll() is None and time.monotonic() - child.started >= timeout_s
                    if child.proc.returncode is None and not timed_out:
                        continue
                    dump = None
                    if timed_out:
                        dump = _py_spy_dump(py_spy, child.proc.pid)
                        child.proc.kill()  # SIGKILL: the hung close holds the GIL
                        child.proc.wait()
                    live.remove(child)
                    record = _finish(child, timed_out, dump, results_dir)
                    records.append(record)
                    print(
                        f"  {child.variant:<40} round {child.round}: {record['outcome']}"
                        f" ({record['wall_s']:.0f} s, stage {record['stage']})",
                        flush=True,
                    )
        finally:
            for child in live:
                child.proc.kill()
                child.proc.wait()
    return records


# --- the benchmark ----------------------------------------------------------------------------------
def run(args: BenchArgs) -> BenchResult:
    rounds = args.param("rounds", 1 if args.quick else 10)
    parallel = args.param("parallel", 4)
    timeout_s = args.param("timeout_s", 75.0)
    variants = selected_variants(args.param("variants", "all"))
    debug = args.param("debug", "cgrp,consumer")
    use_py_spy = args.param("py_spy", True)
    py_spy = shutil.which("py-spy") if use_py_spy else None
    result = new_result(
        NAME,
        TITLE,
        {
            "rounds": rounds,
            "parallel": parallel,
            "timeout_s": timeout_s,
            "variants": list(variants),
            "debug": debug,
            "py_spy": py_spy,
        },
        kafka_version=DEFAULT_KAFKA_VERSION,
    )
    with sandbox() as box:
        records = soak(
            box.bootstrap,
            schedule(variants, rounds),
            parallel=parallel,
            timeout_s=timeout_s,
            debug=debug,
            py_spy=py_spy,
            results_dir=args.results_dir,
        )
    records.sort(key=lambda r: (r["round"], VARIANTS.index(r["variant"])))
    result.runs = _json_runs(records)
    counts = tally(records, variants)
    result.figures = figures_for(counts, timeout_s)
    result.samples = {
        f"{variant_key(v)}_close_a_s": Series(unit="s", values=close_a_s(records, v)) for v in variants
    }
    result.notes = [
        "Each run in its own process (testbed/close_soak_member.py): 2 partitions x 10 records, static "
        "members a and b (session.timeout.ms 6000, max.poll.interval.ms 7000, heartbeat.interval.ms 500); "
        "a consumes 20 and commits offset 4 of both partitions synchronously, b subscribes and polls "
        "0.5 s, nothing polls until 10 s after a's last poll, then a.close(), then b.close().",
        f"{parallel} runs at once; a run not exited {timeout_s:g} s after its start is a hang "
        + ("(dumped with py-spy, then SIGKILL)." if py_spy else "(SIGKILL; py-spy not used)."),
        "Counts per variant (runs / ok / fenced / failed / hang): "
        + "; ".join(
            f"{v} {c['runs']} / {c['ok']} / {c['fenced']} / {c['failed']} / {c['hang']}"
            for v, c in counts.items()
        ),
    ]
    return result.finish()


def plot(result: BenchResult, fig: Any) -> None:
    """One stacked bar of outcomes per variant."""
    variants = [v for v in VARIANTS if any(r["variant"] == v for r in result.runs)]
    counts = tally(result.runs, variants)
    ax = fig.subplots()
    colors = {"ok": "tab:green", "fenced": "tab:orange", "failed": "tab:gray", "hang": "tab:red"}
    bottom = [0] * len(variants)
    for outcome in OUTCOMES:
        heights = [counts[v][outcome] for v in variants]
        ax.bar(range(len(variants)), heights, bottom=bottom, color=colors[outcome], label=outcome)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_xticks(range(len(variants)), [v.replace("/", "\n") for v in variants], fontsize=8)
    ax.set_ylabel("runs")
    ax.yaxis.get_major_locator().set_params(integer=True)
    hangs = result.figures["hangs"]
    ax.set_title(
        f"hangs {hangs.value:g} of {result.figures['runs'].value:g} runs (target 0), "
        f"fenced {result.figures['fenced'].value:g}",
        fontsize=10,
    )
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")


def _json_runs(runs: list[dict[str, Any]]) -> list[dict[str, JsonValue]]:
    return [dict(r) for r in runs]


if __name__ == "__main__":
    main_for(run, plot)

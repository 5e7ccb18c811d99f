"""The frame every benchmark runs in: the result model, machine/version capture, result files, the sandbox.

How a benchmark module plugs in and what its result file holds: docs/contributing.md, "Writing a
benchmark".
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import platform
import re
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, JsonValue, model_validator

BENCH_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
RESULT_SCHEMA_VERSION = 1
PLOT_DPI = 110
PLOT_SIZE_IN = (10.0, 4.5)

Better = Literal["higher", "lower"]
T = TypeVar("T", int, float, str, bool)


# --- the result model ------------------------------------------------------------------------------
class Machine(BaseModel):
    model_config = ConfigDict(extra="allow")

    cores: int
    cpu_model: str | None = None
    memory_total_bytes: int | None = None
    memory_available_bytes: int | None = None
    load_avg_1m: float | None = None
    platform: str
    python_implementation: str


class Versions(BaseModel):
    model_config = ConfigDict(extra="allow")

    python: str
    confluent_kafka: str | None = None
    librdkafka: str | None = None
    kafka: str | None = None
    java: str | None = None
    kafka_coop: str | None = None
    git_commit: str | None = None
    git_dirty: bool | None = None


class Series(BaseModel):
    """A named list of raw samples in one unit, in measurement order."""

    unit: str
    values: list[float]


class Figure(BaseModel):
    """A headline number. With a target and a direction, `passed` is computed on validation."""

    value: float
    unit: str
    description: str = ""
    target: float | None = None
    better: Better | None = None
    passed: bool | None = None
    show: bool = True  # listed in the README table

    @model_validator(mode="after")
    def _judge(self) -> Figure:
        if self.target is not None and self.better is not None:
            self.passed = self.value >= self.target if self.better == "higher" else self.value <= self.target
        return self


class BenchResult(BaseModel):
    """One benchmark run: written as bench/results/<name>.json."""

    schema_version: int = RESULT_SCHEMA_VERSION
    name: str
    title: str
    started: dt.datetime
    finished: dt.datetime | None = None
    wall_s: float | None = None
    machine: Machine
    versions: Versions
    parameters: dict[str, JsonValue] = {}
    samples: dict[str, Series] = {}
    runs: list[dict[str, JsonValue]] = []
    figures: dict[str, Figure] = {}
    notes: list[str] = []

    def finish(self) -> BenchResult:
        self.finished = _now()
        self.wall_s = round((self.finished - self.started).total_seconds(), 3)
        return self


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


# --- runner arguments --------------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchArgs:
    results_dir: Path = RESULTS_DIR
    quick: bool = False
    params: Mapping[str, str] = field(default_factory=dict)

    def param(self, name: str, default: T) -> T:
        """A `--param name=value` override converted to the type of `default`, else `default`."""
        raw = self.params.get(name)
        if raw is None:
            return default
        if isinstance(default, bool):
            return raw.strip().lower() in {"1", "true", "yes", "on"}
        return type(default)(raw)


# --- machine and versions -----------------------------------------------------------------------------
def _stat_cpu(path: str) -> tuple[str, float] | None:
    """(comm, utime + stime in s) from a /proc stat file; None when the process or thread is gone."""
    try:
        text = Path(path).read_text()
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        return name, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def proc_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + sys, every thread it ever ran) a live process has used so far; None if gone."""
    stat = _stat_cpu(f"/proc/{pid}/stat")
    return None if stat is None else stat[1]


def thread_cpu_s(pid: int) -> list[tuple[str, float]]:
    """(thread name, CPU seconds so far) of each live thread of `pid`; empty if the process is gone."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    return [stat for stat in (_stat_cpu(f"/proc/{pid}/task/{tid}/stat") for tid in tids) if stat is not None]


def parse_meminfo(text: str) -> dict[str, int]:
    """`/proc/meminfo` as bytes per key (the file states kB)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        match = re.match(r"^(\w+(?:\(\w+\))?):\s+(\d+)(?:\s+kB)?$", line.strip())
        if match:
            scale = 1024 if line.rstrip().endswith("kB") else 1
            out[match.group(1)] = int(match.group(2)) * scale
    return out


def machine_info() -> Machine:
    meminfo: dict[str, int] = {}
    with contextlib.suppress(OSError):
        meminfo = parse_meminfo(Path("/proc/meminfo").read_text())
    cpu_model = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    load = None
    with contextlib.suppress(OSError):
        load = round(os.getloadavg()[0], 2)
    return Machine(
        cores=os.cpu_count() or 1,
        cpu_model=cpu_model,
        memory_total_bytes=meminfo.get("MemTotal"),
        memory_available_bytes=meminfo.get("MemAvailable"),
        load_avg_1m=load,
        platform=platform.platform(),
        python_implementation=platform.python_implementation(),
    )


def _command_output(cmd: list[str], cwd: Path | None = None) -> str | None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=cwd, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return (proc.stdout + proc.stderr).strip()


def java_version() -> str | None:
    text = _command_output(["java", "-version"])
    if text is None:
        return None
    match = re.search(r'version "([^"]+)"', text)
    return match.group(1) if match else text.splitlines()[0]


def versions(*, kafka: str | None = None) -> Versions:
    """Library and tool versions; `kafka` is the broker version the benchmark ran against."""
    ck = lib = None
    with contextlib.suppress(ImportError):
        import confluent_kafka

        found = confluent_kafka.version()  # a string in 2.16; a (string, int) tuple before
        ck = str(found[0] if isinstance(found, tuple) else found)
        lib = str(confluent_kafka.libversion()[0])
    from kafka_coop import __version__

    commit = _command_output(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT)
    status = _command_output(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT)
    return Versions(
        python=platform.python_version(),
        confluent_kafka=ck,
        librdkafka=lib,
        kafka=kafka,
        java=java_version() if kafka is not None else None,
        kafka_coop=__version__,
        git_commit=commit,
        git_dirty=None if status is None else bool(status),
    )


def new_result(
    name: str,
    title: str,
    parameters: Mapping[str, JsonValue],
    *,
    kafka_version: str | None = None,
) -> BenchResult:
    """Start a result: name, title, start time, machine and versions captured now."""
    return BenchResult(
        name=name,
        title=title,
        started=_now(),
        machine=machine_info(),
        versions=versions(kafka=kafka_version),
        parameters=dict(parameters),
    )


# --- interleaving --------------------------------------------------------------------------------------
def comma_names(spec: str) -> list[str]:
    """A comma-separated `--param` value (scenarios, cases, configs, jvms) as its names."""
    return [n.strip() for n in spec.split(",") if n.strip()]


E = TypeVar("E")


def select_named(spec: str, by_name: Mapping[str, E], every: Sequence[E], what: str) -> list[E]:
    """The entries `spec` names, in its order (`all` or empty: `every`); unknown names are refused."""
    if spec.strip() in ("", "all"):
        return list(every)
    names = comma_names(spec)
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"unknown {what}(s) {unknown}; known: {', '.join(by_name)}")
    return [by_name[n] for n in names]


def ab_order(repeats: int, sides: tuple[str, str] = ("baseline", "candidate")) -> list[tuple[int, str]]:
    """(round, side) pairs A B, B A, A B, ...: each side goes first equally often, so drift and
    neighbours' load hit both sides alike."""
    first, second = sides
    order: list[tuple[int, str]] = []
    for r in range(repeats):
        pair = (first, second) if r % 2 == 0 else (second, first)
        order.extend((r, side) for side in pair)
    return order


def interleaved_runs(
    prefix: str,
    repeats: int,
    sides: tuple[str, str],
    one: Callable[[str, Path, str], dict[str, Any]],
    line: Callable[[dict[str, Any]], str],
    *,
    then: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """On one fresh sandbox and temporary directory (named `prefix`...): `one(bootstrap, workdir, side)`
    for each side `repeats` times in `ab_order`, then once for each side of `then` (round 0, 1, ...).
    Each run gets its `round`, and `line(run)` is printed as it ends."""
    order = [*ab_order(repeats, sides), *((i, side) for i, side in enumerate(then))]
    runs: list[dict[str, Any]] = []
    with sandbox() as box, tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        for round_, side in order:
            run = one(box.bootstrap, Path(tmp), side)
            run["round"] = round_
            runs.append(run)
            print(line(run), flush=True)
    return runs


def json_runs(runs: list[dict[str, Any]]) -> list[dict[str, JsonValue]]:
    """The runs as a result's `runs` (each a JSON object of the figures one run measured)."""
    return [dict(r) for r in runs]


# --- result files -------------------------------------------------------------------------------------
PlotFn = Callable[[BenchResult, Any], None]


def result_path(name: str, results_dir: Path = RESULTS_DIR) -> Path:
    return results_dir / f"{name}.json"


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_result(
    result: BenchResult, plot_fn: PlotFn | None = None, results_dir: Path = RESULTS_DIR
) -> tuple[Path, Path]:
    """Write `<name>.json` (atomically) and `<name>.png` next to it; returns both paths."""
    results_dir.mkdir(parents=True, exist_ok=True)
    json_path = result_path(result.name, results_dir)
    _atomic_write_bytes(json_path, (result.model_dump_json(indent=2) + "\n").encode())
    png_path = json_path.with_suffix(".png")
    _atomic_write_bytes(png_path, render_png(result, plot_fn or default_plot))
    return json_path, png_path


def read_result(path: Path) -> BenchResult:
    return BenchResult.model_validate_json(path.read_text())


def render_png(result: BenchResult, plot_fn: PlotFn) -> bytes:
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=PLOT_SIZE_IN, dpi=PLOT_DPI, layout="constrained")
    plot_fn(result, fig)
    commit = (result.versions.git_commit or "")[:10]
    fig.suptitle(f"{result.title}  ({result.machine.cores} cores, {commit})", fontsize=10)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def default_plot(result: BenchResult, fig: Any) -> None:
    """One strip per sample series (grouped by unit), medians marked."""
    import statistics

    by_unit: dict[str, list[tuple[str, Series]]] = {}
    for key, series in result.samples.items():
        by_unit.setdefault(series.unit, []).append((key, series))
    if not by_unit:
        ax = fig.add_subplot(1, 1, 1)
        ax.text(0.5, 0.5, "no samples", ha="center", va="center")
        return
    axes = fig.subplots(1, len(by_unit), squeeze=False)[0]
    for ax, (unit, items) in zip(axes, by_unit.items(), strict=True):
        for i, (_key, series) in enumerate(items):
            ax.scatter([i] * len(series.values), series.values, alpha=0.7, s=18)
            if series.values:
                ax.hlines(statistics.median(series.values), i - 0.3, i + 0.3, colors="black")
        ax.set_xticks(range(len(items)), [k for k, _ in items], rotation=20, ha="right", fontsize=8)
        ax.set_ylabel(unit)


# --- the sandbox ---------------------------------------------------------------------------------------
@contextlib.contextmanager
def sandbox(config: Mapping[str, str] | None = None, kafka_version: str | None = None) -> Iterator[Any]:
    """A fresh local Kafka broker on a free port in a temporary directory, stopped and removed after.

    Yields the started `kafka_coop.sandbox.Sandbox` (`.bootstrap`, `.kafka_version`).
    """
    from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION, Sandbox, free_port

    with (
        tempfile.TemporaryDirectory(prefix="kafka-coop-bench-") as tmp,
        Sandbox(
            dir=Path(tmp) / "kafka",
            port=free_port(),
            kafka_version=kafka_version or DEFAULT_KAFKA_VERSION,
            config=dict(config or {}),
        ) as box,
    ):
        yield box


def assignment_interval_ms(bootstrap: str, conf: Mapping[str, str] | None = None) -> int | None:
    """The broker's group.consumer.assignment.interval.ms (KIP-1263, Kafka 4.3: 1,000 ms by default, a
    floor under every consumer-protocol assignment); None where the broker has no such config (before
    4.3 the coordinator assigned at once). KIP-848 figures record it with the run. `conf`: the client
    settings a secured broker needs (a sasl_ssl sandbox's `client_conf()`)."""
    from kafka_coop.admin import ClusterAdmin

    _, configs = ClusterAdmin(bootstrap, conf).broker_configs()
    value = configs.get("group.consumer.assignment.interval.ms")
    return int(value) if value is not None and value.isdigit() else None


# --- running one module on its own -------------------------------------------------------------------
def main_for(run: Callable[[BenchArgs], BenchResult], plot_fn: PlotFn | None = None) -> None:
    """`python -m bench.<name> [--quick] [--param k=v]...`: run, write and print the figures."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smoke-sized run")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    ns = parser.parse_args()
    args = BenchArgs(results_dir=ns.results_dir, quick=ns.quick, params=parse_params(ns.param))
    result = run(args)
    paths = write_result(result, plot_fn, args.results_dir)
    print(summarize(result))
    print("wrote", *(str(p) for p in paths))


def parse_params(pairs: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--param {pair!r} is not KEY=VALUE")
        params[key.strip()] = value.strip()
    return params


def summarize(result: BenchResult) -> str:
    lines = [f"{result.name}: {result.title} (wall {result.wall_s} s)"]
    for key, fig in result.figures.items():
        target = target_text(fig)
        verdict = "" if fig.passed is None else (" PASS" if fig.passed else " FAIL")
        lines.append(
            f"  {key} = {fig.value:.6g} {fig.unit}{f' (target {target})' if target else ''}{verdict}"
        )
    return "\n".join(lines)


def target_text(fig: Figure) -> str:
    """`>= 0.97` / `<= 2 s`, or empty when the figure has no target."""
    if fig.target is None:
        return ""
    op = {"higher": ">=", "lower": "<=", None: "="}[fig.better]
    unit = f" {fig.unit}" if fig.unit and fig.unit not in {"x", "ratio"} else ""
    return f"{op} {fig.target:g}{unit}"

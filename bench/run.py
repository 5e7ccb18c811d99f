"""The benchmark runner: `python -m bench [--only NAME]... [--quick] [--param KEY=VALUE]...`.

Benchmarks are listed in BENCHMARKS (module names under bench/, in run order); each follows the
protocol in bench/harness/frame.py (`run(args) -> BenchResult`, optional `plot(result, fig)`). The runner
writes each result to bench/results/<name>.json + .png. One benchmark failing does not stop the
others; the exit code is 1 if any failed or is missing. Regenerate the README table afterwards with
`python -m bench.readme_table` (`make bench` does both).
"""

from __future__ import annotations

import argparse
import importlib
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from bench.harness.frame import RESULTS_DIR, BenchArgs, BenchResult, parse_params, summarize, write_result

# Run order: cheap and self-contained first, the fleet-heavy ones after.
BENCHMARKS: tuple[str, ...] = (
    "wrapper_overhead",
    "inspection_scale",
    "analytics_scale",
    "pipeline_throughput",
    "pipeline_latency",
    "pipeline_recovery",
    "rolling_bounce",
    "service_bounce",
    "restart_floor",
    "partition_add",
    "static_cutover",
    "rollout_live",
    "chaos",
    "close_soak",
)


def module_name(name: str) -> str:
    """Accept `wrapper_overhead`, `wrapper-overhead` or `bench/wrapper_overhead.py`."""
    stem = Path(name).stem if name.endswith(".py") else name
    return stem.replace("-", "_")


def _load(name: str) -> ModuleType:
    return importlib.import_module(f"bench.{name}")


def run_one(name: str, args: BenchArgs) -> BenchResult | None:
    """Run one benchmark; returns its result (None for a legacy `main()` module, which writes its own)."""
    module = _load(name)
    run = getattr(module, "run", None)
    if run is None:
        legacy = getattr(module, "main", None)
        if legacy is None:
            raise TypeError(f"bench/{name}.py defines neither run(args) nor main()")
        print(f"note: bench/{name}.py has no run(args); calling its main(), which writes its own file")
        legacy()
        return None
    result = run(args)
    if not isinstance(result, BenchResult):
        raise TypeError(f"bench/{name}.py run() returned {type(result).__name__}, not BenchResult")
    paths = write_result(result, getattr(module, "plot", None), args.results_dir)
    print(summarize(result))
    print("  wrote", ", ".join(str(p) for p in paths))
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", action="append", default=[], metavar="NAME", help="run only this one (repeatable)"
    )
    parser.add_argument("--quick", action="store_true", help="smoke-sized runs (seconds, not minutes)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    ns = parser.parse_args(argv)
    if ns.list:
        print("\n".join(BENCHMARKS))
        return 0
    selected = [module_name(n) for n in ns.only] or list(BENCHMARKS)
    unknown = [n for n in selected if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r}; known: {', '.join(BENCHMARKS)}")
    args = BenchArgs(results_dir=ns.results_dir, quick=ns.quick, params=parse_params(ns.param))
    failed: list[str] = []
    total_start = time.monotonic()
    for name in selected:
        print(f"=== {name}", flush=True)
        start = time.monotonic()
        try:
            run_one(name, args)
        except ModuleNotFoundError as exc:
            if exc.name != f"bench.{name}":
                raise
            print(f"FAILED {name}: bench/{name}.py does not exist yet")
            failed.append(name)
        except Exception:
            traceback.print_exc()
            print(f"FAILED {name}")
            failed.append(name)
        print(f"=== {name}: {time.monotonic() - start:.0f} s", flush=True)
    print(f"all done in {time.monotonic() - total_start:.0f} s" + (f"; failed: {failed}" if failed else ""))
    return 1 if failed else 0

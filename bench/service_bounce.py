"""Rolling bounce with service-shaped members, checked against the group coordinator's own clock.

The idle rolling bounce (bench/rolling_bounce.py) runs members that poll every 100 ms and do no work
per record: kind to eager, unlike any service. Here every member does what docs/consumer.md tells a
service to do: take a batch (`consume(num_messages=500, timeout=1.0)` in Python, `poll()` with Java's
default `max.poll.records` 500), spend `process_ms` (2 ms) on each record, commit synchronously after
the batch. The producer runs at `rate` records/s, half of the fleet's capacity (10 members x 500
records/s at 2 ms each), so members are busy half the time, in batches.

Scenarios: Python and Java members, each of eager (range), cooperative (cooperative-sticky) and
KIP-848 (`group.protocol=consumer`) x dynamic and static: 12 bounces of 10 members on 60 partitions,
with the procedure, readiness gate and figures of the idle benchmark (`rolling_bounce.run_scenario`).
The cooperative static / KIP-848 static pair of each family runs `floor_repeats` times, interleaved.

The broker clock: the sandbox broker logs every classic rebalance of the group coordinator at INFO
and, with `GroupMetadataManager` at DEBUG (set through JAVA_TOOL_OPTIONS for the broker only), every
KIP-848 member assignment state. Per step, the members' own and collateral pause sit next to the
coordinator's rebalance windows (`bench/harness/broker_clock.py`): collateral pause must lie inside them,
and a step without a broker rebalance must have none.

Targets (from the same run): eager dynamic / cooperative static total pause >= 20x, Python and Java;
KIP-848 static <= cooperative static; collateral pause 0 in every static scenario; 0 lost.

Run: `python -m bench --only service_bounce` -> bench/results/service-bounce.json/.png, and (not
committed) bench/results/service-bounce.events.jsonl.gz (every member event, for `kafka-coop report`)
and service-bounce.coordinator.log.gz.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.harness.broker_clock import (
    DEBUG_PROPERTY,
    LOGGER,
    broker_windows,
    check_step,
    parse_broker_log,
    summarize_clock,
)
from bench.harness.brokers import BROKER_CONFIG, broker_with_coordinator_debug
from bench.harness.figures import as_slots, median_pause, ratio, reduction, restart_segments, restart_split
from bench.harness.frame import (
    RESULTS_DIR,
    BenchArgs,
    BenchResult,
    Figure,
    Series,
    assignment_interval_ms,
    main_for,
    new_result,
    select_named,
)
from bench.harness.rolling import MemberKind, Scenario, archive_events, load_avg, run_scenario
from kafka_coop._vocab import RebalanceProtocol
from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION

NAME = "service-bounce"
TITLE = "Rolling bounce, service-shaped members (2 ms per record, batch commits), with the broker's clock"
EVENTS_ARCHIVE = f"{NAME}.events.jsonl.gz"
BROKER_ARCHIVE = f"{NAME}.coordinator.log.gz"  # the coordinator's lines about the benchmark's groups
TARGET_REDUCTION = 20.0
TARGET_KIP848_VS_COOP = 1.0
TARGET_STATIC_COLLATERAL_MS = 0.0

_SHAPES: tuple[tuple[str, RebalanceProtocol, bool], ...] = (
    ("eager-dynamic", "eager", False),
    ("coop-static", "cooperative", True),
    ("consumer-static", "consumer", True),
    ("eager-static", "eager", True),
    ("coop-dynamic", "cooperative", False),
    ("consumer-dynamic", "consumer", False),
)
_FAMILIES: tuple[tuple[MemberKind, str], ...] = (("python", "py"), ("java", "java"))
SCENARIOS: tuple[Scenario, ...] = tuple(  # each target pair back to back, so load drift hits both
    Scenario(f"svc-{prefix}-{name}", family, protocol, static, shape="service")
    for family, prefix in _FAMILIES
    for name, protocol, static in _SHAPES
)
BY_NAME = {s.name: s for s in SCENARIOS}
FLOOR_PAIRS = (
    ("svc-py-coop-static", "svc-py-consumer-static"),
    ("svc-java-coop-static", "svc-java-consumer-static"),
)

DEFAULTS: dict[str, int | float | str] = {
    "members": 10,
    "partitions": 60,
    "rate": 2500.0,  # records/s: half of 10 members x 500 records/s (2 ms each)
    "process_ms": 2,
    "downtime_s": 0.0,
    "warmup_s": 5.0,
    "cooldown_s": 2.0,
    "floor_repeats": 3,
    "gate_timeout_s": 240.0,
    "drain_timeout_s": 120.0,
    "scenarios": "all",
}
QUICK: dict[str, int | float | str] = {
    "members": 3,
    "partitions": 12,
    "rate": 300.0,
    "warmup_s": 2.0,
    "cooldown_s": 1.0,
    "floor_repeats": 1,
    "scenarios": "svc-py-eager-dynamic,svc-py-coop-static,svc-java-coop-static",
}


def selected(spec: str) -> list[Scenario]:
    return select_named(spec, BY_NAME, SCENARIOS, "scenario")


def schedule(scenarios: Sequence[Scenario], repeats: int) -> list[tuple[Scenario, int]]:
    """Run order: each floor pair's extra runs follow its first, interleaved (coop, KIP-848, ...)."""
    names = {s.name for s in scenarios}
    out: list[tuple[Scenario, int]] = []
    for scn in scenarios:
        out.append((scn, 0))
        for pair in FLOOR_PAIRS:
            if scn.name == pair[-1] and set(pair) <= names:
                for repeat in range(1, repeats):
                    out.extend((BY_NAME[n], repeat) for n in pair)
    return out


def _pause_tuples(events: Sequence[Mapping[str, Any]]) -> list[tuple[str, int, int]]:
    from kafka_coop.analytics import pauses

    return [(p.member, p.start_ms, p.end_ms) for p in pauses(as_slots(events))]


def clock_check(run_: Mapping[str, Any], broker_log: Path) -> dict[str, Any]:
    """The run's steps on the members' clock and the coordinator's."""
    with broker_log.open(encoding="utf-8", errors="replace") as fh:
        lines = parse_broker_log(fh, groups=[str(run_["group"])])
    windows = broker_windows(lines, str(run_["group"]))
    pause_list = _pause_tuples(run_["_events"])
    steps = [
        check_step(st["members"], (int(st["start_ms"]), int(st["end_ms"])), pause_list, windows, lines)
        for st in run_["steps"]
    ]
    return {"summary": summarize_clock(steps), "steps": steps, "broker_lines": len(lines)}


def archive_coordinator_lines(broker_log: Path, out: Path, group_prefix: str) -> None:
    """The group coordinator's log lines about the benchmark's groups, gzipped next to the results:
    with the events archive, every clock figure can be recomputed (`bench/harness/broker_clock.py`)."""
    import gzip

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with (
        broker_log.open(encoding="utf-8", errors="replace") as src,
        gzip.open(tmp, "wt", encoding="utf-8") as dst,
    ):
        for raw in src:
            if LOGGER in raw and group_prefix in raw:
                dst.write(raw)
    os.replace(tmp, out)


def run(args: BenchArgs) -> BenchResult:
    params: dict[str, Any] = {**DEFAULTS, **(QUICK if args.quick else {})}
    params = {key: args.param(key, value) for key, value in params.items()}
    scenarios = selected(str(params["scenarios"]))
    result = new_result(
        NAME,
        TITLE,
        {
            **params,
            "scenario_names": [s.name for s in scenarios],
            "broker_config": dict(BROKER_CONFIG),
            "broker_log_debug": DEBUG_PROPERTY,
            "load_avg_1m_start": load_avg(),
            "consume_loop": "Python: testbed/service_member.py (CoopConsumer.consume(num_messages=500, "
            "timeout=1.0), process_ms per record, mark_done, commit(asynchronous=False) after each batch; "
            "SIGTERM ends after the record in hand); Java: CoopMember --process-ms --commit batch "
            "(poll(100 ms), max.poll.records 500, commitSync after each batch)",
            "readiness_gate": "group Stable with the expected size + every live member owns >= 1 partition + "
            "all partitions owned exactly once (from the members' events), polled every 0.2 s",
        },
        kafka_version=DEFAULT_KAFKA_VERSION,
    )
    runs: list[dict[str, Any]] = []
    failures: list[str] = []
    with (
        tempfile.TemporaryDirectory(prefix="kafka-coop-svc-") as tmp,
        broker_with_coordinator_debug(Path(tmp)) as kafka,
    ):
        result.parameters["assignment_interval_ms"] = assignment_interval_ms(kafka.bootstrap)
        for scn, repeat in schedule(scenarios, int(params["floor_repeats"])):
            t = time.monotonic()
            print(f"  {scn.name}{f' (repeat {repeat})' if repeat else ''} ...", flush=True)
            try:
                run_ = run_scenario(scn, kafka.bootstrap, Path(tmp), params, repeat)
                run_["clock"] = clock_check(run_, kafka.log_path)
                run_["restart_segments_ms"] = restart_segments(run_["_events"])
                run_["restart_split_ms"] = restart_split(run_["steps"], _pause_tuples(run_["_events"]))
            except Exception as exc:  # one broken scenario must not lose the others
                failures.append(f"{scn.name}: {exc}")
                print(f"  {scn.name} FAILED: {exc}", flush=True)
                keep = Path(tempfile.mkdtemp(prefix=f"kafka-coop-svc-{scn.name}-"))
                with contextlib.suppress(OSError):
                    shutil.copytree(Path(tmp) / scn.name, keep, dirs_exist_ok=True)
                continue
            runs.append(run_)
            rec, clk = run_["records"], run_["clock"]["summary"]
            print(
                f"  {scn.name}: pause {run_['pause_ms']:,} ms (own {run_['own_pause_ms']:,}, collateral "
                f"{run_['collateral_pause_ms']:,}), broker rebalances {clk['broker_rebalances']}, collateral "
                f"outside broker windows {clk['collateral_outside_broker_ms']} ms, dups {rec['duplicates']}, "
                f"lost {rec['lost']}, scenario {time.monotonic() - t:.0f} s, load {load_avg()}",
                flush=True,
            )
        result.parameters["load_avg_1m_end"] = load_avg()
        if not args.quick or args.results_dir != RESULTS_DIR:
            archive_events(runs, args.results_dir, EVENTS_ARCHIVE)
            archive_coordinator_lines(kafka.log_path, args.results_dir / BROKER_ARCHIVE, "rb-svc-")
    for run_ in runs:
        run_.pop("_events")
    result.runs = runs
    result.notes.extend(f"scenario failed: {f}" for f in failures)
    return summarize(result, runs)


def summarize(result: BenchResult, runs: list[dict[str, Any]]) -> BenchResult:
    """Ratios against the same run's baselines, the static-collateral check and the clock notes."""
    by_name = {r["scenario"]: r for r in runs if not r.get("repeat")}
    for r in runs:
        base = by_name.get(r["baseline"])
        r["pause_ratio_vs_baseline"] = ratio(r["pause_ms"], base["pause_ms"]) if base else None
        r["unavailable_ratio_vs_baseline"] = (
            ratio(r["unavailable_ms"], base["unavailable_ms"]) if base else None
        )
    result.samples = {
        key: Series(unit="ms", values=[float(r[key]) for r in runs])
        for key in ("pause_ms", "own_pause_ms", "collateral_pause_ms", "unavailable_ms")
    }
    result.parameters["sample_order"] = [
        r["scenario"] + (f"#{r['repeat']}" if r.get("repeat") else "") for r in runs
    ]
    figs: dict[str, Figure] = {}
    for family, prefix in (("python", "py"), ("java", "java")):
        eager = by_name.get(f"svc-{prefix}-eager-dynamic")
        coop = median_pause(runs, f"svc-{prefix}-coop-static")
        kip = median_pause(runs, f"svc-{prefix}-consumer-static")
        if eager and coop:
            red = reduction(float(eager["pause_ms"]), coop)
            if red is not None:
                figs[f"svc_{prefix}_coop_static_pause_reduction"] = Figure(
                    value=round(red, 2),
                    unit="x",
                    description=f"service-shaped, {family}: eager dynamic / cooperative static total pause "
                    "(cooperative: median of its runs)",
                    target=TARGET_REDUCTION,
                    better="higher",
                )
        if kip is not None and coop:
            pairs = sum(r["scenario"] == f"svc-{prefix}-coop-static" for r in runs)
            figs[f"svc_{prefix}_kip848_static_vs_coop_static_pause"] = Figure(
                value=round(kip / coop, 3),
                unit="ratio",
                description=f"service-shaped, {family}: KIP-848 static / cooperative static total pause, "
                f"medians of {pairs} interleaved runs each",
                target=TARGET_KIP848_VS_COOP,
                better="lower",
            )
    static_runs = [r for r in runs if r["static"]]
    if static_runs:
        figs["svc_static_collateral_pause_ms"] = Figure(
            value=float(sum(r["collateral_pause_ms"] for r in static_runs)),
            unit="ms",
            description=f"service-shaped: collateral pause, all {len(static_runs)} static runs together",
            target=TARGET_STATIC_COLLATERAL_MS,
            better="lower",
        )
        figs["svc_static_broker_rebalances"] = Figure(
            value=float(
                sum(
                    r["clock"]["summary"]["broker_rebalances"]
                    for r in static_runs
                    if r["protocol"] != "consumer"
                )
            ),
            unit="rebalances",
            description="broker clock: classic rebalances the coordinator ran in the classic static bounces",
            show=False,
        )
    figs["svc_collateral_outside_broker_ms"] = Figure(
        value=float(sum(r["clock"]["summary"]["collateral_outside_broker_ms"] for r in runs)),
        unit="ms",
        description="broker clock: collateral pause outside every coordinator rebalance window, all runs "
        f"(of {sum(r['collateral_pause_ms'] for r in runs):,} ms collateral)",
        show=False,
    )
    figs["svc_lost_total"] = Figure(
        value=float(sum(r["records"]["lost"] for r in runs)),
        unit="records",
        description="service-shaped: acknowledged records nobody processed, all scenarios",
        target=0,
        better="lower",
    )
    for r in runs:
        if r.get("repeat"):
            continue
        n = r["scenario"]
        figs[f"{n}.pause_ms"] = Figure(
            value=r["pause_ms"], unit="ms", description=f"{r['label']}: total pause"
        )
        figs[f"{n}.collateral_pause_ms"] = Figure(value=r["collateral_pause_ms"], unit="ms", show=False)
        if r["pause_ratio_vs_baseline"] is not None:
            figs[f"{n}.pause_ratio"] = Figure(
                value=round(r["pause_ratio_vs_baseline"], 4),
                unit="ratio",
                description=f"vs {r['baseline']}",
                show=False,
            )
        figs[f"{n}.lost"] = Figure(
            value=r["records"]["lost"], unit="records", target=0, better="lower", show=False
        )
    result.figures = figs
    result.notes.extend(clock_notes(runs))
    result.notes.extend(segment_notes(runs))
    return result.finish()


def clock_notes(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    notes = []
    for r in runs:
        c = r["clock"]["summary"]
        name = f"{r['scenario']} #{r['repeat']}" if r.get("repeat") else r["scenario"]
        lag = c["median_collateral_end_after_broker_ms"]
        notes.append(
            f"{name}: members' clock pause {r['pause_ms']:,} ms = own {r['own_pause_ms']:,} + collateral "
            f"{r['collateral_pause_ms']:,}; broker clock {c['broker_rebalances']} rebalances / epoch bumps "
            f"({c['broker_rebalance_ms']:,} ms), {c['steps_without_broker_rebalance']} of {c['steps']} steps "
            f"without one (collateral there {c['collateral_in_steps_without_broker_rebalance_ms']:,.0f} ms); "
            f"collateral inside broker windows {c['collateral_inside_broker_ms']:,} ms, outside "
            f"{c['collateral_outside_broker_ms']:,} ms (before them "
            f"{c.get('collateral_before_broker_ms', 0):,}, "
            f"after them {c.get('collateral_after_broker_ms', 0):,}, with no window "
            f"{c.get('collateral_without_broker_window_ms', 0):,})"
            + (
                f", collateral pauses end a median {lag:.0f} ms after the window closes"
                if lag is not None
                else ""
            )
            + f"; load {r['load_avg_1m_start']} -> {r['load_avg_1m_end']}"
        )
    return notes


def segment_notes(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The restart floor split into close / process gap / join, for the static pairs (the KIP-848 gap)."""
    import statistics

    notes = []
    for r in runs:
        if not r["static"]:
            continue
        seg = {**(r.get("restart_split_ms") or {}), **(r.get("restart_segments_ms") or {})}
        parts = ", ".join(f"{k} {statistics.mean(v):.1f}" for k, v in seg.items() if v)
        if parts:
            name = f"{r['scenario']} #{r['repeat']}" if r.get("repeat") else r["scenario"]
            notes.append(f"{name}: restart segments, mean ms per restart: {parts}")
    return notes


def _clock_summary(run_: Mapping[str, Any]) -> dict[str, float]:
    summary = run_["clock"]["summary"]
    return {
        k: float(summary[k])
        for k in ("collateral_inside_broker_ms", "collateral_outside_broker_ms", "broker_rebalance_ms")
    }


def plot(result: BenchResult, fig: Any) -> None:
    import numpy as np

    runs = [r for r in result.runs if not r.get("repeat")]
    left, right = fig.subplots(1, 2, width_ratios=[3, 2])
    names = [str(r["scenario"]).removeprefix("svc-") for r in runs]
    x = np.arange(len(names))
    own = [max(float(r["own_pause_ms"]), 1.0) for r in runs]  # type: ignore[arg-type]
    coll = [float(r["collateral_pause_ms"]) for r in runs]  # type: ignore[arg-type]
    left.bar(x, own, 0.6, label="own pause (restarted member)")
    left.bar(x, coll, 0.6, bottom=own, label="collateral pause (everyone else)")
    left.set_yscale("log")
    left.set_ylim(bottom=min(own) / 2)  # a log axis would otherwise start at the lowest bar's top
    left.set_xticks(x, names, rotation=60, ha="right", fontsize=7)
    left.set_ylabel("total pause, member-ms (log)")
    left.legend(fontsize=7)
    left.grid(axis="y", alpha=0.3)
    clocks = [_clock_summary(r) for r in runs]
    inside = [c["collateral_inside_broker_ms"] for c in clocks]
    outside = [c["collateral_outside_broker_ms"] for c in clocks]
    broker = [c["broker_rebalance_ms"] for c in clocks]
    right.bar(x - 0.27, broker, 0.27, label="coordinator rebalance windows (ms)")
    right.bar(x, inside, 0.27, label="collateral inside them")
    right.bar(x + 0.27, outside, 0.27, label="collateral outside them")
    right.set_xticks(x, names, rotation=60, ha="right", fontsize=7)
    right.set_title("members' clock vs the broker's", fontsize=8)
    right.legend(fontsize=6)
    right.grid(axis="y", alpha=0.3)


if __name__ == "__main__":
    main_for(run, plot)

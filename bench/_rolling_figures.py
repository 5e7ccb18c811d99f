"""The rolling-bounce benchmark's summary (pure): its figures, targets and notes over the runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench._rolling_scenarios import (
    DEFAULT_HEARTBEAT_MS,
    TARGET_COOP_STATIC_REDUCTION,
    TARGET_KIP848_VS_COOP,
)
from bench.harness.figures import median_pause, ratio, reduction
from bench.harness.frame import BenchResult, Figure, Series


def summarize_runs(result: BenchResult, runs: list[dict[str, Any]]) -> BenchResult:
    by_name = {r["scenario"]: r for r in runs if not r.get("repeat")}
    for r in runs:
        base = by_name.get(r["baseline"])
        r["unavailable_ratio_vs_baseline"] = (
            ratio(r["unavailable_ms"], base["unavailable_ms"]) if base else None
        )
        r["pause_ratio_vs_baseline"] = ratio(r["pause_ms"], base["pause_ms"]) if base else None
    names = [r["scenario"] + (f"#{r['repeat']}" if r.get("repeat") else "") for r in runs]
    result.samples = {
        "pause_ms": Series(unit="ms", values=[float(r["pause_ms"]) for r in runs]),
        "unavailable_ms": Series(unit="ms", values=[float(r["unavailable_ms"]) for r in runs]),
        "latency_p99_ms": Series(
            unit="ms", values=[float(r["records"]["latency_p99_ms"] or 0) for r in runs]
        ),
        "bounce_wall_s": Series(unit="s", values=[float(r["bounce_wall_s"]) for r in runs]),
        "own_pause_ms": Series(unit="ms", values=[float(r["own_pause_ms"]) for r in runs]),
        "collateral_pause_ms": Series(unit="ms", values=[float(r["collateral_pause_ms"]) for r in runs]),
    }
    result.notes.extend(decomposition_notes(runs))
    result.notes.extend(heartbeat_model_notes(runs))
    result.parameters["sample_order"] = list(names)
    figs: dict[str, Figure] = {}
    for family, prefix in (("python", "py"), ("java", "java")):
        eager, coop = by_name.get(f"{prefix}-eager-dynamic"), median_pause(runs, f"{prefix}-coop-static")
        if eager and coop is not None:
            red = reduction(eager["pause_ms"], coop)
            if red is not None:
                figs[f"{prefix}_coop_static_pause_reduction"] = Figure(
                    value=round(red, 2),
                    unit="x",
                    description=f"{family}: eager dynamic total pause / cooperative static total pause"
                    + (" (median of its runs)" if prefix == "py" else ""),
                    target=TARGET_COOP_STATIC_REDUCTION,
                    better="higher",
                )
    kip, coop_floor = median_pause(runs, "py-consumer-static"), median_pause(runs, "py-coop-static")
    if kip is not None and coop_floor is not None:
        rat = ratio(kip, coop_floor)
        if rat is not None:
            figs["kip848_static_vs_coop_static_pause"] = Figure(
                value=round(rat, 3),
                unit="ratio",
                description="python: KIP-848 static / cooperative static total pause, medians of "
                f"{sum(r['scenario'] == 'py-coop-static' for r in runs)} interleaved runs each",
                target=TARGET_KIP848_VS_COOP,
                better="lower",
            )
    figs["lost_total"] = Figure(
        value=float(sum(r["records"]["lost"] for r in runs)),
        unit="records",
        description="acknowledged records nobody processed, all scenarios",
        target=0,
        better="lower",
    )
    for r in runs:
        if r.get("repeat"):
            continue  # repeats feed the medians and the notes; the per-scenario figures are the first run
        n = r["scenario"]
        rec = r["records"]
        headline = r["case"] == "bounce"
        figs[f"{n}.pause_ms"] = Figure(
            value=r["pause_ms"], unit="ms", description=f"{r['label']}: total pause", show=headline
        )
        figs[f"{n}.unavailable_ms"] = Figure(
            value=r["unavailable_ms"],
            unit="ms",
            description=f"{r['label']}: total partition-unavailable",
            show=False,
        )
        if rec["latency_p99_ms"] is not None:
            figs[f"{n}.latency_p99_ms"] = Figure(
                value=rec["latency_p99_ms"],
                unit="ms",
                description=f"{r['label']}: p99 end-to-end, produced in window",
                show=False,
            )
        figs[f"{n}.duplicates"] = Figure(value=rec["duplicates"], unit="records", show=False)
        figs[f"{n}.lost"] = Figure(value=rec["lost"], unit="records", target=0, better="lower", show=False)
        figs[f"{n}.bounce_wall_s"] = Figure(value=r["bounce_wall_s"], unit="s", show=False)
        if r["pause_ratio_vs_baseline"] is not None:
            figs[f"{n}.pause_ratio"] = Figure(
                value=round(r["pause_ratio_vs_baseline"], 4),
                unit="ratio",
                description=f"vs {r['baseline']}",
                show=False,
            )
        if r["unavailable_ratio_vs_baseline"] is not None:
            figs[f"{n}.unavailable_ratio"] = Figure(
                value=round(r["unavailable_ratio_vs_baseline"], 4),
                unit="ratio",
                description=f"vs {r['baseline']}",
                show=False,
            )
    result.figures = figs
    return result.finish()


def decomposition_notes(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Where each scenario's pause went: the restarted members' own pause (their process was down or
    starting; every protocol pays it) and the collateral pause of members nobody touched."""
    notes = []
    for r in runs:
        steps = len(r["steps"]) or 1
        name = f"{r['scenario']} #{r['repeat']}" if r.get("repeat") else r["scenario"]
        notes.append(
            f"{name}: pause {r['pause_ms']:,} ms = own {r['own_pause_ms']:,} ms "
            f"({r['own_pause_ms'] / steps / 1000:.1f} s per restarted member) + collateral "
            f"{r['collateral_pause_ms']:,} ms ({r['collateral_pause_ms'] / steps / 1000:.1f} s per step); "
            f"{r['rebalances']} assigned callbacks; load {r['load_avg_1m_start']} -> {r['load_avg_1m_end']}"
        )
    return notes


def heartbeat_model_notes(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Check the model of a dynamic member's restart: its join starts a rebalance that completes only
    when every other member has noticed it on a heartbeat, so it waits about hb * (n-1)/n (the expected
    last of n-1 uniform heartbeat phases) on top of the restart itself (eager static's own pause, where
    no rebalance happens)."""
    by = {r["scenario"]: r for r in runs if not r.get("repeat")}
    floor_run = by.get("py-eager-static")
    if floor_run is None:
        return []
    floor = floor_run["own_pause_ms"] / max(1, len(floor_run["steps"]))
    notes = []
    for name, beat in (("py-eager-dynamic", DEFAULT_HEARTBEAT_MS), ("py-eager-dynamic-hb1s", 1000)):
        r = by.get(name)
        if r is None:
            continue
        n = int(r["members"])
        predicted = floor + beat * (n - 1) / n
        measured = r["own_pause_ms"] / max(1, len(r["steps"]))
        notes.append(
            f"heartbeat model, {name} (heartbeat.interval.ms {beat}): own pause per restart predicted "
            f"{predicted / 1000:.2f} s (restart {floor / 1000:.2f} s + {beat / 1000:g} s x {n - 1}/{n}), "
            f"measured {measured / 1000:.2f} s"
        )
    return notes

"""The report's PNG: unowned partitions (and paused members) over time, phases shaded.

It is the view of the eager-vs-cooperative throughput figures (docs/protocols.md "Reference figures")
turned around: instead of throughput dropping during a rolling bounce, the number of partitions nobody
consumes rising; an eager bounce shows a tall spike per member, a cooperative one a low ripple.
matplotlib is imported here only (the `plot` extra; `spark` brings it too).
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from kafka_coop._extras import require
from kafka_coop.analytics._model import PhaseStat
from kafka_coop.analytics._timeline import LevelChange

FIG_SIZE_IN = (11.0, 4.8)
DPI = 110


def _xy(steps: Sequence[LevelChange], t0: int, t_end: int) -> tuple[list[float], list[int]]:
    xs = [0.0] + [(ts - t0) / 1000 for ts, _ in steps] + [(t_end - t0) / 1000]
    ys = [0] + [lv for _, lv in steps]
    ys.append(ys[-1])
    return xs, ys


def render_png(
    unowned: Sequence[LevelChange],
    paused: Sequence[LevelChange],
    phases: Sequence[PhaseStat],
    first_ts_ms: int,
    last_ts_ms: int,
    title: str,
) -> bytes:
    require("matplotlib", "The report plot")
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIG_SIZE_IN, dpi=DPI, layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    colors = ("#dbe9f6", "#fde3c8")
    for i, phase in enumerate(phases):
        start = (max(phase.start_ms, first_ts_ms) - first_ts_ms) / 1000
        end = (min(phase.end_ms, last_ts_ms) - first_ts_ms) / 1000
        if end > start:
            ax.axvspan(start, end, color=colors[i % 2], alpha=0.7, lw=0)
            ax.text(start, 1.0, f" {phase.name}", transform=ax.get_xaxis_transform(), va="top", fontsize=8)
    xs, ys = _xy(unowned, first_ts_ms, last_ts_ms)
    ax.step(xs, ys, where="post", color="tab:red", lw=1.2, label="unowned partitions")
    px, py = _xy(paused, first_ts_ms, last_ts_ms)
    ax.step(px, py, where="post", color="tab:blue", lw=1.0, alpha=0.8, label="paused members")
    ax.set_xlabel("time since first event (s)")
    ax.set_ylabel("count")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title(title, fontsize=10)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()

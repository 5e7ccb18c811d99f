"""The gate's pause check, pure: a phase's measured member pauses and a budget in, a verdict out.

`verify-group --max-pause-ms` (or a plan's `pause_budget_ms`) asks it. The figures come from the live
pipeline's `pause` rows or from the events topic through the reference engine (`_summary.pauses`); both
are the `_ledger`'s pauses, so the two sources judge alike. What is judged: every member pause that
overlaps the phase's span, clipped to it, by its 95th percentile (nearest rank, as the pipeline's
windows compute it); the maximum is shown beside it. No event of the group in the span is "not
judged", never a pass. The span: from the rollout marker that began the phase (`_markers`: the gate
after the previous phase wrote it) to the marker that ended it, or to now; `--since` overrides.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, computed_field

from kafka_coop.analytics._markers import PhaseMarker
from kafka_coop.analytics._stream import percentile
from kafka_coop.rollout import Check

CHECK_NAME: Final = "pause-budget"
QUANTILE: Final = 0.95
Source = Literal["pipeline", "events"]


class PhaseSpan(BaseModel):
    """`[start_ms, end_ms)` of what is judged, and what it is (a phase from markers, or since a time)."""

    model_config = ConfigDict(frozen=True)

    start_ms: int
    end_ms: int
    what: str  # "phase 2 of eager-to-cooperative" | "since --since"


class PauseFigures(BaseModel):
    """What a source measured for one group in one span (the JSON `pause` object of verify-group v2)."""

    model_config = ConfigDict(frozen=True)

    source: Source
    location: str  # the pipeline's --out, or kafka://TOPIC
    group: str
    span: PhaseSpan | None  # None: no marker says when the phase began
    events: int  # the group's rebalance events (callbacks) in the span
    pauses_ms: tuple[int, ...]  # each member pause overlapping the span, clipped to it, ascending
    measured_until_ms: int | None = None  # the pipeline's frontier when it is before the span's end

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented use
    @property
    def p95_ms(self) -> int:
        return percentile(self.pauses_ms, QUANTILE)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def max_ms(self) -> int:
        return self.pauses_ms[-1] if self.pauses_ms else 0


def clipped_pauses(spans: Iterable[tuple[int, int]], start_ms: int, end_ms: int) -> tuple[int, ...]:
    """Each `[start, end)` that overlaps `[start_ms, end_ms)`, as its milliseconds inside, ascending
    (a zero-length pause inside the span counts, as a 0 ms pause)."""
    out = []
    for start, end in spans:
        inside = start_ms <= start < end_ms if end == start else end > start_ms and start < end_ms
        if inside:
            out.append(max(0, min(end, end_ms) - max(start, start_ms)))
    return tuple(sorted(out))


def phase_span(
    markers: Sequence[PhaseMarker], *, group: str, migration: str, phase: int, now_ms: int
) -> PhaseSpan | None:
    """The span of phase `phase` (>= 1) of `migration` on `group`: from the marker of the gate after
    phase `phase - 1` (the first pass of the latest run of passes) to the next marker of a later phase,
    or to `now_ms`. None when no marker says the phase began."""
    own = sorted((m for m in markers if m.group == group and m.migration == migration), key=lambda m: m.ts_ms)
    last = max((i for i, m in enumerate(own) if m.phase == phase - 1), default=None)
    if last is None:
        return None
    first = last
    while first > 0 and own[first - 1].phase == phase - 1:
        first -= 1  # the gate passed again: the phase began at the first pass
    end = next((m.ts_ms for m in own[last + 1 :] if m.phase >= phase), now_ms)
    return PhaseSpan(
        start_ms=own[first].ts_ms, end_ms=max(end, own[first].ts_ms), what=f"phase {phase} of {migration}"
    )


def _ms(value: int) -> str:
    return f"{value:,} ms"


def _clock(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def pause_check(figures: PauseFigures, budget_ms: int) -> Check:
    """pass when the span's pause p95 is within the budget, fail above it, not judged without events."""
    where = f"{figures.source} {figures.location}"
    span = figures.span
    if span is None:
        return Check(
            name=CHECK_NAME,
            status="not-judged",
            reason=f"not judged: no rollout marker of group {figures.group} says when the phase began "
            f"(budget {_ms(budget_ms)})",
            hint="The gate after the previous phase writes the marker when given --events or "
            "--pipeline-out; or give the phase's start with --since.",
        )
    until = span.end_ms if figures.measured_until_ms is None else figures.measured_until_ms
    during = f"{span.what}, {_clock(span.start_ms)} to {_clock(until)}"
    if figures.measured_until_ms is not None:
        during += " (the pipeline's figures reach no further)"
    if figures.events == 0 and not figures.pauses_ms:
        return Check(
            name=CHECK_NAME,
            status="not-judged",
            reason=f"not judged: no rebalance events of group {figures.group} in {during}, in {where} "
            f"(budget {_ms(budget_ms)})",
            hint="Check that the members send their events there (KafkaTopicSink) and that the "
            "pipeline runs.",
        )
    p95, count = figures.p95_ms, len(figures.pauses_ms)
    measured = f"pause p95 {_ms(p95)}"
    detail = f"{count} pause(s), max {_ms(figures.max_ms)}, {figures.events} event(s) in {during}; {where}"
    if p95 > budget_ms:
        return Check(
            name=CHECK_NAME,
            status="fail",
            reason=f"{measured} > budget {_ms(budget_ms)} ({detail})",
            hint="The phase paused members longer than its budget allows: find the slow members with "
            "`kafka-coop report` before the next bounce, or roll the phase back.",
        )
    return Check(name=CHECK_NAME, status="pass", reason=f"{measured} <= budget {_ms(budget_ms)} ({detail})")

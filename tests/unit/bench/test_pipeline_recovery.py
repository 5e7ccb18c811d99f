"""The recovery benchmark's record of a run whose first start showed no figures before its kill."""

from __future__ import annotations

from bench.harness.frame import new_result
from bench.pipeline_recovery import DEFAULTS, NAME, TITLE, Feed, Killed, Recovered, record
from kafka_coop.analytics import summarize


def test_a_first_start_that_showed_no_figures_before_the_kill_is_recorded_as_minus_one() -> None:
    """On a loaded machine the first start may not reach its first figures before the kill: the run is
    still recorded (cold start -1, as the runs' field says), not lost to the summary line."""
    result = new_result(NAME, TITLE, DEFAULTS)
    feed = Feed(topic="t", events=[], records=[], keys=[("g", 1_000)], start_ms=0, last={"g": 1_000})
    killed = Killed(launched=0.0, cold_s=None, kill_at=40.0, killed=41.0)
    recovered = Recovered(restarted=42.0, recovered=50.0, expected=summarize([]), got=summarize([]), code=0)
    record(result, DEFAULTS, feed, killed, recovered, True, 0, [1.0, 1.0, 1.0])
    assert result.figures["cold_start_s"].value == -1
    assert result.figures["recovery_s"].value == 8.0

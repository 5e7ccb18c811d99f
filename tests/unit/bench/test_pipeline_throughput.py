"""The ceiling query's rows: the pipeline's columns, each filled by the kinds the step fills it for;
and the benchmark's target, the pipeline's rate over that ceiling's."""

from __future__ import annotations

from bench.harness.frame import RESULTS_DIR, BenchResult
from bench.pipeline_throughput import OUTPUT_MIX, ceiling_ratio, filled_by
from kafka_coop.analytics import KIND_FIELDS, OUTPUT_FIELDS


def test_the_ceiling_fills_every_output_column_but_kind_group_and_date_in_the_outputs_order() -> None:
    assert list(filled_by()) == [name for name, _ in OUTPUT_FIELDS if name not in ("kind", "group", "date")]


def test_a_column_is_filled_by_exactly_the_kinds_whose_rows_carry_it() -> None:
    fills = filled_by()
    assert fills["ts"] == tuple(KIND_FIELDS)  # interval and pause rows: ts is their end
    assert fills["owner"] == ("partition",)
    assert set(fills["start_ms"]) == {"interval", "pause"}


def test_the_mix_is_the_pipelines_kinds_at_its_measured_two_point_one_five_rows_per_event() -> None:
    assert set(OUTPUT_MIX) <= set(KIND_FIELDS)
    assert round(sum(OUTPUT_MIX.values()), 2) == 2.15


def test_the_target_is_the_ratio_to_the_ceiling_measured_in_the_same_run() -> None:
    """The absolute 100,000 events/s is retired: the machine's speed cancels out of the ratio."""
    ratio = ceiling_ratio(93_759, 104_923)
    assert (round(ratio.value, 3), ratio.target, ratio.better, ratio.passed) == (0.894, 0.85, "higher", True)
    assert ceiling_ratio(80_000, 104_923).passed is False


def test_the_committed_result_is_judged_by_its_ratio_and_its_absolute_figures_carry_no_target() -> None:
    result = BenchResult.model_validate_json((RESULTS_DIR / "pipeline-throughput.json").read_text())
    ratio = result.figures["pipeline_vs_ceiling"]
    assert (round(ratio.value, 2), ratio.target, ratio.passed) == (0.88, 0.85, True)
    assert result.figures["events_per_s"].target is None
    assert result.figures["ceiling_events_per_s"].target is None

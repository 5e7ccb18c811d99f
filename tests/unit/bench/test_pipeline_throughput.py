"""The ceiling query's rows: the pipeline's columns, each filled by the kinds the step fills it for."""

from __future__ import annotations

from bench.pipeline_throughput import OUTPUT_MIX, filled_by
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

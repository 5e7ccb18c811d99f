"""The gate's pause check (pure): a phase's member pauses and a budget in, a verdict that shows both."""

from __future__ import annotations

from kafka_coop.analytics._markers import PhaseMarker
from kafka_coop.analytics._pause_gate import PauseFigures, PhaseSpan, clipped_pauses, pause_check, phase_span

SPAN = PhaseSpan(start_ms=1_000_000, end_ms=1_060_000, what="phase 1 of eager-to-cooperative")


def figures(pauses_ms: tuple[int, ...], events: int = 10, **more: object) -> PauseFigures:
    values: dict[str, object] = {
        "source": "events",
        "location": "kafka://events",
        "group": "orders",
        "span": SPAN,
        "events": events,
        "pauses_ms": tuple(sorted(pauses_ms)),
        **more,
    }
    return PauseFigures.model_validate(values)


def marker(
    ts_ms: int, phase: int, migration: str = "eager-to-cooperative", group: str = "orders"
) -> PhaseMarker:
    return PhaseMarker(ts_ms=ts_ms, group=group, migration=migration, phase=phase, phases=2)


def test_a_p95_within_the_budget_passes_and_says_both() -> None:
    check = pause_check(figures((100, 200, 2_900)), budget_ms=3_000)
    assert check.status == "pass"
    assert check.reason.startswith("pause p95 2,900 ms <= budget 3,000 ms")


def test_a_p95_over_the_budget_fails_and_says_by_how_much() -> None:
    check = pause_check(figures((4_200,) * 20), budget_ms=3_000)
    assert check.status == "fail"
    assert check.reason.startswith("pause p95 4,200 ms > budget 3,000 ms")
    assert check.hint


def test_one_outlier_in_twenty_pauses_does_not_move_the_p95() -> None:
    """Nearest rank: the 19th of 20 sorted pauses is the p95; the one slow member shows as the max."""
    check = pause_check(figures((100,) * 19 + (9_000,)), budget_ms=3_000)
    assert check.status == "pass"
    assert "max 9,000 ms" in check.reason


def test_a_pause_equal_to_the_budget_passes() -> None:
    assert pause_check(figures((3_000,)), budget_ms=3_000).status == "pass"


def test_no_events_in_the_span_is_not_judged_never_a_pass() -> None:
    check = pause_check(figures((), events=0), budget_ms=3_000)
    assert check.status == "not-judged"
    assert "no rebalance events of group orders" in check.reason


def test_events_without_a_pause_pass_with_a_p95_of_zero() -> None:
    check = pause_check(figures((), events=4), budget_ms=0)
    assert (check.status, check.reason.startswith("pause p95 0 ms <= budget 0 ms")) == ("pass", True)


def test_no_span_is_not_judged_and_says_how_to_give_one() -> None:
    check = pause_check(figures((5_000,), span=None), budget_ms=3_000)
    assert check.status == "not-judged"
    assert "--since" in check.hint


def test_figures_that_stop_before_the_span_ends_say_so() -> None:
    check = pause_check(figures((100,), measured_until_ms=1_030_000), budget_ms=3_000)
    assert "the pipeline's figures reach no further" in check.reason


def test_the_check_names_its_source() -> None:
    assert "events kafka://events" in pause_check(figures((100,)), budget_ms=3_000).reason


def test_pauses_are_clipped_to_the_span() -> None:
    assert clipped_pauses([(0, 150), (120, 180), (190, 400)], 100, 200) == (10, 50, 60)


def test_pauses_outside_the_span_do_not_count() -> None:
    assert clipped_pauses([(0, 100), (200, 300)], 100, 200) == ()


def test_a_zero_length_pause_inside_the_span_counts_as_zero() -> None:
    assert clipped_pauses([(150, 150)], 100, 200) == (0,)


def test_a_phase_runs_from_the_previous_phases_marker_to_now() -> None:
    span = phase_span([marker(500, 0)], group="orders", migration="eager-to-cooperative", phase=1, now_ms=900)
    assert (span and (span.start_ms, span.end_ms)) == (500, 900)


def test_a_phase_ends_at_the_marker_of_its_own_gate() -> None:
    markers = [marker(500, 0), marker(700, 1), marker(800, 2)]
    span = phase_span(markers, group="orders", migration="eager-to-cooperative", phase=1, now_ms=900)
    assert (span and (span.start_ms, span.end_ms)) == (500, 700)


def test_a_gate_passed_twice_begins_the_phase_at_its_first_pass() -> None:
    markers = [marker(600, 0), marker(500, 0)]
    span = phase_span(markers, group="orders", migration="eager-to-cooperative", phase=1, now_ms=900)
    assert span is not None and span.start_ms == 500


def test_a_walk_started_again_takes_its_latest_start() -> None:
    markers = [marker(100, 0), marker(200, 1), marker(300, 0)]
    span = phase_span(markers, group="orders", migration="eager-to-cooperative", phase=1, now_ms=900)
    assert (span and (span.start_ms, span.end_ms)) == (300, 900)


def test_markers_of_other_groups_and_migrations_do_not_count() -> None:
    markers = [marker(100, 0, group="payments"), marker(200, 0, migration="classic-to-consumer")]
    assert phase_span(markers, group="orders", migration="eager-to-cooperative", phase=1, now_ms=900) is None


def test_without_the_previous_phases_marker_there_is_no_span() -> None:
    span = phase_span([marker(100, 1)], group="orders", migration="eager-to-cooperative", phase=1, now_ms=900)
    assert span is None

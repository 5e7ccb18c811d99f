"""Burrow's partition rules over sampled committed offsets: one status per shape of a window."""

from __future__ import annotations

import pytest

from kafka_coop.inspection import OffsetSample, evaluate_group, evaluate_partition


def _series(*points: tuple[int, int], step_ms: int = 1000) -> list[OffsetSample]:
    """(committed, end) pairs one second apart."""
    return [OffsetSample(ts_ms=i * step_ms, committed=c, end=e) for i, (c, e) in enumerate(points)]


def test_a_partition_caught_up_now_is_ok_whatever_came_before() -> None:
    result = evaluate_partition("t", 0, _series((0, 500), (100, 500), (500, 500)), owned=True)
    assert result.status == "OK"
    assert result.evidence.startswith("caught up over 2 s (3 samples)")


def test_offsets_moving_and_lag_falling_is_ok() -> None:
    assert evaluate_partition("t", 0, _series((0, 100), (50, 120), (110, 130)), owned=True).status == "OK"


def test_offsets_moving_while_lag_never_falls_is_warning() -> None:
    result = evaluate_partition("t", 0, _series((0, 100), (10, 130), (20, 160)), owned=True)
    assert result.status == "WARNING"
    assert "offsets move but lag never fell" in result.evidence


def test_an_owned_partition_whose_offset_never_moves_while_lagging_is_stalled() -> None:
    result = evaluate_partition("t", 0, _series((40, 100), (40, 100), (40, 120)), owned=True)
    assert result.status == "STALLED"
    assert "its owner is not committing" in result.evidence


def test_an_unowned_partition_whose_offset_never_moves_while_lagging_is_stopped() -> None:
    result = evaluate_partition("t", 0, _series((40, 100), (40, 100), (40, 100)), owned=False)
    assert result.status == "STOPPED"
    assert result.evidence == (
        "no member owns it and its offset did not move over 2 s (3 samples): committed 40 -> 40, lag 60 -> 60"
    )


def test_unknown_ownership_makes_an_unmoving_offset_stalled_not_stopped() -> None:
    assert evaluate_partition("t", 0, _series((40, 100), (40, 100)), owned=None).status == "STALLED"


def test_a_committed_offset_that_goes_back_and_stays_back_is_rewind() -> None:
    result = evaluate_partition("t", 0, _series((90, 100), (30, 100), (35, 100)), owned=True)
    assert result.status == "REWIND"
    assert "went back 90 -> 30" in result.evidence


def test_a_rewind_that_recovers_within_the_window_is_not_held_against_the_group() -> None:
    result = evaluate_partition("t", 0, _series((90, 200), (30, 200), (95, 200)), owned=True)
    assert result.status == "OK"


def test_one_sample_has_no_trend_and_is_ok_unless_caught_up_rules_say_more() -> None:
    assert evaluate_partition("t", 0, _series((10, 100)), owned=False).status == "OK"


def test_lag_within_the_allowed_lag_is_ok() -> None:
    assert (
        evaluate_partition("t", 0, _series((95, 100), (95, 100)), owned=True, allowed_lag=10).status == "OK"
    )


def test_the_evidence_carries_window_samples_offsets_and_lags() -> None:
    r = evaluate_partition("t", 3, _series((0, 100), (10, 130), (20, 160), step_ms=2500), owned=True)
    assert (r.window_s, r.samples, r.committed_first, r.committed_last, r.lag_first, r.lag_last) == (
        5.0,
        3,
        0,
        20,
        100,
        140,
    )


@pytest.mark.parametrize(
    ("statuses", "group"),
    [
        (("OK", "OK"), "OK"),
        (("OK", "WARNING"), "WARNING"),
        (("WARNING", "STOPPED"), "STOPPED"),
        (("STOPPED", "STALLED"), "STALLED"),
        (("STALLED", "REWIND", "OK"), "REWIND"),
    ],
)
def test_the_group_takes_its_worst_partitions_status_in_burrows_order(
    statuses: tuple[str, ...], group: str
) -> None:
    shapes = {
        "OK": _series((0, 10), (10, 10)),
        "WARNING": _series((0, 100), (10, 130)),
        "STOPPED": _series((40, 100), (40, 100)),
        "STALLED": _series((40, 100), (40, 100)),
        "REWIND": _series((90, 100), (30, 100)),
    }
    series = {("t", i): shapes[s] for i, s in enumerate(statuses)}
    owned = [("t", i) for i, s in enumerate(statuses) if s != "STOPPED"]
    result = evaluate_group(series, owned=owned)
    assert [p.status for p in result.partitions] == list(statuses)
    assert result.status == group


def test_an_empty_group_is_ok_with_no_partitions() -> None:
    result = evaluate_group({})
    assert (result.status, result.partitions) == ("OK", ())


def test_the_worst_partitions_come_first_for_the_table() -> None:
    series = {("t", 0): _series((0, 10), (10, 10)), ("t", 1): _series((90, 100), (30, 100))}
    assert [p.partition for p in evaluate_group(series, owned=[("t", 0), ("t", 1)]).worst()] == [1]

"""`rollout run`'s "pause so far": the time with any partition unowned, from the walk's looks."""

from __future__ import annotations

from kafka_coop.rollout import PauseTally


def tally(*looks: tuple[int, int]) -> PauseTally:
    out = PauseTally()
    for taken_ms, unowned in looks:
        out = out.seen(taken_ms, unowned)
    return out


def test_no_look_and_one_look_are_no_pause() -> None:
    assert tally().wall_ms == 0
    assert tally((1_000, 6)).wall_ms == 0


def test_looks_that_find_every_partition_owned_are_no_pause() -> None:
    assert tally((0, 0), (1_000, 0), (2_500, 0)) == PauseTally(
        started_ms=0, last_ms=2_500, last_unowned=0, wall_ms=0, partition_ms=0
    )


def test_a_partition_counts_as_unowned_from_the_look_that_finds_it_to_the_next() -> None:
    t = tally((0, 0), (1_000, 3), (1_500, 1), (4_000, 0), (9_000, 0))
    assert t.wall_ms == 500 + 2_500
    assert t.partition_ms == 3 * 500 + 1 * 2_500


def test_the_pause_adds_up_over_the_steps_of_the_walk() -> None:
    t = tally((0, 2), (1_000, 0), (5_000, 0), (6_000, 4), (6_200, 0))
    assert (t.wall_ms, t.partition_ms) == (1_000 + 200, 2 * 1_000 + 4 * 200)


def test_a_look_older_than_the_last_changes_nothing() -> None:
    before = tally((0, 1), (2_000, 1))
    assert before.seen(1_000, 5) == before

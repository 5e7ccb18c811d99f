"""The harness's own judge, on hand-made runs: it must flag what the rule forbids and nothing else,
or a green differential run says nothing. No broker."""

from __future__ import annotations

from typing import Any

from tests.differential.program import Program, generate, shrink_candidates
from tests.differential.runner import Observation, Run, check

MARKS = Program("eager-range", "sync", False, False, "mark_done", (("poll", 3), ("close",)))
DROP_IN = Program("eager-range", "sync", True, True, "mark_done", (("poll", 3), ("close",)))


def _obs(step: tuple[Any, ...], committed: dict[int, int], **report: Any) -> Observation:
    base = {"permit": {}, "floor": {}, "hi": {}, "bound": {}, "owned": [0]}
    return Observation(step, {**base, **report}, committed)


def _run(*observations: Observation, impl: str = "coop") -> Run:
    return Run(impl, list(observations))


def test_a_commit_above_what_the_app_finished_is_a_loss() -> None:
    run = _run(_obs(("poll", 3), {0: 3}, permit={"0": 1}))
    assert [v.split(":")[0] for v in check(MARKS, run, None)] == ["loss"]


def test_a_commit_at_what_the_app_finished_is_no_violation() -> None:
    run = _run(_obs(("poll", 3), {0: 1}, permit={"0": 1}))
    assert check(MARKS, run, None) == []


def test_a_commit_below_the_apps_own_synchronous_commit_is_a_rewind() -> None:
    run = _run(_obs(("close",), {0: 0}, permit={"0": 30}, floor={"0": 30}))
    assert [v.split(":")[0] for v in check(MARKS, run, None)] == ["rewind"]


def test_a_rewind_confluent_makes_too_is_the_oracles_behaviour() -> None:
    run = _run(_obs(("close",), {0: 0}, permit={"0": 30}, floor={"0": 30}))
    oracle = _run(_obs(("close",), {0: 0}, permit={"0": 30}, floor={"0": 30}), impl="confluent")
    assert check(MARKS, run, oracle) == []


def test_leaving_more_uncommitted_than_confluent_at_close_is_a_regression() -> None:
    mine = _run(_obs(("close",), {0: 5}, permit={"0": 10}, hi={"0": 10}, bound={"0": 10}, owned=[]))
    theirs = _run(_obs(("close",), {0: 10}, permit={"0": 10}, hi={"0": 10}, bound={"0": 10}, owned=[]))
    assert [v.split(":")[0] for v in check(DROP_IN, mine, theirs)] == ["regression"]


def test_contiguity_under_explicit_marks_may_hold_back_what_confluent_commits() -> None:
    """confluent's store_offsets commits past an unmarked record; the rule stops at it."""
    mine = _run(_obs(("close",), {0: 4}, permit={"0": 4}, hi={"0": 10}, bound={"0": 4}, owned=[]))
    theirs = _run(_obs(("close",), {0: 10}, permit={"0": 4}, hi={"0": 10}, bound={"0": 4}, owned=[]))
    assert check(MARKS, mine, theirs) == []


def test_a_crash_confluent_does_not_have_is_a_violation() -> None:
    crashed = Run("coop", [], crash="Traceback ...\nValueError: boom")
    assert check(MARKS, crashed, _run()) == ["crash: ValueError: boom"]


def test_a_program_prints_as_a_literal_that_rebuilds_it() -> None:
    for seed in range(50):
        program = generate(seed)
        assert eval(repr(program), {"Program": Program}) == program


def test_every_shrink_candidate_is_a_program_that_still_ends() -> None:
    for seed in range(50):
        for smaller in shrink_candidates(generate(seed)):
            assert smaller.steps[-1][0] in ("close", "kill")
            assert smaller != generate(seed)

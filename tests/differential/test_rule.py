"""The harness's own judge, on hand-made runs: it must flag what the rule forbids and nothing else,
or a green differential run says nothing. No broker."""

from __future__ import annotations

from typing import Any

from tests.differential.app import Ledger
from tests.differential.program import ENDS, NET_FAULTS, Program, generate, shrink_candidates
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


def test_with_auto_commit_off_marks_after_the_apps_last_commit_may_leave_less_than_confluent() -> None:
    """confluent's store_offsets passed an unmarked record at the app's commit; kafka-coop stopped at
    it, and the mark that came after is committed by no one (auto-commit off)."""
    program = Program("consumer", "aio", False, False, "mark_done", (("commit_thread", 1), ("close",)))
    report = {"permit": {"1": 0}, "hi": {"1": 2}, "bound": {"1": 2}, "allowed": {"1": 0}, "owned": []}
    mine = _run(_obs(("close",), {1: 0}, **report))
    theirs = _run(_obs(("close",), {1: 2}, **report), impl="confluent")
    assert check(program, mine, theirs) == []


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
            assert smaller.steps[-1][0] in ENDS
            assert smaller != generate(seed)


def test_the_first_generators_programs_are_kept_for_the_seeds_named_before_faults() -> None:
    for seed in range(50):
        plain = generate(seed, faults=False)
        assert plain.steps[-1][0] in ("close", "kill")
        assert not any(step[0] in ("raise", "sigterm", "overrun", "join_commit") for step in plain.steps)


def test_every_fault_the_generator_knows_comes_up_within_a_hundred_seeds() -> None:
    kinds = {step[0] for seed in range(100) for step in generate(seed).steps}
    assert {"raise", "sigterm", "overrun", "join_commit"} <= kinds


def test_the_network_stream_adds_commits_under_faults_and_leaves_the_rest_of_the_program_as_it_was() -> None:
    faults = set()
    for seed in range(100):
        program, networked = generate(seed), generate(seed, network=True)
        cuts = [step for step in networked.steps if step[0] == "cut_commit"]
        faults |= {str(step[1]) for step in cuts}
        assert tuple(step for step in networked.steps if step[0] != "cut_commit") == program.steps
        assert networked.network == bool(cuts) and not program.network
        assert eval(repr(networked), {"Program": Program}) == networked
        for smaller in shrink_candidates(networked):
            assert smaller.steps[-1][0] in ENDS
    assert faults == set(NET_FAULTS)


class _Record:
    def __init__(self, partition: int, offset: int) -> None:
        self._p, self._o = partition, offset

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o


def test_drop_in_permits_no_commit_past_a_record_whose_processing_raised() -> None:
    ledger = Ledger(DROP_IN, "coop")
    ledger.take([_Record(0, o) for o in range(3)])
    ledger.take([_Record(0, 3)])
    ledger.raised[0] = 3
    assert ledger.report()["permit"] == {0: 3}


def test_an_app_that_sigterm_did_not_end_with_exit_code_0_is_unclean() -> None:
    program = Program("eager-range", "sync", True, True, "mark_done", (("poll", 3), ("sigterm",)))
    run = Run("coop", [_obs(("sigterm",), {}, owned=[])], exit_code=1)
    assert [v.split(":")[0] for v in check(program, run, None)] == ["unclean"]


def test_the_apps_own_commit_below_its_floor_is_the_new_floor() -> None:
    """The app committed 5, then asked for 3 itself (an asynchronous commit, or one whose reply a
    network fault lost, lands at some later step): 3 in the group is no rewind."""
    ledger = Ledger(MARKS, "coop")
    ledger.floor[1] = 5
    ledger.asked(1, 3)
    ledger.asked(1, 4)
    assert ledger.report()["floor"] == {1: 3}


def test_with_auto_commit_off_kafka_coop_is_held_to_what_the_apps_commits_could_commit_as_begun() -> None:
    """The last commit() began before the poll on the other task handed out record 10: confluent's
    stored offset passes it (11), kafka-coop's commit counts the batch held at the call (10)."""
    program = Program("eager-range", "aio", False, True, "mark_done", (("commit_thread", 5), ("close",)))
    report = {"permit": {"1": 11}, "hi": {"1": 11}, "bound": {"1": 11}, "allowed": {"1": 11}, "owned": []}
    mine = _run(_obs(("close",), {1: 10}, **report, entitled={"1": 10}))
    theirs = _run(_obs(("close",), {1: 11}, **report, entitled={"1": 10}), impl="confluent")
    assert check(program, mine, theirs) == []
    began_after = _run(_obs(("close",), {1: 10}, **report, entitled={"1": 11}))
    assert [v.split(":")[0] for v in check(program, began_after, theirs)] == ["regression"]

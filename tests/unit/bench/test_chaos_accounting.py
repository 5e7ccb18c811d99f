"""The chaos run's accounting rules, on hand-made member histories."""

from __future__ import annotations

from typing import Any

from bench._chaos_accounting import (
    Incarnation,
    account,
    check_ownership,
    final_owned_mismatches,
    parse_rec,
)


def _inc(name: str, text: str, *, fault: str | None = None, fault_ms: int = 0) -> Incarnation:
    member, n = name.split(".")
    inc = parse_rec(member, int(n), text)
    if fault:
        inc.fault, inc.fault_ms = fault, fault_ms
    return inc


def test_an_acknowledged_record_nobody_processed_is_lost() -> None:
    a = _inc("m0.1", "R 0 0 10\nR 0 2 11\nC 0 3 12\n")
    result = account({0: 3}, [a])
    assert (result.lost, result.lost_examples) == (1, [(0, 1)])


def test_a_killed_members_uncommitted_records_processed_again_are_explained_duplicates() -> None:
    killed = _inc("m1.1", "R 0 0 10\nC 0 1 11\nR 0 1 12\n", fault="kill", fault_ms=14)
    heir = _inc("m2.1", "R 0 1 20\nC 0 2 21\n")
    result = account({0: 2}, [killed, heir])
    assert (result.lost, result.duplicates, result.duplicates_unexplained) == (0, 1, 0)
    assert result.duplicates_by_cause == {"member kill": 1}


def test_a_record_processed_again_after_its_offset_was_committed_is_unexplained() -> None:
    first = _inc("m1.1", "R 0 0 10\nC 0 1 11\n", fault="kill", fault_ms=12)
    again = _inc("m2.1", "R 0 0 20\nC 0 1 21\n")
    result = account({0: 1}, [first, again])
    assert result.duplicates_unexplained == 1
    assert result.unexplained_examples[0]["first_committed_past"] == 1


def test_a_duplicate_after_a_refused_commit_is_explained_by_it() -> None:
    first = _inc("m1.1", "R 0 0 10\nX 11 REBALANCE_IN_PROGRESS\n")
    again = _inc("m2.1", "R 0 0 20\nC 0 1 21\n")
    result = account({0: 1}, [first, again])
    assert result.duplicates_by_cause == {"commit refused": 1}
    assert result.duplicates_unexplained == 0


def test_the_uncommitted_window_counts_records_of_one_partition_since_its_last_commit() -> None:
    inc = _inc("m0.1", "R 0 0 1\nR 0 1 1\nR 1 0 1\nC 0 2 2\nR 0 2 3\nR 0 3 3\nR 0 4 3\n")
    assert inc.max_window == 3


def test_a_fatal_line_marks_the_incarnation_fenced() -> None:
    assert _inc("m0.1", "R 0 0 1\nF 5 FENCED_INSTANCE_ID\n").fault == "fatal"


def _events(*items: tuple[int, str, list[int]]) -> list[dict[str, Any]]:
    return [{"ts_ms": ts, "kind": kind, "owned": [["t", p] for p in owned]} for ts, kind, owned in items]


def test_revoke_before_assign_is_a_clean_hand_over() -> None:
    a, b = _inc("m0.1", ""), _inc("m1.1", "")
    a.events = _events((0, "assigned", [0, 1]), (100, "revoked", [0]))
    b.events = _events((110, "assigned", [1]))
    result = check_ownership([a, b], {"m0.1": 500, "m1.1": 500})
    assert (result.overlaps, result.overlaps_excused) == (0, 0)


def test_two_healthy_owners_at_once_are_an_overlap() -> None:
    a, b = _inc("m0.1", ""), _inc("m1.1", "")
    a.events = _events((0, "assigned", [0]), (200, "revoked", []))
    b.events = _events((100, "assigned", [0]))
    result = check_ownership([a, b], {"m0.1": 500, "m1.1": 500})
    assert result.overlaps == 1
    assert result.overlap_examples[0]["first"] == "m0.1"


def test_an_overlap_after_the_first_owner_was_frozen_or_ended_in_lost_is_excused() -> None:
    frozen, heir = _inc("m0.1", "", fault="freeze", fault_ms=50), _inc("m1.1", "")
    frozen.events = _events((0, "assigned", [0]), (300, "lost", []))
    heir.events = _events((100, "assigned", [0]))
    assert check_ownership([frozen, heir], {"m0.1": 500, "m1.1": 500}).overlaps_excused == 1
    evicted, heir2 = _inc("m2.1", ""), _inc("m3.1", "")
    evicted.events = _events((0, "assigned", [0]), (300, "lost", []))
    heir2.events = _events((100, "assigned", [0]))
    result = check_ownership([evicted, heir2], {"m2.1": 500, "m3.1": 500})
    assert (result.overlaps, result.overlaps_excused) == (0, 1)


def test_final_owned_is_compared_with_the_brokers_assignment() -> None:
    owned = {"m0": [("t", 0)], "m1": [("t", 1)]}
    broker = {"m0": [("t", 0)], "m1": [("t", 1), ("t", 2)]}
    assert final_owned_mismatches(owned, broker) == ["m1"]


def test_a_member_reprocessing_its_own_records_after_refused_commits_is_explained_by_them() -> None:
    """A coordinator moving: the commits fail past the session, the member rejoins from its last commit
    and reads the same records again; it commits past them only later, which does not un-explain them."""
    text = "R 0 0 10\nX 20 COORDINATOR_LOAD_IN_PROGRESS\nR 0 0 30\nC 0 1 31\n"
    result = account({0: 1}, [_inc("m0.1", text)])
    assert result.duplicates_by_cause == {"commit refused": 1}


def test_a_thawed_members_prefetched_records_processed_after_the_heir_are_explained_by_its_freeze() -> None:
    """Frozen past its session, the member's partition went to an heir, which processed the records the
    frozen member had fetched but not yet handed over; thawed, the member delivers them before it learns
    it was evicted (a zombie: nothing it commits is accepted). Seen in a fresh-clone CI run."""
    text = "R 0 0 10\nC 0 1 11\nR 0 1 900\nX 901 UNKNOWN_MEMBER_ID\n"
    frozen = _inc("m2.1", text, fault="freeze", fault_ms=50)
    frozen.events = _events((0, "assigned", [0]), (950, "lost", []))
    heir = _inc("m0.1", "R 0 1 600\nC 0 2 601\n")
    heir.events = _events((500, "assigned", [0]))
    result = account({0: 2}, [frozen, heir])
    assert result.duplicates_by_cause == {"zombie after freeze": 1}
    assert result.duplicates_unexplained == 0


def test_a_thawed_member_reading_a_partition_it_was_given_again_is_not_a_zombie() -> None:
    """After thaw it rejoined and was assigned the partition anew: it reads from the committed offset,
    so processing a record the heir had committed is a real defect."""
    frozen = _inc("m2.1", "R 0 1 900\n", fault="freeze", fault_ms=50)
    frozen.events = _events((0, "assigned", [0]), (800, "lost", []), (850, "assigned", [0]))
    heir = _inc("m0.1", "R 0 1 600\nC 0 2 601\n")
    result = account({0: 2}, [frozen, heir])
    assert result.duplicates_unexplained == 1


def test_a_duplicate_after_the_earlier_processor_lost_the_partition_is_explained_by_the_loss() -> None:
    """Seen in CI: the coordinator's broker killed, a member's session ran out on the client side
    ("revoking assignment and rejoining group"), its `lost` event came before its commit, and the same
    member got the partition back from the last commit."""
    member = _inc("m8.1", "C 0 0 5\nR 0 0 10\n")
    member.events = [
        {"kind": "lost", "ts_ms": 15, "partitions": [["t", 0]]},
        {"kind": "assigned", "ts_ms": 16, "partitions": [["t", 0]]},
    ]
    member.records.append((0, 0, 20))
    result = account({0: 1}, [member])
    assert result.duplicates_by_cause == {"partition lost": 1}
    assert result.duplicates_unexplained == 0


def test_a_loss_of_another_partition_explains_no_duplicate() -> None:
    member = _inc("m8.1", "C 0 0 5\nR 0 0 10\n")
    member.events = [{"kind": "lost", "ts_ms": 15, "partitions": [["t", 1]]}]
    member.records.append((0, 0, 20))
    assert account({0: 1}, [member]).duplicates_unexplained == 1

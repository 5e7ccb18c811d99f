"""Members shown alive: a member killed without leaving stays listed for its session, so the gate asks
each member that promises liveness records for one newer than its first look (--wait), or newer than
its promise (one look), or a committed offset that moved on a partition it owns."""

from __future__ import annotations

from kafka_coop.inspection import GroupSnapshot, MemberSnapshot, PartitionLag
from kafka_coop.manifest import Manifest
from kafka_coop.rollout._liveness import liveness_check
from tests.unit.builders import group_snapshot, manifest, member_snapshot

T = "orders"
NOW = 100_000


def _heard_at(name: str, heartbeat_ms: int, liveness_s: float | None = 10.0) -> Manifest:
    """The manifest of kafka-coop member `name`, last heard at `heartbeat_ms`, promising liveness."""
    return manifest(
        f"id-{name}",
        instance_id=name,
        client_id=name,
        libraries={"kafka-coop": "1"},
        heartbeat_ms=heartbeat_ms,
        liveness_s=liveness_s,
    )


def _static_owner(name: str, declared: Manifest | None, partition: int = 0) -> MemberSnapshot:
    """Static member `name` that owns `partition` of the topic, declaring itself in `declared`."""
    return member_snapshot(
        name,
        member_id=f"id-{name}",
        instance_id=name,
        source="declared",
        type_source="broker",
        assignment=((T, partition),),
        manifest=declared,
    )


def _looked_at(taken_ms: int, *members: MemberSnapshot, committed: int | None = None) -> GroupSnapshot:
    """The group as seen at `taken_ms`, with partition 0's `committed` offset when given."""
    lag = (
        (PartitionLag(topic=T, partition=0, committed=committed, end_offset=50, lag=0),) if committed else ()
    )
    return group_snapshot(*members, taken_ms=taken_ms, lag=lag)


def test_a_wait_run_fails_a_member_whose_last_record_predates_its_first_look() -> None:
    snap = _looked_at(NOW, _static_owner("a", _heard_at("a", NOW - 2_000)))
    check = liveness_check(snap, [], since_ms=NOW - 1_000)
    assert check is not None and check.status == "fail" and check.members == ("a",)
    assert check.reason.startswith("a (last record 2 s ago) cannot be shown alive")


def test_a_record_written_since_the_first_look_shows_the_member_alive() -> None:
    snap = _looked_at(NOW, _static_owner("a", _heard_at("a", NOW - 500)))
    check = liveness_check(snap, [], since_ms=NOW - 1_000)
    assert check is not None and check.status == "pass"


def test_one_look_fails_only_a_record_older_than_its_promise_and_the_grace() -> None:
    fresh = liveness_check(
        _looked_at(NOW, _static_owner("a", _heard_at("a", NOW - 14_000))), [], since_ms=None
    )
    stale = liveness_check(
        _looked_at(NOW, _static_owner("a", _heard_at("a", NOW - 16_000))), [], since_ms=None
    )
    assert fresh is not None and fresh.status == "pass"
    assert stale is not None and stale.status == "fail"


def test_a_committed_offset_that_moved_on_its_partition_shows_the_member_alive() -> None:
    member = _static_owner("a", _heard_at("a", NOW - 2_000))
    first = _looked_at(NOW - 1_000, member, committed=10)
    check = liveness_check(_looked_at(NOW, member, committed=12), [first], since_ms=NOW - 1_000)
    assert check is not None and check.status == "pass"


def test_a_member_that_promises_no_records_is_not_judged_and_the_reason_says_so() -> None:
    snap = _looked_at(
        NOW, _static_owner("a", _heard_at("a", 0, liveness_s=None)), _static_owner("b", None, 1)
    )
    check = liveness_check(snap, [], since_ms=NOW - 1_000)
    assert check is not None and check.status == "pass"
    assert "2 members publish no liveness records and are not judged here" in check.reason


def test_the_liveness_promise_is_written_to_the_topic_but_not_to_describes_output() -> None:
    manifest = _heard_at("a", 1)
    assert b'"liveness_s": 10.0' in manifest.record()
    assert "liveness_s" not in manifest.model_dump()

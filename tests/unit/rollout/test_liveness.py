"""Members shown alive: a member killed without leaving stays listed for its session, so the gate asks
each member that promises liveness records for one newer than its first look (--wait), or newer than
its promise (one look), or a committed offset that moved on a partition it owns."""

from __future__ import annotations

from kafka_coop.inspection import Fact, GroupSnapshot, MemberSnapshot, PartitionLag
from kafka_coop.manifest import Manifest
from kafka_coop.rollout._liveness import liveness_check

T = "orders"
NOW = 100_000


def _manifest(name: str, heartbeat_ms: int, liveness_s: float | None = 10.0) -> Manifest:
    return Manifest(
        group="g",
        member_id=f"id-{name}",
        instance_id=name,
        client_id=name,
        host="h",
        libraries={"kafka-coop": "1"},
        group_protocol="classic",
        assignors=("range",),
        rebalance_protocol="eager",
        remote_assignor=None,
        started_ms=0,
        heartbeat_ms=heartbeat_ms,
        liveness_s=liveness_s,
    )


def _member(name: str, manifest: Manifest | None, partition: int = 0) -> MemberSnapshot:
    return MemberSnapshot(
        member_id=f"id-{name}",
        instance_id=name,
        client_id=name,
        host="/h",
        assignment=((T, partition),),
        member_type=Fact(value="classic", source="broker"),
        client_family=Fact(value="librdkafka", source="declared"),
        rebalance_protocol=Fact(value="eager", source="declared"),
        assignors=Fact(value=("range",), source="declared"),
        manifest=manifest,
    )


def _snap(taken_ms: int, *members: MemberSnapshot, committed: int | None = None) -> GroupSnapshot:
    lag = (
        (PartitionLag(topic=T, partition=0, committed=committed, end_offset=50, lag=0),) if committed else ()
    )
    return GroupSnapshot(
        group_id="g",
        taken_ms=taken_ms,
        exists=True,
        type="classic",
        state="stable",
        protocol_type="consumer",
        assignor="range",
        coordinator=1,
        members=members,
        lag=lag if committed else (),
    )


def test_a_wait_run_fails_a_member_whose_last_record_predates_its_first_look() -> None:
    snap = _snap(NOW, _member("a", _manifest("a", NOW - 2_000)))
    check = liveness_check(snap, [], since_ms=NOW - 1_000)
    assert check is not None and check.status == "fail" and check.members == ("a",)
    assert check.reason.startswith("a (last record 2 s ago) cannot be shown alive")


def test_a_record_written_since_the_first_look_shows_the_member_alive() -> None:
    snap = _snap(NOW, _member("a", _manifest("a", NOW - 500)))
    check = liveness_check(snap, [], since_ms=NOW - 1_000)
    assert check is not None and check.status == "pass"


def test_one_look_fails_only_a_record_older_than_its_promise_and_the_grace() -> None:
    fresh = liveness_check(_snap(NOW, _member("a", _manifest("a", NOW - 14_000))), [], since_ms=None)
    stale = liveness_check(_snap(NOW, _member("a", _manifest("a", NOW - 16_000))), [], since_ms=None)
    assert fresh is not None and fresh.status == "pass"
    assert stale is not None and stale.status == "fail"


def test_a_committed_offset_that_moved_on_its_partition_shows_the_member_alive() -> None:
    member = _member("a", _manifest("a", NOW - 2_000))
    first = _snap(NOW - 1_000, member, committed=10)
    check = liveness_check(_snap(NOW, member, committed=12), [first], since_ms=NOW - 1_000)
    assert check is not None and check.status == "pass"


def test_a_member_that_promises_no_records_is_not_judged_and_the_reason_says_so() -> None:
    snap = _snap(NOW, _member("a", _manifest("a", 0, liveness_s=None)), _member("b", None, 1))
    check = liveness_check(snap, [], since_ms=NOW - 1_000)
    assert check is not None and check.status == "pass"
    assert "2 members publish no liveness records and are not judged here" in check.reason


def test_the_liveness_promise_is_written_to_the_topic_but_not_to_describes_output() -> None:
    manifest = _manifest("a", 1)
    assert b'"liveness_s": 10.0' in manifest.record()
    assert "liveness_s" not in manifest.model_dump()

"""Which offsets kafka-coop commits, and when: the drop-in rule, explicit marks, the committer.

The pure rules first (kafka_coop/consumer/_offsets.py), then the consumer over kafka_coop.testing's fake
client. The same contract on the real broker: tests/integration/consumer/test_dropin.py,
test_concurrent.py, test_contract_matrix.py.
"""

from __future__ import annotations

import ast
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kafka_coop.consumer import CoopConsumer, _close, _offsets
from kafka_coop.errors import InvalidInput
from kafka_coop.settings import ConsumerSettings
from kafka_coop.sinks import MemorySink
from kafka_coop.testing import FakeConsumer, FakeGroup, FakeMessage, MockedClock
from tests.unit.consumer.helpers import T, conf_for, hand_out, last, make, mark, parts

# Auto commit on (commits on revoke and close), with no interval commit falling due in a test.
NO_INTERVAL = {"auto.commit.interval.ms": "3600000"}


def msg(offset: int, partition: int = 0) -> FakeMessage:
    return FakeMessage(T, partition, offset)


# --- the pure rules ----------------------------------------------------------------------------
def test_the_commit_is_the_lowest_record_handed_out_and_not_done_whatever_order_marks_come_in() -> None:
    ledger = _offsets.Ledger()
    ledger.handed.append([msg(o) for o in range(6)])
    for offset in (3, 0, 5, 1):
        ledger.marks.append(msg(offset))
    ledger.fold()
    assert ledger.lowest_unfinished((T, 0)) == 2, "2 is in flight: nothing at or above it is committed"
    ledger.marks.append(msg(2))
    ledger.fold()
    assert ledger.lowest_unfinished((T, 0)) == 4


@pytest.mark.parametrize("assigned", [True, False], ids=["assigned", "manual"])
def test_records_marked_in_order_commit_each_partition_after_its_last_one(assigned: bool) -> None:
    """The sequential loop's fast path keeps only each partition's last record done: one partition's
    last comes early in the run, another's at its end (and with the assignment known, the fold stops
    looking once it has seen every partition assigned)."""
    ledger = _offsets.Ledger()
    if assigned:
        ledger.assigned({(T, 0), (T, 1)})
    records = [msg(0, 1), msg(1, 1), *[msg(o, 0) for o in range(300)]]
    for record in records:
        ledger.handed.append(record)
        ledger.marks.append(record)
    ledger.fold()
    assert ledger.commit_point((T, 0))[:1] == (300,) and ledger.commit_point((T, 1))[:1] == (2,)


def test_contiguity_is_over_records_handed_out_not_over_integers() -> None:
    """Compaction and transaction markers leave offsets no record ever had: they must not stall it."""
    ledger = _offsets.Ledger()
    ledger.handed.append([msg(10), msg(12), msg(15)])
    for offset in (15, 10, 12):
        ledger.marks.append(msg(offset))
    ledger.fold()
    assert ledger.lowest_unfinished((T, 0)) is None
    assert _offsets.commit_offset(16, None, unfinished=None) == 16


def test_a_store_offsets_offset_marks_everything_below_it() -> None:
    ledger = _offsets.Ledger()
    ledger.handed.append([msg(o) for o in range(5)])
    ledger.marks.append((T, 0, 3))
    ledger.fold()
    assert ledger.lowest_unfinished((T, 0)) == 3 and ledger.range_mark((T, 0)) == 3


def test_records_handed_out_again_after_a_seek_back_still_block_the_commit() -> None:
    ledger = _offsets.Ledger()
    ledger.handed.append([msg(5), msg(6), msg(2), msg(3)])
    ledger.marks.append(msg(5))
    ledger.marks.append(msg(6))
    ledger.fold()
    assert ledger.lowest_unfinished((T, 0)) == 2


def test_marks_for_a_partition_that_left_are_dropped() -> None:
    ledger = _offsets.Ledger()
    ledger.handed.append([msg(0), msg(1)])
    ledger.release([(T, 0)])
    ledger.marks.append(msg(0))
    ledger.handed.append([msg(1)])  # assigned again, fetched from the last commit
    ledger.fold()
    assert ledger.lowest_unfinished((T, 0)) == 1


@pytest.mark.parametrize(
    ("position", "floor", "unfinished", "held", "expected"),
    [
        (10, None, None, None, 10),  # everything handed out is done
        (10, None, 7, None, 7),  # explicit marks: 7 is in flight
        (10, None, None, 9, 9),  # drop-in: the application still holds 9
        (None, 6, None, None, 6),  # sought back to 6: the position is reset, what came before is done
        (None, None, None, None, None),  # nothing handed out yet: nothing to commit
        (-1001, None, None, None, None),
    ],
)
def test_one_partitions_commit_offset(
    position: int | None, floor: int | None, unfinished: int | None, held: int | None, expected: int | None
) -> None:
    assert _offsets.commit_offset(position, floor, unfinished=unfinished, held=held) == expected


def test_all_done_commits_the_offset_after_the_highest_record_registered_with_its_epoch() -> None:
    """Never the client's position: a record taken by a call but not registered yet is never passed."""
    ledger = _offsets.Ledger()
    first = [FakeMessage(T, 0, o, leader_epoch=3) for o in range(50)]
    ledger.handed.append(first)
    for record in first:
        ledger.marks.append(record)
    ledger.fold()
    assert ledger.commit_point((T, 0)) == (50, 3, None), "records 50-99 may be out, unregistered"


def test_the_committed_epoch_is_the_unfinished_records_not_the_last_handed_out() -> None:
    ledger = _offsets.Ledger()
    ledger.handed.append([FakeMessage(T, 0, 0, leader_epoch=1), FakeMessage(T, 0, 1, leader_epoch=2)])
    ledger.handed.append([FakeMessage(T, 0, 2, leader_epoch=5)])
    ledger.marks.append(ledger.handed[0][0])
    ledger.fold()
    assert ledger.commit_point((T, 0)) == (1, 2, None)


def test_a_partition_with_no_mark_since_it_was_assigned_commits_nothing() -> None:
    ledger = _offsets.Ledger()
    ledger.handed.append([msg(o) for o in range(5)])
    ledger.fold()
    assert ledger.commit_point((T, 0)) is None


def test_store_offsets_metadata_goes_with_its_own_offset_only() -> None:
    ledger = _offsets.Ledger()
    ledger.handed.append([msg(o) for o in range(5)])
    ledger.marks.append((T, 0, 3, "m"))
    ledger.fold()
    assert ledger.commit_point((T, 0)) == (3, 0, "m")
    for offset in (3, 4):
        ledger.marks.append(FakeMessage(T, 0, offset))
    ledger.fold()
    assert ledger.commit_point((T, 0)) is not None
    assert ledger.commit_point((T, 0))[2] is None, "a later offset carries no metadata"


def test_the_offset_rules_import_no_client() -> None:
    tree = ast.parse(Path(_offsets.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert not {m for m in imported if m and m.split(".")[0] == "confluent_kafka"}, imported


# --- drop-in: what the application polled past is done ------------------------------------------
def test_a_record_polled_past_is_done_and_the_one_held_is_not() -> None:
    consumer, inner, _ = make(marks=False)
    inner.rebalance("assign", parts(0))
    inner.group.produce(T, 0, b"a", b"b", b"c")
    consumer.poll(0)
    consumer.poll(0)  # 0 is done; 1 is in the application's hands
    assert [tp.offset for tp in consumer.committable()] == [2], "commit() would count 1 done"
    assert consumer._core.offsets([(T, 0)])[0].offset == 1, "an interval commit would not"


def test_the_apps_own_commit_commits_what_it_consumed_as_confluent_does() -> None:
    consumer, inner, _ = make(marks=False, conf={"enable.auto.commit": "false"})
    inner.rebalance("assign", parts(0))
    inner.group.produce(T, 0, *[b"x"] * 5)
    for _ in range(5):
        consumer.poll(0)
    assert [(tp.partition, tp.offset) for tp in consumer.commit(asynchronous=False)] == [(0, 5)]
    assert inner.committed_offsets == {(T, 0): 5}
    with pytest.raises(KafkaException) as nothing_new:
        consumer.commit(asynchronous=False)
    assert nothing_new.value.args[0].code() == KafkaError._NO_OFFSET


def test_a_with_block_left_on_an_exception_does_not_commit_the_record_in_hand() -> None:
    consumer, inner, _ = make(marks=False)
    inner.rebalance("assign", parts(0))
    inner.group.produce(T, 0, *[b"x"] * 5)
    with pytest.raises(ValueError), consumer:
        for _ in range(4):
            msg = consumer.poll(0)
        assert msg is not None and msg.offset() == 3
        raise ValueError("processing 3 failed")
    assert inner.committed_offsets == {(T, 0): 3}


def test_close_from_a_finally_while_processing_raised_does_not_commit_the_record_in_hand() -> None:
    consumer, inner, _ = make(marks=False)
    inner.rebalance("assign", parts(0))
    inner.group.produce(T, 0, *[b"x"] * 5)
    with pytest.raises(ValueError):
        try:
            consumer.poll(0)
            consumer.poll(0)
            raise ValueError("processing 1 failed")
        finally:
            consumer.close()
    assert inner.committed_offsets == {(T, 0): 1}


def test_a_clean_close_counts_the_last_record_done() -> None:
    consumer, inner, _ = make(marks=False)
    inner.rebalance("assign", parts(0))
    inner.group.produce(T, 0, *[b"x"] * 5)
    consumer.poll(0)
    consumer.poll(0)
    consumer.close()
    assert inner.committed_offsets == {(T, 0): 2}


def test_marking_without_explicit_marks_is_refused_in_one_sentence_naming_the_setting() -> None:
    consumer, inner, _ = make(marks=False)
    inner.rebalance("assign", parts(0))
    record = hand_out(consumer, inner, 0, 0)
    for call in (lambda: consumer.mark_done(record), lambda: consumer.store_offsets(record)):  # type: ignore[arg-type]
        with pytest.raises(KafkaException) as info:
            call()
        assert info.value.args[0].code() == KafkaError._INVALID_ARG
        assert "enable.auto.offset.store=false" in info.value.args[0].str()


# --- explicit marks from many threads -----------------------------------------------------------
def test_marks_from_eight_threads_out_of_order_never_commit_past_a_record_in_flight() -> None:
    consumer, inner, _ = make(conf={"enable.auto.commit": "false"})
    inner.rebalance("assign", parts(0, 1))
    for p in (0, 1):
        inner.group.produce(T, p, *[b"x"] * 500)
    records = consumer.consume(1000, 0)
    held_back = {(r.partition(), r.offset()) for r in random.Random(7).sample(records, 5)}
    todo = [r for r in records if (r.partition(), r.offset()) not in held_back]
    random.Random(3).shuffle(todo)

    def worker(chunk: list[Any]) -> None:
        for record in chunk:
            consumer.mark_done(record)

    threads = [threading.Thread(target=worker, args=(todo[i::8],)) for i in range(8)]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        consumer.poll(0)  # the polling thread folds marks and commits meanwhile
    committed = {tp.partition: tp.offset for tp in consumer.commit(asynchronous=False)}
    for p in (0, 1):
        first_unfinished = min(o for q, o in held_back | {(0, 500), (1, 500)} if q == p)
        assert committed[p] == first_unfinished, (p, committed, held_back)


def test_marking_is_one_append_that_takes_no_lock_and_calls_no_client() -> None:
    consumer, _, _ = make()
    assert consumer.mark_done.__self__ is consumer._core.ledger.marks  # type: ignore[attr-defined,union-attr]


# --- the committer ------------------------------------------------------------------------------
def test_interval_commits_happen_inside_poll_on_the_polling_thread_with_the_leader_epoch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = MockedClock()
    group = FakeGroup(leader_epoch=7)
    conf = conf_for(**{"auto.commit.interval.ms": "1000"})
    consumer = CoopConsumer(conf, client=group.client, clock=clock)
    consumer.subscribe([T])
    inner = group.consumer
    assert inner is not None
    threads: list[int] = []
    sent: list[Any] = []
    original = inner.commit

    def commit(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        sent.extend(kwargs.get("offsets") or [])
        return original(*args, **kwargs)

    inner.commit = commit  # type: ignore[method-assign]
    inner.rebalance("assign", parts(0))
    group.produce(T, 0, *[b"x"] * 3)
    for _ in range(3):
        consumer.poll(0)
    clock.sleep(0.5)  # ends with the watchdog's tick
    consumer.poll(0)
    assert sent == [], "not due yet"
    time.sleep(0.3)  # a real watchdog tick could not have committed from its own thread either
    assert sent == []
    clock.sleep(1.0)
    consumer.poll(0)
    assert [(tp.partition, tp.offset, tp.leader_epoch) for tp in sent] == [(0, 3, 7)]
    assert threads == [threading.get_ident()]
    consumer.poll(0)
    assert group.committed() == {(T, 0): 3}
    consumer.close()


def test_auto_commit_off_means_kafka_coop_commits_nothing_but_what_the_app_commits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """librdkafka's and the Java client's rule: no interval, revoke or close commit on the application's
    behalf; the events list what the application's own commits left."""
    clock = MockedClock()
    consumer, inner, sink = make(conf={"enable.auto.commit": "false"}, clock=clock)
    inner.rebalance("assign", parts(0, 1))
    mark(consumer, inner, 0, 4)
    mark(consumer, inner, 1, 2)
    consumer.commit(asynchronous=False)
    mark(consumer, inner, 1, 3)
    clock.sleep(3600)
    consumer.poll(0)
    assert inner.committed_offsets == {(T, 0): 5, (T, 1): 3}, "no interval commit"
    inner.rebalance("revoke", parts(0))
    assert inner.committed_offsets == {(T, 0): 5, (T, 1): 3}
    assert last(sink, "revoked").committed == ((T, 0, 5),)
    consumer.close()
    assert inner.committed_offsets == {(T, 0): 5, (T, 1): 3}, "4 was marked, never committed"
    assert last(sink, "closed").committed == ((T, 1, 3),)


def test_a_bad_commit_setting_is_refused_in_one_sentence() -> None:
    for setting in ({"auto.commit.interval.ms": "0"}, {"enable.auto.commit": "maybe"}):
        with pytest.raises(InvalidInput) as info:
            make(conf=setting)
        assert str(info.value).count(".") >= 1 and next(iter(setting)) in str(info.value)


# --- transactions own the commit -------------------------------------------------------------
def test_under_a_transaction_kafka_coop_commits_nothing_and_says_what_to_send() -> None:
    consumer, inner, sink = make(marks=False, transactional=True)
    inner.rebalance("assign", parts(0))
    inner.group.produce(T, 0, *[b"x"] * 3)
    for _ in range(3):
        consumer.poll(0)
    assert [(tp.partition, tp.offset) for tp in consumer.committable()] == [(0, 3)]
    inner.rebalance("revoke", parts(0))
    consumer.close()
    assert inner.committed_offsets == {} and inner.calls.count("commit") == 0
    assert last(sink, "revoked").committed == ()


def test_transactional_with_auto_commit_on_is_refused_in_one_sentence() -> None:
    with pytest.raises(InvalidInput) as info:
        make(transactional=True, conf={"enable.auto.commit": "true"})
    assert "transactional=True" in str(info.value) and "enable.auto.commit" in str(info.value)


# --- the findings of issue 25, at unit level ----------------------------------------------------
@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_a_static_member_overrunning_mid_rebalance_loses_without_any_commit_under_auto_commit(
    protocol: str,
) -> None:
    """Finding 1: librdkafka's own unassign used to commit with the reset member id (fatal)."""
    consumer, inner, sink = make(protocol, instance_id="svc-0")
    inner.rebalance("assign", parts(0, 1))
    mark(consumer, inner, 0, 3)
    inner.group.overrun_poll_limit(rebalancing=True)
    consumer.poll(0)
    assert inner.fatal is None and consumer.failure is None
    assert inner.group.commits == [], "nothing commits with the reset member id"
    assert last(sink, "lost").owned == ()


def test_close_after_a_static_members_overrun_commits_nothing_and_no_twin_is_blamed() -> None:
    """Finding 5."""
    consumer, inner, sink = make("cooperative", instance_id="svc-0")
    inner.rebalance("assign", parts(0))
    mark(consumer, inner, 0, 3)
    inner.member_id = ""  # max.poll.interval.ms ran out; the log line was never served (no poll)
    consumer.close()
    assert inner.fatal is None and consumer.failure is None and inner.group.commits == []
    assert "nothing committed on close" in (last(sink, "closed").error or "")


def assert_close_returns_though_the_clients_close_never_does(
    consumer: CoopConsumer, inner: FakeConsumer, sink: MemorySink, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With CLIENT_CLOSE_WAIT_S at 0.3 s: close() returns and its `closed` event says why."""
    never = threading.Event()
    monkeypatch.setattr(inner, "close", never.wait)
    closer = threading.Thread(target=consumer.close, daemon=True)
    closer.start()
    closer.join(5.0)
    never.set()
    assert not closer.is_alive(), "close() waited for the client's close"
    assert "did not return within 0.3 s" in (last(sink, "closed").error or "")


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_close_of_an_evicted_member_returns_when_the_clients_close_never_does(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """librdkafka's close of a member its group dropped can wait for good inside the client's rebalance
    callback (librdkafka issue 4041; seen in CI for a cooperative static member): close() gives the
    client a bound, says what happened, and lets it finish in the background."""
    monkeypatch.setattr(_close, "CLIENT_CLOSE_WAIT_S", 0.3)
    consumer, inner, sink = make(protocol, instance_id="svc-0")
    inner.rebalance("assign", parts(0, 1))
    mark(consumer, inner, 0, 3)
    inner.group.overrun_poll_limit()
    consumer.poll(0)
    assert_close_returns_though_the_clients_close_never_does(consumer, inner, sink, monkeypatch)


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_close_right_after_a_poll_overrun_returns_when_the_clients_close_never_does(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same hang, with librdkafka's eviction not yet known: it logs MAXPOLL to a queue that only a
    poll serves, and a service stuck past max.poll.interval.ms may go straight to close() (the min
    lane hung there, in `rd_kafka_assign` inside `rd_kafka_consumer_close`). The time since the last
    call returned tells: past the poll limit, the client's close is bounded too."""
    monkeypatch.setattr(_close, "CLIENT_CLOSE_WAIT_S", 0.3)
    timing = {"session.timeout.ms": "6000", "max.poll.interval.ms": "7000"}
    clock = MockedClock()
    consumer, inner, sink = make(protocol, instance_id="svc-0", conf=timing, clock=clock)
    inner.rebalance("assign", parts(0, 1))
    mark(consumer, inner, 0, 3)
    consumer.poll(0)
    clock.sleep(10.0)  # the service is stuck 10 s, past its 7 s poll limit
    assert_close_returns_though_the_clients_close_never_does(consumer, inner, sink, monkeypatch)


def test_close_after_a_manual_assign_commits_what_was_marked_done() -> None:
    """Finding 8."""
    consumer, inner, _ = make("eager", subscribe=False, conf=NO_INTERVAL)
    consumer.assign([TopicPartition(T, 0, 0)])
    inner.started.add((T, 0))
    inner.group.produce(T, 0, *[b"x"] * 6)
    for record in consumer.consume(10, 0):
        consumer.mark_done(record)
    consumer.close()
    assert inner.committed_offsets == {(T, 0): 6}


def test_close_with_a_timeout_returns_in_time_against_a_coordinator_that_never_answers() -> None:
    """Finding 11: librdkafka keeps a commit it cannot send waiting for the coordinator, forever."""
    consumer, inner, sink = make()
    inner.rebalance("assign", parts(0))
    mark(consumer, inner, 0, 6)
    silent = threading.Event()
    inner.commit = lambda *a, **k: silent.wait(30)  # type: ignore[method-assign]
    started = time.monotonic()
    consumer.close(timeout=0.5)
    took = time.monotonic() - started
    silent.set()
    assert took < 2.0
    closed = last(sink, "closed")
    assert closed.owned == () and "not committed: t-0@7" in (closed.error or "")


def seeking_in_on_assigned(protocol: str) -> tuple[CoopConsumer, FakeConsumer, MemorySink]:
    """A consumer whose `on_assigned` seeks each partition to 6, over ten records, its assign queued."""
    consumer: CoopConsumer

    def on_assigned(partitions: list[tuple[str, int]]) -> None:
        for t, p in partitions:
            consumer.seek(TopicPartition(t, p, 6))

    consumer, inner, sink = make(protocol, on_assigned=on_assigned)
    inner.group.produce(T, 0, *[b"x"] * 10)
    inner.pending.append(lambda: inner.rebalance("assign", parts(0)))
    return consumer, inner, sink


def offsets_of_calls(consumer: CoopConsumer, calls: int) -> list[int]:
    return [m.offset() for _ in range(calls) for m in consumer.consume(10, 0)]


@pytest.mark.parametrize("protocol", ["eager", "cooperative", "consumer"])
def test_a_seek_in_on_assigned_is_where_fetching_starts(protocol: str) -> None:
    """Finding 6: librdkafka refuses it (_STATE, fetching not started); it is applied once it can be."""
    consumer, _, sink = seeking_in_on_assigned(protocol)
    assert offsets_of_calls(consumer, 2) == [6, 7, 8, 9]
    assert last(sink, "assigned").error is None


@pytest.mark.parametrize("protocol", ["eager", "cooperative", "consumer"])
def test_a_seek_librdkafkas_offset_reset_undid_is_made_again_before_a_record_is_handed_out(
    protocol: str,
) -> None:
    """A seek that lands while the partition's offset reset is in flight is undone by librdkafka (seen
    under load: the partition started at 0, not at the offset sought); the first record tells."""
    consumer, inner, sink = seeking_in_on_assigned(protocol)
    inner.seek_undone_by_offset_reset = True
    assert offsets_of_calls(consumer, 4) == [6, 7, 8, 9]
    assert last(sink, "assigned").error is None


def test_a_seek_in_on_assigned_that_librdkafkas_fetch_start_overtook_is_applied_later() -> None:
    """librdkafka answers `_OUTDATED` when the assignment's fetch start was served before the seek it
    queued first (seen under load); like `_STATE`, fetching was not where the seek could apply."""
    consumer, inner, sink = seeking_in_on_assigned("cooperative")
    real_seek = inner.seek
    answers = [KafkaException(KafkaError(KafkaError._OUTDATED))]

    def seek(partition: TopicPartition) -> None:
        if answers:
            raise answers.pop()
        real_seek(partition)

    inner.seek = seek  # type: ignore[method-assign]
    assert offsets_of_calls(consumer, 3) == [6, 7, 8, 9]
    assert last(sink, "assigned").error is None


def test_a_seek_to_an_offset_the_log_does_not_have_is_made_again_once_only() -> None:
    """A first record past the offset sought is a gap in the log (compaction, a transaction marker) or
    an undone seek: one more seek tells them apart, and the second answer stands."""
    consumer, inner, _ = make("cooperative")
    inner.rebalance("assign", parts(0))
    inner.group.produce(T, 0, *[b"x"] * 10)
    del inner.group.records[(T, 0)][3]  # compacted away
    consumer.consume(10, 0)
    consumer.seek(TopicPartition(T, 0, 3))
    got: list[int] = []
    for _ in range(3):
        got += [m.offset() for m in consumer.consume(10, 0)]
    assert got == [4, 5, 6, 7, 8, 9]
    assert inner.seeks == [(T, 0, 3), (T, 0, 3)]


def test_an_interrupt_from_a_hook_loses_none_of_the_records_its_call_took() -> None:
    """Finding 3's other half: the call's records are fetched again, not dropped with the call."""

    def on_assigned(partitions: list[tuple[str, int]]) -> None:
        raise KeyboardInterrupt

    consumer, inner, _ = make(marks=False, on_assigned=on_assigned)
    inner.rebalance("assign", parts(0))
    inner.group.produce(T, 0, *[b"x"] * 4)
    inner.pending.append(lambda: inner.rebalance("assign", parts(1)))
    with pytest.raises(KeyboardInterrupt):
        consumer.consume(10, 0)
    assert [m.offset() for m in consumer.consume(10, 0)] == [0, 1, 2, 3]


def test_a_fake_client_that_is_not_a_fake_consumer_is_still_accepted() -> None:
    """`client=` takes any factory of the conf (a user's own double included)."""
    built: list[FakeConsumer] = []

    def factory(conf: dict[str, Any]) -> FakeConsumer:
        built.append(FakeConsumer(conf))
        return built[0]

    CoopConsumer(conf_for(), client=factory).close()
    assert built and built[0].closed


@pytest.mark.parametrize("marks", [False, True])
def test_ctrl_c_inside_a_poll_loses_none_of_the_records_the_client_dropped(marks: bool) -> None:
    """confluent-kafka drops what a poll/consume had taken when a signal (or a conf callback's exception)
    ends the call, after librdkafka moved the position past it: those records come again, and the close
    commits nothing past them."""
    consumer, inner, _ = make(marks=marks, conf=NO_INTERVAL)
    inner.rebalance("assign", parts(0))
    inner.group.produce(T, 0, *[b"x"] * 6)
    first = consumer.consume(2, 0)
    if marks:
        for record in first:
            consumer.mark_done(record)

    def ctrl_c() -> None:
        raise KeyboardInterrupt

    inner.on_poll.append(ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        consumer.consume(3, 0)  # took 2-4, then the signal: the client drops them
    assert [m.offset() for m in consumer.consume(10, 0)] == [2, 3, 4, 5]
    consumer.close()
    assert inner.committed_offsets[(T, 0)] <= 6


def test_a_signal_ending_the_service_never_commits_the_records_it_never_saw() -> None:
    consumer, inner, _ = make(marks=False, conf=NO_INTERVAL)
    inner.rebalance("assign", parts(0))
    inner.group.produce(T, 0, *[b"x"] * 6)
    consumer.consume(2, 0)

    def ctrl_c() -> None:
        raise KeyboardInterrupt

    inner.on_poll.append(ctrl_c)
    with pytest.raises(KeyboardInterrupt), consumer:
        consumer.consume(3, 0)
    assert inner.committed_offsets[(T, 0)] <= 2, "2-4 were taken by the call Ctrl-C ended, never seen"


def test_marks_in_the_order_records_were_handed_out_are_taken_without_bookkeeping() -> None:
    ledger = _offsets.Ledger()
    batch = [msg(o) for o in range(3)]
    ledger.handed.append(batch)
    for record in batch:
        ledger.marks.append(record)
    single = msg(3)
    ledger.handed.append(single)
    ledger.marks.append(single)
    ledger.fold()
    assert not ledger.handed and not ledger.marks and not ledger.parts


def test_a_batch_marked_out_of_order_still_goes_through_the_bookkeeping() -> None:
    ledger = _offsets.Ledger()
    batch = [msg(o) for o in range(3)]
    ledger.handed.append(batch)
    ledger.marks.append(batch[1])
    ledger.marks.append(batch[0])
    ledger.fold()
    assert ledger.lowest_unfinished((T, 0)) == 2


def test_closing_a_member_its_group_dropped_serves_the_queued_revoke_before_the_client_closes() -> None:
    """Left to the client's close, that callback can come after the group handler terminated, and
    confluent-kafka's callback then waits for good (librdkafka issue 4041; close() hung in the
    min-version lane after a static member's poll overrun)."""
    consumer, inner, _ = make("eager", instance_id="svc-1")
    inner.rebalance("assign", parts(0))
    inner.member_id = ""  # the poll overran: librdkafka reset the member id and queued the revoke
    served_while_terminating: list[bool] = []

    def revoke() -> None:
        served_while_terminating.append(inner.terminating)
        inner.rebalance("revoke", parts(0))

    inner.pending.append(revoke)
    consumer.close()
    assert served_while_terminating == [False]
    assert inner.group.commits == []


@pytest.mark.parametrize("value", ["t", "F", "TRUE", "0"])
def test_the_booleans_librdkafka_accepts_are_accepted(value: str) -> None:
    consumer, _, _ = make(conf={"enable.auto.commit": value})
    assert consumer._core.prepared.auto_commit is (value.lower() in ("t", "true", "1"))
    consumer.close()


@pytest.mark.parametrize("value", ["yes", "on", " true"])
def test_a_boolean_librdkafka_refuses_is_refused_in_one_sentence(value: str) -> None:
    with pytest.raises(InvalidInput, match="is not a boolean"):
        make(conf={"enable.auto.commit": value})


def test_a_commit_refused_during_a_rebalance_is_made_by_the_first_call_after_it() -> None:
    consumer, inner, _ = make(conf=NO_INTERVAL)
    inner.rebalance("assign", parts(0))
    mark(consumer, inner, 0, 4)
    core = consumer._core
    refused = TopicPartition(T, 0, 5)
    core.sent[(T, 0)] = 5
    core._on_commit(KafkaError(KafkaError.ILLEGAL_GENERATION), [refused])
    assert (T, 0) not in core.sent
    inner.rebalance("assign", parts(1))  # the rebalance ends
    consumer.poll(0)
    assert inner.committed_offsets == {(T, 0): 5}, "not an interval later"
    consumer.close()


def test_an_interval_commit_that_raised_is_sent_again_though_its_offset_did_not_change() -> None:
    consumer, inner, _ = make(clock=MockedClock())
    inner.rebalance("assign", parts(0))
    mark(consumer, inner, 0, 4)
    inner.commit_errors.append(KafkaException(KafkaError(KafkaError._TRANSPORT)))
    consumer._core.next_commit = 0.0
    consumer._core.state.slow = True
    consumer.poll(0)
    assert inner.committed_offsets == {}
    consumer._core.next_commit = 0.0
    consumer._core.state.slow = True
    consumer.poll(0)
    assert inner.committed_offsets == {(T, 0): 5}
    consumer.close()


def test_default_topic_config_as_a_dict_is_taken_as_confluent_takes_it() -> None:
    consumer, _, _ = make(conf={"default.topic.config": {"auto.offset.reset": "latest"}})
    assert consumer._core.prepared.rendered["auto.offset.reset"] == "earliest", "a top-level one wins"
    consumer.close()
    alone = {
        "bootstrap.servers": "b:9092",
        "group.id": "g",
        "default.topic.config": {"auto.offset.reset": "latest"},
    }
    assert ConsumerSettings.from_conf(alone).render()["auto.offset.reset"] == "latest"


def test_under_marks_ctrl_c_in_a_call_that_took_nothing_fetches_nothing_again() -> None:
    """The client drops what a broken call took; the ledger knows what was handed out before it, so the
    partition goes back exactly there (no duplicates of records already handed out)."""
    consumer, inner, _ = make(conf=NO_INTERVAL)
    inner.rebalance("assign", parts(0))
    inner.group.produce(T, 0, *[b"x"] * 6)
    for record in consumer.consume(6, 0):
        consumer.mark_done(record)

    def ctrl_c() -> None:
        raise KeyboardInterrupt

    inner.on_poll.append(ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        consumer.consume(3, 0)  # nothing left to take
    assert consumer.consume(10, 0) == [], "records 3-5 were handed out already"
    consumer.close()
    assert inner.committed_offsets == {(T, 0): 6}

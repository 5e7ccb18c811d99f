"""The rebalance handler under librdkafka's callback sequences, replayed by kafka_coop.testing's fake client.

One behaviour per test. Each suspect of issue 13 has its test here (named in the comments `# suspect N`);
the same behaviours run on the real broker in tests/integration/consumer/test_contract.py.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicPartition

from kafka_coop.consumer import CoopConsumer, RebalanceListener, _setup
from kafka_coop.errors import ConsumerFailed, InstanceIdConflict, InvalidInput
from kafka_coop.testing import FakeGroup, MockedClock, kafka_error
from tests.unit.consumer.helpers import PROTOCOLS, T, hand_out, kinds, last, make, mark, parts


# --- the offset contract ---------------------------------------------------------------------
@pytest.mark.parametrize("setting", [{}, {"enable.auto.offset.store": "true", "enable.auto.commit": "true"}])
def test_the_client_stores_and_commits_nothing_by_itself_whatever_the_conf_says(
    setting: dict[str, str],
) -> None:
    """kafka-coop decides every commit: librdkafka never commits behind its back (e.g. on an unassign with a
    reset member id, finding 1 of issue 25)."""
    _consumer, inner, _ = make(marks=False, conf=setting)
    assert inner.conf["enable.auto.offset.store"] == "false" and inner.conf["enable.auto.commit"] == "false"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_revoke_runs_the_hook_then_commits_what_is_marked_then_unassigns(protocol: str) -> None:
    order: list[str] = []
    consumer, inner, sink = make(protocol, on_revoked=lambda ps: order.append("on_revoked"))
    inner.rebalance("assign", parts(0, 1))
    mark(consumer, inner, 0, 4)
    hand_out(consumer, inner, 1, 9)  # handed out, never marked done
    inner.calls.clear()
    inner.rebalance("revoke", parts(0, 1))
    assert order == ["on_revoked"]
    calls = [c for c in inner.calls if c in ("commit", "unassign", "incremental_unassign")]
    assert calls[0] == "commit" and calls[1] in ("unassign", "incremental_unassign")
    assert inner.committed_offsets == {(T, 0): 5}, "partition 1 had no mark since it was assigned"
    event = last(sink, "revoked")
    assert event.committed == ((T, 0, 5),)
    assert event.owned == () and consumer.owned == ()


def test_close_commits_what_is_marked_and_nothing_delivered_after_it() -> None:
    consumer, inner, sink = make()
    inner.rebalance("assign", parts(0))
    mark(consumer, inner, 0, 2)
    hand_out(consumer, inner, 0, 3)
    consumer.close()
    assert inner.committed_offsets == {(T, 0): 3}
    assert last(sink, "closed").owned == ()


def test_leaving_the_with_block_on_an_exception_commits_only_marked_records() -> None:
    consumer, inner, _ = make()
    inner.rebalance("assign", parts(0))
    with pytest.raises(ValueError), consumer:
        mark(consumer, inner, 0, 0)
        hand_out(consumer, inner, 0, 1)
        raise ValueError("processing offset 1 failed")
    assert inner.committed_offsets == {(T, 0): 1}, "offset 1 raised: it must be redelivered"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_lost_partitions_commit_nothing(protocol: str) -> None:
    consumer, inner, sink = make(protocol)
    inner.rebalance("assign", parts(0, 1))
    mark(consumer, inner, 0, 7)
    inner.calls.clear()
    inner.rebalance("lost", parts(0, 1))
    assert "commit" not in inner.calls
    event = last(sink, "lost")
    assert event.committed is None and event.owned == () and consumer.owned == ()


@pytest.mark.parametrize(
    ("protocol", "assign_call", "unassign_call"),
    [
        ("eager", "assign", "unassign"),
        ("cooperative", "incremental_assign", "incremental_unassign"),
        ("consumer", "incremental_assign", "incremental_unassign"),
    ],
)
def test_each_protocol_uses_its_legal_assignment_calls(
    protocol: str, assign_call: str, unassign_call: str
) -> None:
    _consumer, inner, sink = make(protocol)
    inner.rebalance("assign", parts(0, 1))
    inner.rebalance("revoke", parts(0, 1))
    assert assign_call in inner.calls and unassign_call in inner.calls
    assert not [e for e in sink.events if e.error], [e.error for e in sink.events]


def test_cooperative_deltas_add_and_remove_and_owned_matches_the_assignment() -> None:
    consumer, inner, sink = make("cooperative")
    inner.rebalance("assign", parts(0, 1))
    inner.rebalance("assign", parts(2))
    inner.rebalance("revoke", parts(1))
    assert consumer.owned == tuple(parts(0, 2)) == tuple(sorted(inner.assigned))
    assert [e.owned for e in sink.events if e.kind != "started"] == [
        tuple(parts(0, 1)),
        tuple(parts(0, 1, 2)),
        tuple(parts(0, 2)),
    ]


# --- suspect 2: a static member whose id was reset gets a revoke, not a loss ------------------
@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_revoke_after_the_member_id_was_reset_is_a_loss_and_commits_nothing(protocol: str) -> None:
    lost: list[list[tuple[str, int]]] = []
    revoked: list[list[tuple[str, int]]] = []
    consumer, inner, sink = make(
        protocol, instance_id="svc-3", on_lost=lost.append, on_revoked=revoked.append
    )
    inner.rebalance("assign", parts(0, 1))
    mark(consumer, inner, 0, 3)
    inner.member_id = ""  # max.poll.interval.ms exceeded: librdkafka reset the id, a revoke is queued
    inner.calls.clear()
    inner.rebalance("revoke", parts(0, 1))
    assert "commit" not in inner.calls, (
        "an empty member id + instance id commit is a fatal FENCED_INSTANCE_ID"
    )
    assert lost == [parts(0, 1)] and revoked == []
    event = last(sink, "lost")
    assert event.partitions == tuple(parts(0, 1)) and event.owned == () and event.committed is None
    assert "member id reset" in (event.error or "")
    assert consumer.failure is None


# --- suspect 3: fenced by a duplicate instance id, no callback -----------------------------------
@pytest.mark.parametrize(
    ("protocol", "code"),
    [
        ("eager", KafkaError.FENCED_INSTANCE_ID),
        ("cooperative", KafkaError.FENCED_INSTANCE_ID),
        ("consumer", KafkaError.UNRELEASED_INSTANCE_ID),
    ],
)
def test_a_fenced_member_emits_lost_with_empty_owned_and_poll_raises_naming_the_id(
    protocol: str, code: int
) -> None:
    lost: list[list[tuple[str, int]]] = []
    consumer, inner, sink = make(protocol, instance_id="svc-3", on_lost=lost.append)
    inner.rebalance("assign", parts(0, 1))
    inner.raise_fatal(code)
    with pytest.raises(InstanceIdConflict) as failure:
        consumer.poll(0.1)
    assert "'svc-3'" in str(failure.value) and "own group.instance.id" in str(failure.value)
    assert failure.value.code == KafkaError(code).name()
    event = last(sink, "lost")
    assert event.partitions == tuple(parts(0, 1)) and event.owned == ()
    assert lost == [parts(0, 1)]
    assert consumer.owned == () and inner.assignment() == []


def test_every_later_poll_and_consume_raise_the_same_fatal_error() -> None:
    consumer, inner, _ = make(instance_id="svc-3")
    inner.rebalance("assign", parts(0))
    inner.raise_fatal(KafkaError.FENCED_INSTANCE_ID)
    with pytest.raises(InstanceIdConflict) as first:
        consumer.poll(0.1)
    with pytest.raises(InstanceIdConflict) as again:
        consumer.consume(10, 0.1)
    assert again.value is first.value


def test_after_a_fatal_error_close_commits_nothing_and_the_closed_event_owns_nothing() -> None:
    consumer, inner, sink = make(instance_id="svc-3")
    inner.rebalance("assign", parts(0, 1))
    mark(consumer, inner, 0, 1)
    inner.raise_fatal(KafkaError.FENCED_INSTANCE_ID)
    with pytest.raises(InstanceIdConflict):
        consumer.poll(0.1)
    inner.calls.clear()
    consumer.close()
    assert "commit" not in inner.calls
    assert kinds(sink)[-2:] == ["lost", "closed"]
    assert last(sink, "closed").owned == ()


def test_an_unknown_fatal_error_raises_consumer_failed_with_librdkafkas_text() -> None:
    consumer, inner, _ = make()
    inner.rebalance("assign", parts(0))
    inner.raise_fatal(KafkaError._FATAL, "something librdkafka cannot recover from")
    with pytest.raises(ConsumerFailed) as failure:
        consumer.poll(0.1)
    assert not isinstance(failure.value, InstanceIdConflict)
    assert "something librdkafka cannot recover from" in str(failure.value)


def test_a_commit_fenced_inside_a_revoke_emits_one_lost_and_raises_from_poll() -> None:
    consumer, inner, sink = make("cooperative", instance_id="svc-3")
    inner.rebalance("assign", parts(0, 1))
    mark(consumer, inner, 0, 1)
    inner.commit_errors.append(kafka_error(KafkaError.FENCED_INSTANCE_ID, fatal=True))
    inner.pending.append(lambda: inner.rebalance("revoke", parts(0)))
    inner.raise_fatal(KafkaError.FENCED_INSTANCE_ID, "OffsetCommit failed")
    with pytest.raises(InstanceIdConflict):
        consumer.poll(0.1)
    losts = [e for e in sink.events if e.kind == "lost"]
    assert len(losts) == 1 and losts[0].partitions == tuple(parts(0, 1)) and losts[0].owned == ()
    assert "revoked" not in kinds(sink)


MAXPOLL_LINE = (
    "Application maximum poll interval (7000ms) exceeded by 312ms (adjust max.poll.interval.ms for "
    "long-running message processing): leaving group"
)
SESSTMOUT_LINE = (
    "Consumer group session timed out (in join-state steady) after 10512 ms without a successful response "
    "from the group coordinator (broker 1, last error was Broker: Not coordinator): revoking assignment and "
    "rejoining group"
)


@pytest.mark.parametrize(
    ("facility", "line", "limit"),
    [("MAXPOLL", MAXPOLL_LINE, "max.poll.interval.ms"), ("SESSTMOUT", SESSTMOUT_LINE, "session.timeout.ms")],
)
def test_a_member_fenced_after_its_own_eviction_is_told_so_not_blamed_on_a_twin(
    facility: str, line: str, limit: str
) -> None:
    """A synchronous commit outlasted the poll limit (or the session) during a coordinator move: librdkafka
    reset the member id and rejoined, and the commit carrying the old identity was FENCED_INSTANCE_ID."""
    consumer, inner, sink = make("cooperative", instance_id="svc-3")
    inner.rebalance("assign", parts(0, 1))
    inner.log(facility, line)
    inner.raise_fatal(KafkaError.FENCED_INSTANCE_ID, "OffsetCommit failed")
    with pytest.raises(ConsumerFailed) as failure:
        consumer.poll(0.1)
    text = str(failure.value)
    assert not isinstance(failure.value, InstanceIdConflict), text
    assert "Another member" not in text and "duplicate" not in text, text
    assert limit in text and "'svc-3'" in text and "own" in text, text
    assert failure.value.code == "FENCED_INSTANCE_ID"
    event = last(sink, "lost")
    assert event.owned == () and consumer.owned == ()


def test_a_fenced_member_with_no_eviction_seen_is_told_both_causes_and_what_to_do() -> None:
    consumer, inner, _ = make("cooperative", instance_id="svc-3")
    inner.rebalance("assign", parts(0))
    inner.raise_fatal(KafkaError.FENCED_INSTANCE_ID)
    with pytest.raises(InstanceIdConflict) as failure:
        consumer.poll(0.1)
    text = str(failure.value)
    assert "another running member" in text.lower() and "'svc-3'" in text, text
    assert "max.poll.interval.ms" in text and "session.timeout.ms" in text, text


def test_an_eviction_long_before_the_fence_does_not_explain_it() -> None:
    clock = MockedClock()
    consumer, inner, _ = make("cooperative", instance_id="svc-3", clock=clock)
    inner.rebalance("assign", parts(0))
    inner.log("MAXPOLL", MAXPOLL_LINE)
    consumer.poll(0.1)
    clock.sleep(3600.0)  # an hour later, well past every limit
    inner.raise_fatal(KafkaError.FENCED_INSTANCE_ID)
    with pytest.raises(InstanceIdConflict):
        consumer.poll(0.1)


# --- suspect 4: an assignment librdkafka did not apply --------------------------------------------
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_assign_librdkafka_turned_into_an_unassign_is_not_reported_as_owned(protocol: str) -> None:
    consumer, inner, sink = make(protocol)
    inner.fatal = KafkaError.FENCED_INSTANCE_ID  # raised in librdkafka's thread, not yet seen by poll
    inner.rebalance("assign", parts(0, 1))
    event = last(sink, "assigned")
    assert event.partitions == () and event.owned == () and consumer.owned == ()
    assert "not assigned" in (event.error or "")


def test_an_assign_librdkafka_refused_is_an_error_not_ownership() -> None:
    consumer, inner, sink = make("cooperative")
    inner.assigned[(T, 0)] = -1001  # already assigned: incremental_assign raises _CONFLICT
    inner.rebalance("assign", parts(0, 1))
    event = last(sink, "assigned")
    assert "_CONFLICT" in (event.error or "")
    assert consumer.owned == tuple(sorted(inner.assigned))


def test_on_assigned_is_not_called_for_partitions_that_were_not_assigned() -> None:
    seen: list[list[tuple[str, int]]] = []
    _consumer, inner, _ = make(on_assigned=seen.append)
    inner.fatal = KafkaError.FENCED_INSTANCE_ID
    inner.rebalance("assign", parts(0))
    assert seen == []


# --- suspect 5: relabels, stale epochs, partial commits ------------------------------------------
def test_a_revoke_whose_commit_is_refused_as_unknown_member_runs_on_lost_too() -> None:
    calls: list[str] = []
    consumer, inner, sink = make(
        "cooperative", on_revoked=lambda ps: calls.append("revoked"), on_lost=lambda ps: calls.append("lost")
    )
    inner.rebalance("assign", parts(0))
    mark(consumer, inner, 0, 1)
    inner.commit_errors.append(kafka_error(KafkaError.UNKNOWN_MEMBER_ID))
    inner.rebalance("revoke", parts(0))
    assert calls == ["revoked", "lost"]
    event = last(sink, "lost")
    assert event.committed is None and event.owned == ()
    assert "revoked" not in kinds(sink)


def test_a_stale_member_epoch_commit_is_retried_not_treated_as_eviction() -> None:
    consumer, inner, sink = make("consumer")
    inner.rebalance("assign", parts(0))
    mark(consumer, inner, 0, 5)
    inner.commit_errors.append(kafka_error(KafkaError.STALE_MEMBER_EPOCH))
    inner.rebalance("revoke", parts(0))
    event = last(sink, "revoked")
    assert event.committed == ((T, 0, 6),) and event.error is None
    assert "lost" not in kinds(sink)


def test_a_commit_that_failed_for_some_partitions_reports_what_the_broker_has() -> None:
    consumer, inner, sink = make("eager")
    inner.rebalance("assign", parts(0, 1))
    mark(consumer, inner, 0, 4)
    mark(consumer, inner, 1, 8)
    inner.partition_commit_errors[(T, 1)] = KafkaError.OFFSET_METADATA_TOO_LARGE
    inner.rebalance("revoke", parts(0, 1))
    event = last(sink, "revoked")
    assert event.committed == ((T, 0, 5),), "partition 1 was not committed, partition 0 was"
    assert "OFFSET_METADATA_TOO_LARGE" in (event.error or "")


# --- suspect 6: start offsets ---------------------------------------------------------------------
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_start_offsets_chosen_by_the_hook_are_on_the_assign_call(protocol: str) -> None:
    _consumer, inner, sink = make(protocol, start_offsets=lambda ps: {(T, 0): 42})
    inner.rebalance("assign", parts(0, 1))
    assert inner.assigned == {(T, 0): 42, (T, 1): -1001}
    assert last(sink, "assigned").error is None


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_legacy_on_assign_that_assigns_with_offsets_is_honoured_under_every_protocol(protocol: str) -> None:
    def on_assign(consumer: Any, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            tp.offset = 100 + tp.partition
        consumer.assign(partitions)  # the eager-era idiom

    consumer, inner, sink = make(protocol)
    consumer.subscribe([T], on_assign=on_assign)
    inner.rebalance("assign", parts(0, 1))
    assert inner.assigned == {(T, 0): 100, (T, 1): 101}
    assert last(sink, "assigned").error is None
    assert consumer.owned == tuple(parts(0, 1))


def test_a_legacy_on_assign_that_only_sets_offsets_is_honoured() -> None:
    def on_assign(consumer: Any, partitions: list[TopicPartition]) -> None:
        partitions[0].offset = 7

    consumer, inner, _ = make("consumer")
    consumer.subscribe([T], on_assign=on_assign)
    inner.rebalance("assign", parts(0))
    assert inner.assigned == {(T, 0): 7}


def test_a_legacy_on_revoke_that_unassigns_still_gets_its_offsets_committed_first() -> None:
    def on_revoke(consumer: Any, partitions: list[TopicPartition]) -> None:
        consumer.incremental_unassign(partitions)

    consumer, inner, sink = make("cooperative")
    consumer.subscribe([T], on_revoke=on_revoke)
    inner.rebalance("assign", parts(0))
    mark(consumer, inner, 0, 2)
    inner.rebalance("revoke", parts(0))
    assert last(sink, "revoked").committed == ((T, 0, 3),)
    assert inner.calls.count("incremental_unassign") == 1


def test_start_offsets_naming_a_partition_not_being_assigned_is_reported() -> None:
    _consumer, inner, sink = make(start_offsets=lambda ps: {(T, 9): 1})
    inner.rebalance("assign", parts(0))
    assert "not being assigned" in (last(sink, "assigned").error or "")


# --- suspect 7: BaseException from a hook ---------------------------------------------------------
@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit, asyncio.CancelledError])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_interrupt_in_on_revoked_still_commits_unassigns_and_updates_owned(
    protocol: str, interrupt: type[BaseException]
) -> None:
    def on_revoked(ps: Any) -> None:
        raise interrupt()

    consumer, inner, sink = make(protocol, on_revoked=on_revoked)
    inner.rebalance("assign", parts(0, 1))
    mark(consumer, inner, 1, 3)
    inner.pending.append(lambda: inner.rebalance("revoke", parts(0, 1)))
    with pytest.raises(interrupt):
        consumer.poll(0)
    assert inner.committed_offsets == {(T, 1): 4}
    assert inner.assigned == {} and consumer.owned == ()
    event = last(sink, "revoked")
    assert event.committed == ((T, 1, 4),) and "interrupted" in (event.error or "")


def test_an_interrupt_in_on_assigned_comes_out_after_the_event() -> None:
    def on_assigned(ps: Any) -> None:
        raise KeyboardInterrupt

    consumer, inner, sink = make(on_assigned=on_assigned)
    inner.pending.append(lambda: inner.rebalance("assign", parts(0)))
    with pytest.raises(KeyboardInterrupt):
        consumer.poll(0)
    assert last(sink, "assigned").owned == tuple(parts(0)) == consumer.owned


def test_an_interrupt_in_on_lost_still_unassigns() -> None:
    def on_lost(ps: Any) -> None:
        raise SystemExit(3)

    consumer, inner, sink = make("cooperative", on_lost=on_lost)
    inner.rebalance("assign", parts(0))
    inner.pending.append(lambda: inner.rebalance("lost", parts(0)))
    with pytest.raises(SystemExit):
        consumer.poll(0)
    assert consumer.owned == () and inner.assigned == {}
    assert last(sink, "lost").owned == ()


def test_an_exception_from_a_hook_is_recorded_and_the_rebalance_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def on_revoked(ps: Any) -> None:
        raise RuntimeError("db down")

    consumer, inner, sink = make(on_revoked=on_revoked)
    inner.rebalance("assign", parts(0))
    mark(consumer, inner, 0, 0)
    with caplog.at_level(logging.ERROR):
        inner.rebalance("revoke", parts(0))
    event = last(sink, "revoked")
    assert "RuntimeError: db down" in (event.error or "") and event.committed == ((T, 0, 1),)


# --- suspect 8: close --------------------------------------------------------------------------
def test_close_stops_the_manifest_heartbeat_before_closing_the_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    order: list[str] = []

    class Publisher:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def start(self) -> None:
            order.append("publisher.start")

        def publish_now(self) -> None:
            pass

        def close(self) -> None:
            order.append("publisher.close")

    monkeypatch.setattr(_setup, "ManifestPublisher", Publisher)
    consumer, inner, _ = make(manifests=True)
    original_close = inner.close

    def close() -> None:
        order.append("client.close")
        original_close()

    monkeypatch.setattr(inner, "close", close)
    consumer.close()
    assert order == ["publisher.start", "publisher.close", "client.close"]


class RecordingPublisher:
    """Stands in for ManifestPublisher: records what the consumer asks of it, builds on publish."""

    order: list[str] = []

    def __init__(self, _conf: Any, build: Any, **_kwargs: Any) -> None:
        self.build = build
        self.closed = False

    def start(self) -> None:
        RecordingPublisher.order.append("start")

    def publish_now(self) -> None:
        RecordingPublisher.order.append("publish after close" if self.closed else "publish")
        self.build()

    def close(self) -> None:
        self.closed = True
        RecordingPublisher.order.append("close")


def test_the_manifest_heartbeat_never_calls_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """confluent-kafka 2.16 serializes calls on one client: a memberid() from the heartbeat thread waits
    for the poll in flight, and a service polling back to back starved it (seen on the broker:
    tests/integration/consumer/test_close_order.py). The manifest is built from the member id read
    on the polling thread."""
    monkeypatch.setattr(_setup, "ManifestPublisher", RecordingPublisher)
    consumer, inner, _ = make(manifests=True)
    inner.rebalance("assign", parts(0))
    calls = inner.calls.count("memberid")
    built: list[Any] = []
    thread = threading.Thread(target=lambda: built.append(consumer._manifest()), name="kafka-coop-manifest")
    thread.start()
    thread.join(5)
    assert inner.calls.count("memberid") == calls, "the heartbeat thread called memberid() on the client"
    assert built and built[0] is not None and built[0].member_id == inner.member_id
    consumer.close()


def test_an_assignment_served_during_close_publishes_no_manifest_after_the_tombstone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_setup, "ManifestPublisher", RecordingPublisher)
    RecordingPublisher.order = []
    consumer, inner, _ = make(manifests=True)
    inner.rebalance("assign", parts(0))
    inner.pending.append(lambda: inner.rebalance("assign", parts(1)))
    consumer.close()
    assert RecordingPublisher.order == ["start", "publish", "close"], RecordingPublisher.order


# --- listener, logs and errors -------------------------------------------------------------------
def test_a_listener_subclass_gets_the_hooks_in_their_documented_order() -> None:
    calls: list[str] = []

    class Listener(RebalanceListener):
        def start_offsets(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
            calls.append("start_offsets")
            return {}

        def on_assigned(self, partitions: list[tuple[str, int]]) -> None:
            calls.append("on_assigned")

        def on_revoked(self, partitions: list[tuple[str, int]]) -> None:
            calls.append("on_revoked")

        def on_lost(self, partitions: list[tuple[str, int]]) -> None:
            calls.append("on_lost")

    _consumer, inner, _ = make(listener=Listener())
    inner.rebalance("assign", parts(0, 1))
    inner.rebalance("revoke", parts(0))
    inner.rebalance("lost", parts(1))
    assert calls == ["start_offsets", "on_assigned", "on_revoked", "on_lost"]


def test_a_listener_and_separate_hooks_together_are_refused() -> None:
    with pytest.raises(InvalidInput):
        make(listener=RebalanceListener(), on_lost=lambda ps: None)


def test_librdkafka_log_lines_go_to_python_logging_and_connection_failures_to_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, inner, _ = make()
    with caplog.at_level(logging.DEBUG, logger="kafka_coop.librdkafka"):
        inner.conf["logger"].log(
            40, "%s [%s] %s", "FAIL", "rdkafka#consumer-1", "Connect to ipv4#127.0.0.1:1 failed"
        )
        inner.conf["logger"].log(30, "%s [%s] %s", "MAXPOLL", "rdkafka#consumer-1", "poll interval exceeded")
    levels = {
        r.getMessage().split()[0]: r.levelno for r in caplog.records if r.name == "kafka_coop.librdkafka"
    }
    assert levels == {"FAIL": logging.INFO, "MAXPOLL": logging.WARNING}


def test_an_unreachable_cluster_is_one_sentence_until_it_answers(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[KafkaError] = []
    _, inner, _ = make(conf={"error_cb": seen.append})
    error_cb = inner.conf["error_cb"]
    with caplog.at_level(logging.WARNING, logger="kafka_coop"):
        for _ in range(3):
            error_cb(
                KafkaError(KafkaError._TRANSPORT, "Connect to ipv4#127.0.0.1:1 failed: Connection refused")
            )
        error_cb(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "b:9092 cannot be reached (Connect to ipv4#127.0.0.1:1 failed: Connection refused)" in warnings[0]
    assert "keeps retrying" in warnings[0]
    assert len(seen) == 4, "the user's own error_cb still sees every error"


@pytest.mark.parametrize("key", ["stats_cb", "throttle_cb", "oauth_cb"])
def test_confluent_kafka_callbacks_in_the_conf_reach_the_client(key: str) -> None:
    def callback(*args: Any) -> None:
        return None

    _, inner, _ = make(conf={key: callback})
    assert inner.conf[key] is callback


def test_the_users_on_commit_sees_every_commit_kafka_coop_makes() -> None:
    seen: list[Any] = []
    consumer, inner, _ = make(conf={"on_commit": lambda err, partitions: seen.append((err, partitions))})
    inner.rebalance("assign", parts(0))
    mark(consumer, inner, 0, 4)
    consumer.commit(asynchronous=False)
    consumer.poll(0)  # commit callbacks are served inside poll, as librdkafka serves them
    assert [(err, [(tp.topic, tp.partition, tp.offset) for tp in tps]) for err, tps in seen] == [
        (None, [(T, 0, 5)])
    ]


def test_callbacks_for_a_settings_object_reach_the_client() -> None:
    from kafka_coop.settings import ConsumerSettings

    def oauth(config: str) -> tuple[str, float]:
        return ("token", 0.0)

    settings = ConsumerSettings(bootstrap_servers="b:9092", group_id="g")
    group = FakeGroup()
    CoopConsumer(settings, callbacks={"oauth_cb": oauth}, client=group.client)
    assert group.consumer is not None and group.consumer.conf["oauth_cb"] is oauth


def test_an_unknown_callback_name_is_refused_in_one_sentence() -> None:
    with pytest.raises(InvalidInput) as failure:
        make(callbacks={"on_rebalance": print})
    assert "on_rebalance" in str(failure.value) and "oauth_cb" in str(failure.value)


def test_librdkafkas_own_lost_callback_after_a_fatal_error_is_not_a_second_lost_event() -> None:
    consumer, inner, sink = make("consumer", instance_id="svc-3")
    inner.rebalance("assign", parts(0, 1))
    inner.raise_fatal(KafkaError.UNRELEASED_INSTANCE_ID)
    inner.pending.append(lambda: inner.rebalance("lost", parts(0, 1)))  # revoke_all_rejoin(lost) follows
    with pytest.raises(InstanceIdConflict):
        consumer.poll(0.1)
    consumer.close()
    assert kinds(sink).count("lost") == 1


def test_a_failed_commit_whose_offsets_cannot_be_read_back_still_carries_a_committed_list() -> None:
    """The event contract: every revoked event has a `committed` list; `error` says the outcome is unknown."""
    consumer, inner, sink = make("eager")
    inner.rebalance("assign", parts(0))
    mark(consumer, inner, 0, 1)
    inner.commit_errors.append(kafka_error(KafkaError.REBALANCE_IN_PROGRESS))

    def unreadable(partitions: Any, timeout: float | None = None) -> Any:
        raise kafka_error(KafkaError._DESTROY)

    inner.committed = unreadable  # type: ignore[method-assign]
    inner.rebalance("revoke", parts(0))
    event = last(sink, "revoked")
    assert event.committed == ()
    assert "REBALANCE_IN_PROGRESS" in (event.error or "") and "could not be read back" in (event.error or "")


def test_a_broker_closing_an_idle_connection_is_no_outage(caplog: pytest.LogCaptureFixture) -> None:
    _, inner, _ = make()
    with caplog.at_level(logging.WARNING, logger="kafka_coop"):
        inner.conf["error_cb"](KafkaError(KafkaError._TRANSPORT, "Disconnected: connection closed by peer"))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_assign_queued_before_close_leaves_nothing_owned_and_asks_the_terminated_group_nothing(
    protocol: str,
) -> None:
    consumer, inner, sink = make(protocol)
    inner.rebalance("assign", parts(0) if protocol == "eager" else parts(0, 1))
    mark(consumer, inner, 0, 4)
    inner.pending.append(
        lambda: inner.rebalance("assign", parts(0, 1, 2) if protocol == "eager" else parts(2))
    )
    consumer.close()  # the fake raises if memberid()/assignment() is called after the group terminated
    assert inner.committed_offsets == {(T, 0): 5}, "marked offsets are committed before leaving"
    event = last(sink, "assigned")
    assert event.partitions == () and event.owned == () and "closing" in (event.error or "")
    assert last(sink, "closed").owned == ()


@pytest.mark.parametrize("protocol", ["cooperative", "consumer"])
def test_the_revoke_at_close_after_a_pending_assign_names_only_partitions_the_member_was_given(
    protocol: str,
) -> None:
    """librdkafka's close revokes the group's assignment, pending partitions included (seen on the broker:
    tests/integration/consumer/test_pending_close.py); hooks and events must not name those."""
    revoked: list[list[tuple[str, int]]] = []
    consumer, inner, sink = make(protocol, on_revoked=revoked.append)
    inner.rebalance("assign", parts(0, 1))
    mark(consumer, inner, 0, 4)
    inner.pending.append(lambda: inner.rebalance("assign", parts(2, 3)))
    consumer.close()
    assert revoked == [parts(0, 1)], "on_revoked is told of what it had, not of what it never got"
    given = {p for e in sink.events if e.kind == "assigned" for p in e.partitions}
    released = {p for e in sink.events if e.kind in ("revoked", "lost") for p in e.partitions}
    assert given == set(parts(0, 1)) and released == given
    assert inner.committed_offsets == {(T, 0): 5}
    assert last(sink, "closed").owned == ()


def test_a_topic_given_as_a_string_is_refused_as_confluent_refuses_it() -> None:
    consumer, _, _ = make(subscribe=False)
    with pytest.raises(TypeError, match=r"list of topic names, not 'orders': write \['orders'\]"):
        consumer.subscribe("orders")  # type: ignore[arg-type]

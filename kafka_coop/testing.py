"""A test double for kafka-coop consumers: a group of one member, as librdkafka shows it to its client.

Test a service's hooks and offset handling without a broker, under the callback sequences librdkafka
makes for eager, cooperative-sticky and KIP-848 (`group.protocol=consumer`) groups::

    from kafka_coop import CoopConsumer
    from kafka_coop.testing import FakeGroup

    def test_revoke_commits_what_the_service_finished() -> None:
        group = FakeGroup()
        conf = {"bootstrap.servers": "unused:9092", "group.id": "orders",
                "partition.assignment.strategy": "cooperative-sticky", "auto.offset.reset": "earliest"}
        with CoopConsumer(conf, client=group.client, on_revoked=my_hook) as consumer:
            consumer.subscribe(["orders"])
            group.produce("orders", 0, b"a", b"b", b"c")
            group.assign([("orders", 0)])        # served inside the next poll, as librdkafka does
            first = consumer.poll(0)             # the assignment, then record 0
            second = consumer.poll(0)            # record 1: record 0 is done (polled past)
            group.revoke([("orders", 0)])
            consumer.poll(0)                     # record 1 is done too; the revoke: my_hook, commit
        assert group.committed() == {("orders", 0): 2}

`FakeGroup.client` is what `CoopConsumer(..., client=)` / `CoopAIOConsumer(..., client=)` take; the
client it builds, `FakeConsumer`, is a stand-in for `confluent_kafka.Consumer` that keeps librdkafka's
rules the consumers depend on (librdkafka 2.16 / confluent-kafka 2.16):

- rebalance callbacks, commit callbacks and log lines are served inside `poll`/`consume`/`close`;
  confluent-kafka assigns by itself after a rebalance callback that did not; a rebalance librdkafka
  queued behind fetched records (`after_records=`) is served in the middle of a `consume(n)` batch:
  the batch holds records from before and after the callback, and those it collected before of a
  partition the rebalance took or gave again are dropped (outdated: the fetch restarts);
- `assign` under cooperative/KIP-848 and `incremental_assign` under eager are refused (`_STATE`), as
  is re-assigning an assigned partition (`_CONFLICT`); after a fatal error or during close every assign
  is an unassign; close revokes the *group's* assignment (pending partitions included);
- fetching starts after the assignment is served: a `seek` before that is `_STATE`; a seek resets the
  position; `position()` is the offset after the last record handed out, with its leader epoch;
  `FakeConsumer.seek_undone_by_offset_reset = True` adds librdkafka's race: a partition with no
  committed offset waits one call for its offset reset, and a seek made meanwhile is undone;
- offsets: with `enable.auto.offset.store` (default true) handing out a record stores it and
  `store_offsets` is refused; with `enable.auto.commit` (default true) the stored offsets of removed
  partitions are committed on unassign, with the member id of that moment (a static member whose id was
  reset is fenced: FENCED_INSTANCE_ID, fatal); `commit()` without offsets commits what is stored; with
  nothing new, a synchronous one raises `_NO_OFFSET` and an asynchronous one returns and `on_commit`
  gets `_NO_OFFSET` (and the assignment) inside a later call;
- a fatal error drops the assignment without a callback and logs facility FATAL;
- a member that rebuilds its client in-process (live reconfiguration) gets, when the new client
  subscribes, what the old one held: the group's rebalance for a rejoining static member
  (`FakeGroup.refuse_rejoin` makes that join fail as a refused KIP-848 conversion does: fatal).

`FakeControl` is the control topic a test drives: `CoopConsumer(conf, client=group.client,
control=FakeControl())`, then `control.send(record)`; the member acts on it inside its next call.

It is a model, not a broker: kafka-coop's own tests run the same behaviours on a real one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kafka_coop.control import ControlOptions, ControlRecord
from kafka_coop.events import PartitionKey

__all__ = [
    "FakeConsumer",
    "FakeControl",
    "FakeGroup",
    "FakeMessage",
    "MockedClock",
    "PartitionResult",
    "WouldHang",
    "kafka_error",
]

OFFSET_INVALID = -1001
OFFSET_BEGINNING = -2
OFFSET_END = -1


def kafka_error(code: int, message: str | None = None, *, fatal: bool = False) -> KafkaException:
    """The KafkaException librdkafka raises for `code`."""
    text = message if message is not None else KafkaError(code).str()
    return KafkaException(KafkaError(code, text, fatal=fatal))


class FakeMessage:
    """A record (or, with `error`, an error event) as `poll`/`consume` return it."""

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        value: bytes | None = None,
        *,
        key: bytes | None = None,
        leader_epoch: int | None = 0,
        error: KafkaError | None = None,
    ) -> None:
        self._topic, self._partition, self._offset = topic, partition, offset
        self._value, self._key, self._epoch, self._error = value, key, leader_epoch, error

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes | None:
        return self._value

    def key(self) -> bytes | None:
        return self._key

    def leader_epoch(self) -> int | None:
        return self._epoch

    def error(self) -> KafkaError | None:
        return self._error

    def __repr__(self) -> str:
        return f"FakeMessage({self._topic!r}, {self._partition}, {self._offset})"


class PartitionResult:
    """A commit result that failed for its partition (`confluent_kafka.TopicPartition.error` is read-only)."""

    def __init__(self, topic: str, partition: int, offset: int, error: KafkaError) -> None:
        self.topic, self.partition, self.offset, self.error = topic, partition, offset, error
        self.leader_epoch: int | None = None


class WouldHang(BaseException):
    """The real client would never return here: close() served a rebalance queued before it, after its
    group handler terminated (librdkafka issue 4041; confluent-kafka holds the GIL while it waits).
    A BaseException, so that no `except Exception` in the code under test hides it."""


class _QueuedRebalance:
    """A rebalance librdkafka queued for the member, served by its next call."""

    def __init__(
        self,
        member: FakeConsumer,
        kind: str,
        keys: list[PartitionKey] | None,
        offsets: Mapping[PartitionKey, int] | None = None,
    ) -> None:
        """`keys` None: the group's whole assignment when it is served (nothing to serve if empty)."""
        self.member, self.kind, self.keys, self.offsets = member, kind, keys, offsets

    def __call__(self) -> None:
        keys = self.keys if self.keys is not None else sorted(self.member.group_assignment)
        if keys or self.keys is not None:
            self.member.rebalance(self.kind, keys, self.offsets)


class FakeConsumer:
    """A `confluent_kafka.Consumer` stand-in over a `FakeGroup` (see the module docstring)."""

    def __init__(self, conf: Mapping[str, Any], group: FakeGroup | None = None) -> None:
        self.conf = dict(conf)
        self.group = group if group is not None else FakeGroup()
        if self.conf.get("group.protocol") == "consumer":
            self.protocol = "consumer"
        elif "cooperative-sticky" in str(self.conf.get("partition.assignment.strategy", "")):
            self.protocol = "cooperative"
        else:
            self.protocol = "eager"
        self.assigned: dict[
            PartitionKey, int
        ] = {}  # partition -> next offset to fetch (OFFSET_INVALID: committed)
        self.started: set[PartitionKey] = (
            set()
        )  # partitions whose fetcher has started (after a served assign)
        self.paused: set[PartitionKey] = set()
        self.app_pos: dict[PartitionKey, tuple[int, int | None]] = {}
        self.group_assignment: set[PartitionKey] = set()  # what the group gave (rkcg_group_assignment)
        self.stored: dict[PartitionKey, int] = {}
        self.held_at_close: list[PartitionKey] = []
        self.member_id = "member-1"
        self.fatal: int | None = None
        self.terminating = False
        self.terminated = False
        self.closed = False
        self.calls: list[str] = []
        self.commit_errors: list[KafkaException] = []
        self.partition_commit_errors: dict[PartitionKey, int] = {}
        self.callbacks: dict[str, Callable[..., Any]] = {}
        self.pending: list[Callable[[], Any]] = []
        self.callback_raised: list[BaseException] = []
        self.seeks: list[tuple[str, int, int]] = []
        # librdkafka's offset-reset race (off unless set): a seek made while a started partition still
        # waits for its offset reset (no committed offset: ListOffsets in flight, fetch state offset-wait)
        # is undone when the reset's now outdated reply comes back, which restarts the reset
        # (rdkafka_partition.c, "outdated offset response"; librdkafka issue 2256). Set it to see it.
        self.seek_undone_by_offset_reset = False
        self._resetting: set[PartitionKey] = set()  # ListOffsets in flight (with the race on): one call long
        self._reset_asked: set[PartitionKey] = set()
        self.on_poll: list[Callable[[], Any]] = []  # run inside the next poll/consume, before it returns
        self.mid_batch: list[tuple[int, Callable[[], Any]]] = []  # (after that many records, the op)
        # Bumped by every (un)assign: older fetched records are outdated.
        self._versions: dict[PartitionKey, int] = {}
        self._assign_calls = 0
        self._rr = 0

    @property
    def committed_offsets(self) -> dict[PartitionKey, int]:
        """The group's committed offsets (what commits from this client reached)."""
        return self.group.committed_offsets

    # --- flags ---------------------------------------------------------------------------------
    def _flag(self, key: str, default: bool) -> bool:
        value = self.conf.get(key)
        return default if value is None else str(value).lower() in ("true", "1")

    @property
    def auto_store(self) -> bool:
        return self._flag("enable.auto.offset.store", True)

    @property
    def auto_commit(self) -> bool:
        return self._flag("enable.auto.commit", True)

    # --- what librdkafka does to the application ------------------------------------------------
    def subscribe(self, topics: list[str], **callbacks: Callable[..., Any]) -> None:
        self._check_open()
        if isinstance(topics, str):
            raise TypeError("expected list of topic unicode strings")
        self.calls.append("subscribe")
        self.callbacks = callbacks
        rejoin, self.group.rejoining = self.group.rejoining, None
        if rejoin is not None and self.group.refused_rejoin is not None:
            code, self.group.refused_rejoin = self.group.refused_rejoin, None
            self.pending.append(lambda: self.raise_fatal(code, "ConsumerGroupHeartbeat"))
        elif rejoin is not None:
            self.pending.append(_QueuedRebalance(self, "assign", rejoin))

    def unsubscribe(self) -> None:
        """The group's assignment is revoked (served by the next call) and the member joins no more. A
        rebalance still queued is served first; eager then revokes nothing more (its rejoin makes it
        stale, rd_kafka_cgrp_revoke_all_rejoin)."""
        self._check_open()
        self.calls.append("unsubscribe")
        queued = any(isinstance(op, _QueuedRebalance) for op in self.pending)
        if not (queued and self.protocol == "eager"):  # the group's assignment, pending partitions included
            self.pending.append(_QueuedRebalance(self, "revoke", None))

    def rebalance(
        self, kind: str, keys: Iterable[PartitionKey], offsets: Mapping[PartitionKey, int] | None = None
    ) -> None:
        """librdkafka's rebalance_cb as confluent-kafka runs it, now (kind: assign, revoke, lost)."""
        partitions = [TopicPartition(t, p, (offsets or {}).get((t, p), OFFSET_INVALID)) for t, p in keys]
        given = {(tp.topic, tp.partition) for tp in partitions}
        if kind == "assign":
            self.group_assignment = given if self.protocol == "eager" else self.group_assignment | given
        else:
            self.group_assignment -= given
        self._assign_calls = 0
        callback = self.callbacks.get({"assign": "on_assign", "revoke": "on_revoke", "lost": "on_lost"}[kind])
        try:
            if callback is not None:
                callback(self, partitions)
        except BaseException as exc:  # what librdkafka's rebalance_cb sees (confluent-kafka: CallState_crash)
            self.callback_raised.append(exc)
            raise
        finally:
            if self._assign_calls == 0:  # confluent-kafka's fallback
                if kind == "assign":
                    self._do_assign(partitions, incremental=self.protocol != "eager")
                elif self.protocol == "eager":
                    self._remove(list(self.assigned))
                else:
                    self._remove([(tp.topic, tp.partition) for tp in partitions])

    def log(self, facility: str, text: str, level: int = logging.WARNING) -> None:
        """A librdkafka log line, served by the next poll."""
        self.pending.append(
            lambda: self.conf["logger"].log(level, "%s [%s] %s", facility, "rdkafka#consumer-1", text)
        )

    def raise_fatal(self, code: int, detail: str = "heartbeat") -> None:
        """rd_kafka_set_fatal_error: no callback, the assignment is dropped, a FATAL log line."""
        self.fatal = code
        self.assigned.clear()
        self.started.clear()
        self.log("FATAL", f"Fatal error: {KafkaError(code).str()}: {detail}", logging.CRITICAL)

    # --- fetching ------------------------------------------------------------------------------
    def _serve(self) -> None:
        while self.pending:
            self.pending.pop(0)()
        self.started |= set(self.assigned)  # the fetchers of served assignments run from now on

    def _next_record(self) -> FakeMessage | None:
        keys = sorted(k for k in self.assigned if k in self.started and k not in self.paused)
        for i in range(len(keys)):
            key = keys[(self._rr + i) % len(keys)]
            msg = self._fetch(key)
            if msg is not None:
                self._rr = (self._rr + i + 1) % len(keys)
                return msg
        return None

    def _fetch(self, key: PartitionKey) -> FakeMessage | None:
        records = self.group.records.get(key, {})
        position = self.assigned[key]
        if position == OFFSET_INVALID:
            committed = self.group.committed_offsets.get(key)
            if self.seek_undone_by_offset_reset and committed is None and key not in self._reset_asked:
                self._reset_asked.add(key)
                self._resetting.add(key)
                return None  # the reset's ListOffsets request is in flight until the next call
            self._resetting.discard(key)
            reset = str(self.conf.get("auto.offset.reset", "latest"))
            end = max(records, default=-1) + 1
            position = (
                committed if committed is not None else (0 if reset in ("earliest", "smallest") else end)
            )
        elif position == OFFSET_BEGINNING:
            position = 0
        elif position == OFFSET_END:
            position = max(records, default=-1) + 1
        later = [o for o in records if o >= position]
        if not later:
            self.assigned[key] = position
            return None
        offset = min(later)
        self.assigned[key] = offset + 1
        return FakeMessage(key[0], key[1], offset, records[offset], leader_epoch=self.group.leader_epoch)

    def _hand_out(self, msg: FakeMessage) -> None:
        """The record reaches the application: its position (and, with auto store, its stored offset)
        moves past it. In a batch, only once the batch is complete (rd_kafka_q_serve_rkmessages), so a
        record dropped as outdated moves neither."""
        key = (msg.topic(), msg.partition())
        self.app_pos[key] = (msg.offset() + 1, msg.leader_epoch())
        if self.auto_store:
            self.stored[key] = msg.offset() + 1

    def poll(self, timeout: float | None = -1) -> Any:
        self._check_open()
        self.calls.append("poll")
        self.pending.extend(op for _, op in sorted(self.mid_batch, key=lambda entry: entry[0]))
        self.mid_batch.clear()
        self._serve()
        msg = self._next_record()
        if msg is not None:
            self._hand_out(msg)
        self._after_poll()
        return msg

    def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Any]:
        self._check_open()
        self.calls.append("consume")
        self._serve()
        mid = sorted(self.mid_batch, key=lambda entry: entry[0])
        self.mid_batch.clear()
        batch: list[tuple[Any, int]] = []  # (record, its partition's version when fetched)
        taken = 0
        while len(batch) < num_messages:
            while mid and mid[0][0] <= taken:  # librdkafka serves the op where it sits in the queue
                mid.pop(0)[1]()
                self.started |= set(self.assigned)
                batch = [(m, v) for m, v in batch if self._versions.get((m.topic(), m.partition())) == v]
            msg = self._next_record()
            if msg is None:
                break
            taken += 1
            batch.append((msg, self._versions.get((msg.topic(), msg.partition()), 0)))
        self.pending.extend(op for _, op in mid)  # queued behind records this batch did not take
        for msg, _ in batch:
            self._hand_out(msg)
        self._after_poll()
        return [m for m, _ in batch]

    def _after_poll(self) -> None:
        while self.on_poll:
            self.on_poll.pop(0)()

    def seek(self, partition: TopicPartition) -> None:
        self._check_open()
        key = (partition.topic, partition.partition)
        if key not in self.assigned or key not in self.started:
            raise kafka_error(KafkaError._STATE)  # fetching has not started (rd_kafka_toppar_op_seek)
        self.seeks.append((partition.topic, partition.partition, partition.offset))
        if key in self._resetting:
            return  # the seek "succeeded"; the reset's outdated reply puts the partition back where it was
        self.assigned[key] = partition.offset
        self.app_pos.pop(key, None)  # "seek()ing is analogue to a (re)assign()" (#3567)

    def pause(self, partitions: list[TopicPartition]) -> None:
        self.paused |= {(tp.topic, tp.partition) for tp in partitions}

    def resume(self, partitions: list[TopicPartition]) -> None:
        self.paused -= {(tp.topic, tp.partition) for tp in partitions}

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        self._check_open()
        out = []
        for tp in partitions:
            offset, epoch = self.app_pos.get((tp.topic, tp.partition), (OFFSET_INVALID, None))
            out.append(
                TopicPartition(tp.topic, tp.partition, offset, leader_epoch=-1 if epoch is None else epoch)
            )
        return out

    # --- assignment ----------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("Consumer closed")

    def _check_group_answers(self) -> None:
        # rd_kafka_cgrp_op_serve destroys ops without a reply once the group is terminated, so
        # memberid()/assignment() would wait forever; a test must never get here.
        if self.terminated:
            raise AssertionError("memberid()/assignment() after the group terminated would never return")

    def _maybe_terminate(self) -> None:
        if self.terminating and not self.assigned:
            self.terminated = True  # close: unassign done -> leave -> terminated

    def _remove(self, keys: list[PartitionKey]) -> None:
        """rd_kafka_assignment_serve_removals: stop fetching; with auto commit, commit what is stored."""
        removed = [k for k in keys if k in self.assigned]
        for key in removed:
            self._versions[key] = self._versions.get(key, 0) + 1
            self.assigned.pop(key, None)
            self.started.discard(key)
            self.app_pos.pop(key, None)
        if self.auto_commit and self.fatal is None:
            todo = [k for k in removed if self.stored.get(k, -1) > self.group.committed_offsets.get(k, -1)]
            if todo:
                self._send_commit({k: self.stored[k] for k in todo}, reason="unassign")
        self._maybe_terminate()

    def _do_assign(self, partitions: list[TopicPartition], *, incremental: bool) -> None:
        if self.fatal is not None or self.terminating:
            self._remove(list(self.assigned))  # "treating assign as unassign"
            return
        if incremental:
            for tp in partitions:
                if (tp.topic, tp.partition) in self.assigned:
                    raise kafka_error(KafkaError._CONFLICT)
        else:
            self._remove(
                [k for k in self.assigned if k not in {(tp.topic, tp.partition) for tp in partitions}]
            )
            self.assigned = {}
        for tp in partitions:
            key = (tp.topic, tp.partition)
            self._versions[key] = self._versions.get(key, 0) + 1
            self.assigned[key] = tp.offset
            self.started.discard(key)
            self.app_pos.pop(key, None)

    def assign(self, partitions: list[TopicPartition]) -> None:
        self._check_open()
        self.calls.append("assign")
        self._assign_calls += 1
        if self.protocol != "eager" and self.callbacks and self.fatal is None and not self.terminating:
            raise kafka_error(KafkaError._STATE)
        self._do_assign(partitions, incremental=False)

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self._check_open()
        self.calls.append("incremental_assign")
        self._assign_calls += 1
        if self.protocol == "eager" and self.fatal is None and not self.terminating:
            raise kafka_error(KafkaError._STATE)
        self._do_assign(partitions, incremental=True)

    def unassign(self) -> None:
        self._check_open()
        self.calls.append("unassign")
        self._assign_calls += 1
        if self.protocol != "eager" and self.callbacks and self.fatal is None and not self.terminating:
            raise kafka_error(KafkaError._STATE)
        self._remove(list(self.assigned))

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        self._check_open()
        self.calls.append("incremental_unassign")
        self._assign_calls += 1
        if self.protocol == "eager":
            raise kafka_error(KafkaError._STATE)
        self._remove([(tp.topic, tp.partition) for tp in partitions])

    def assignment(self) -> list[TopicPartition]:
        self._check_open()
        self._check_group_answers()
        return [TopicPartition(t, p) for t, p in sorted(self.assigned)]

    def memberid(self) -> str:
        self._check_open()
        self._check_group_answers()
        self.calls.append("memberid")
        return self.member_id

    def consumer_group_metadata(self) -> Any:
        return {"group_id": self.conf.get("group.id"), "member_id": self.member_id}

    # --- offsets -------------------------------------------------------------------------------
    def store_offsets(self, message: Any = None, offsets: list[TopicPartition] | None = None) -> None:
        self._check_open()
        if self.auto_store:
            raise kafka_error(KafkaError._INVALID_ARG)
        if message is not None:
            self.stored[(message.topic(), message.partition())] = message.offset() + 1
        for tp in offsets or []:
            self.stored[(tp.topic, tp.partition)] = tp.offset

    def commit(self, message: Any = None, offsets: Any = None, asynchronous: bool = True) -> Any:
        self._check_open()
        self.calls.append("commit")
        if self.commit_errors:
            raise self.commit_errors.pop(0)
        if message is not None:
            todo = {(message.topic(), message.partition()): message.offset() + 1}
        elif offsets is not None:
            todo = {(tp.topic, tp.partition): tp.offset for tp in offsets}
        else:
            committed = self.group.committed_offsets
            todo = {k: v for k, v in self.stored.items() if v > committed.get(k, -1)}
            if not todo and asynchronous:  # librdkafka answers through the commit callback, later
                on_commit = self.conf.get("on_commit")
                if on_commit is not None:
                    parts = [TopicPartition(t, p, OFFSET_INVALID) for t, p in sorted(self.assigned)]
                    self.pending.append(lambda: on_commit(KafkaError(KafkaError._NO_OFFSET), parts))
                return None
            if not todo:
                raise kafka_error(KafkaError._NO_OFFSET)
        result = self._send_commit(todo, reason="commit")
        if result is None:
            raise kafka_error(KafkaError.FENCED_INSTANCE_ID, fatal=True)
        failed = [tp for tp in result if tp.error is not None]
        if failed:  # confluent-kafka raises the last partition's error and drops the list
            raise KafkaException(failed[-1].error)
        return None if asynchronous else result

    def _send_commit(self, offsets: Mapping[PartitionKey, int], *, reason: str) -> list[Any] | None:
        """An OffsetCommit: refused (fatal) for a static member whose member id was reset."""
        self.group.commits.append((reason, dict(offsets), self.member_id))
        if self.member_id == "" and self.conf.get("group.instance.id"):
            self.raise_fatal(KafkaError.FENCED_INSTANCE_ID, "OffsetCommit failed")
            return None
        result: list[Any] = []
        for key, offset in sorted(offsets.items()):
            code = self.partition_commit_errors.get(key)
            if code is None:
                self.group.committed_offsets[key] = offset
                result.append(TopicPartition(key[0], key[1], offset))
            else:
                result.append(PartitionResult(key[0], key[1], offset, KafkaError(code)))
        on_commit = self.conf.get("on_commit")
        if on_commit is not None:
            copy = list(result)
            self.pending.append(lambda: on_commit(None, copy))
        return result

    def committed(
        self, partitions: list[TopicPartition], timeout: float | None = None
    ) -> list[TopicPartition]:
        self.calls.append("committed")
        return [
            TopicPartition(
                tp.topic,
                tp.partition,
                self.group.committed_offsets.get((tp.topic, tp.partition), OFFSET_INVALID),
            )
            for tp in partitions
        ]

    def close(self) -> None:
        self._check_open()
        self.calls.append("close")
        self.terminating = True
        queued = [op.kind for op in self.pending if isinstance(op, _QueuedRebalance)]
        if queued and self.callbacks:
            self.closed = True
            raise WouldHang(
                f"close() found a queued {queued[0]}: librdkafka serves it after its group handler "
                "terminated and never returns (librdkafka issue 4041); serve it before closing"
            )
        while self.pending:  # close serves what was queued before it (log lines, commit callbacks)
            self.pending.pop(0)()
        self.held_at_close = sorted(self.group_assignment)
        if self.fatal is None and self.callbacks:
            # eager revokes the app's assignment (none after a pending assign it turned into an unassign);
            # cooperative and KIP-848 revoke the group's, pending partitions included
            revoke = self.assigned.keys() if self.protocol == "eager" else self.group_assignment
            if revoke:
                self.rebalance("revoke", sorted(revoke))
        self._remove(list(self.assigned))
        self.closed = True


class FakeGroup:
    """A consumer group of one member, with its topics and committed offsets (see the module docstring).

    Rebalances are queued the way librdkafka queues them: the next `poll`/`consume`/`close` of the
    consumer serves them, inside that call.
    """

    def __init__(self, *, leader_epoch: int = 0) -> None:
        self.records: dict[PartitionKey, dict[int, bytes | None]] = {}
        self.committed_offsets: dict[PartitionKey, int] = {}
        self.commits: list[tuple[str, dict[PartitionKey, int], str]] = []  # (why, offsets, member id) sent
        self.leader_epoch = leader_epoch
        self.consumer: FakeConsumer | None = None
        self.clients: list[FakeConsumer] = []  # every client made, the first one first
        self.rejoining: list[PartitionKey] | None = None  # what a rebuilt client is given when it subscribes
        self.refused_rejoin: int | None = None

    def client(self, conf: Mapping[str, Any]) -> FakeConsumer:
        """What `CoopConsumer(..., client=group.client)` calls with the client conf. A second client of a
        member (a live rebuild) is given, when it subscribes, what the one before it held."""
        previous = self.consumer
        if previous is not None:
            self.rejoining = previous.held_at_close if previous.closed else sorted(previous.group_assignment)
        self.consumer = FakeConsumer(conf, self)
        self.clients.append(self.consumer)
        return self.consumer

    def refuse_rejoin(self, code: int = KafkaError.GROUP_ID_NOT_FOUND) -> None:
        """The next rebuilt client's join fails fatally (a refused KIP-848 conversion: GROUP_ID_NOT_FOUND)."""
        self.refused_rejoin = code

    def _member(self) -> FakeConsumer:
        if self.consumer is None:
            raise RuntimeError("No consumer uses this FakeGroup yet: pass client=group.client to it first.")
        return self.consumer

    # --- the log ---------------------------------------------------------------------------------
    def produce(self, topic: str, partition: int, *values: bytes | None, at: int | None = None) -> list[int]:
        """Append records; `at` places the first at that offset (a gap, as compaction or transaction
        markers leave). Returns their offsets."""
        log = self.records.setdefault((topic, partition), {})
        offset = at if at is not None else max(log, default=-1) + 1
        offsets = []
        for value in values:
            log[offset] = value
            offsets.append(offset)
            offset += 1
        return offsets

    def committed(self) -> dict[PartitionKey, int]:
        """The group's committed offsets."""
        return dict(self.committed_offsets)

    # --- what the group does to its member (served by the member's next call) -----------------------
    def _queue(self, op: Callable[[], Any], after_records: int | None) -> None:
        """Served by the member's next call; `after_records`: queued behind that many fetched records,
        so a `consume(n)` serves it in the middle of its batch (a `poll` first thing)."""
        member = self._member()
        if after_records is None:
            member.pending.append(op)
        else:
            member.mid_batch.append((after_records, op))

    def assign(
        self,
        partitions: Iterable[PartitionKey],
        offsets: Mapping[PartitionKey, int] | None = None,
        *,
        after_records: int | None = None,
    ) -> None:
        """The group gives partitions (eager: the whole new assignment)."""
        member = self._member()
        self._queue(_QueuedRebalance(member, "assign", list(partitions), offsets), after_records)

    def revoke(self, partitions: Iterable[PartitionKey], *, after_records: int | None = None) -> None:
        """The group takes partitions back (eager: everything, then `assign` the rest)."""
        member = self._member()
        self._queue(_QueuedRebalance(member, "revoke", list(partitions)), after_records)

    def lose(self, partitions: Iterable[PartitionKey], *, after_records: int | None = None) -> None:
        """The partitions were lost (session or poll limit ran out, fenced)."""
        member = self._member()
        self._queue(_QueuedRebalance(member, "lost", list(partitions)), after_records)

    def rebalance_to(self, partitions: Iterable[PartitionKey], *, after_records: int | None = None) -> None:
        """A rebalance that leaves the member owning `partitions`, in its protocol's sequence, as
        librdkafka 2.16 serves it (measured on a broker: tests/integration/consumer/
        test_fake_matches_client.py): eager revokes everything and assigns the new set; cooperative and
        KIP-848 revoke what goes and then assign what comes, also when nothing comes (`on_assign` with
        `[]`, an `assigned` event with no partitions); cooperative-sticky's revoking round ends with one
        more empty assign before the round that follows it. A rebalance that only adds assigns once.
        `after_records`: the whole sequence is served in the middle of the next `consume` batch."""
        member = self._member()
        new = set(partitions)
        old = set(member.group_assignment)
        after = after_records
        if member.protocol == "eager":
            if old:
                self.revoke(sorted(old), after_records=after)
            self.assign(sorted(new), after_records=after)
            return
        if old - new:
            self.revoke(sorted(old - new), after_records=after)
            if member.protocol == "cooperative":
                self.assign([], after_records=after)  # the revoking round's own (empty) assignment
            self.assign(sorted(new - old), after_records=after)
        elif new - old:
            self.assign(sorted(new - old), after_records=after)

    def fence(self, code: int = KafkaError.FENCED_INSTANCE_ID) -> None:
        """A fatal error (e.g. another member took this group.instance.id)."""
        member = self._member()
        member.pending.append(lambda: member.raise_fatal(code))

    def overrun_poll_limit(self, *, rebalancing: bool = False) -> None:
        """The application did not poll within max.poll.interval.ms: librdkafka logs MAXPOLL, resets a
        classic member's id, and serves the loss of everything, as a revoke when a rebalance was
        under way (rd_kafka_cgrp_revoke_all_rejoin_maybe)."""
        member = self._member()
        member.log("MAXPOLL", "Application maximum poll interval (300000ms) exceeded by 1ms: leaving group")
        if member.protocol != "consumer":
            member.member_id = ""  # at once, on librdkafka's own thread (memberid() reads it)
        member.pending.append(_QueuedRebalance(member, "revoke" if rebalancing else "lost", None))

    def rejoin(self, member_id: str = "member-2") -> None:
        """The member joins again with a new member id (after an eviction)."""
        member = self._member()

        def join() -> None:
            member.member_id = member_id

        member.pending.append(join)


class MockedClock:
    """A clock a test moves, and the watchdog of a process that runs on it.

    `sleep(s)`: the process ran for `s` (the watchdog ticked through it); `freeze(s)`: it did not run
    for `s` (SIGSTOP, a paused VM). Either ends with the watchdog's tick on every consumer registered.
    Pass it as `CoopConsumer(conf, client=group.client, clock=clock)`: every deadline, interval and freeze
    window of that consumer reads it, never the process's clock. Every reading is `step` later than the
    one before, as on a real clock, so a loop that waits for a deadline ends."""

    def __init__(self, start: float = 1000.0, *, step: float = 0.001) -> None:
        self.now = start
        self.step = step
        self._stops: list[tuple[float, float]] = []  # (ended at, length)
        self._states: list[Any] = []

    def time(self) -> float:
        self.now += self.step
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.tick()

    def freeze(self, seconds: float) -> None:
        self.now += seconds
        self._stops.append((self.now, seconds))
        self.tick()

    def tick(self) -> None:
        for state in self._states:
            state.tick, state.slow = self.now, True

    def register(self, state: Any) -> None:
        self._states.append(state)

    def stopped_for(self, since: float, now: float) -> float:
        return max((length for at, length in self._stops if since < at <= now), default=0.0)


class FakeControl:
    """The control topic, driven by a test: `send(record)` hands the record to the member as its
    follower would; the member judges and acts on it inside its next `poll`/`consume`."""

    def __init__(self, options: ControlOptions | None = None) -> None:
        self.options = options or ControlOptions()
        self._deliver: Callable[[ControlRecord], None] | None = None
        self.closed = False

    def start(self, deliver: Callable[[ControlRecord], None]) -> None:
        self._deliver = deliver

    def close(self) -> None:
        self.closed = True

    def send(self, record: ControlRecord) -> None:
        if self._deliver is None:
            raise RuntimeError("The consumer follows no control yet: subscribe it first.")
        self._deliver(record)

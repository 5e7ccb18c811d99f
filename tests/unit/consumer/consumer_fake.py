"""A fake `confluent_kafka.Consumer` that replays librdkafka's rebalance behaviour, for fast handler tests.

It models what the handler depends on, as librdkafka 2.16 / confluent-kafka 2.16 do it:
- the rebalance callback, with confluent-kafka's fallback `assign()` when the callback made none, and
  an exception from the callback coming out of `poll` (CallState_crash);
- assign-method checks (`_STATE` for the wrong kind of call), `_CONFLICT` for re-assigning a partition;
- after a fatal error or during close, every assign is treated as an unassign
  (rd_kafka_cgrp_handle_assign_op);
- close revokes the *group's* assignment: under cooperative and KIP-848 that includes partitions of an
  assign that was still pending when close began, which the application never had
  (rd_kafka_cgrp_unsubscribe -> rd_kafka_cgrp_revoke_all_rejoin with rkcg_group_assignment);
- stored offsets: `store_offsets` refuses with `_INVALID_ARG` when `enable.auto.offset.store=true`,
  where delivery stores instead; `commit()` without offsets commits stored offsets above the committed
  ones, or raises `_NO_OFFSET`; a partial failure raises one KafkaException (per-partition results lost);
- a fatal error is logged with facility FATAL through the `logger` (librdkafka's LOG_EMERG line).

It is never the only proof: tests/integration/consumer/test_consumer_contract.py runs the same behaviours on
the real broker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

Key = tuple[str, int]


def kafka_error(code: int, message: str | None = None, *, fatal: bool = False) -> KafkaException:
    text = message if message is not None else KafkaError(code).str()
    return KafkaException(KafkaError(code, text, fatal=fatal))


class FakeMessage:
    def __init__(self, topic: str, partition: int, offset: int) -> None:
        self._topic, self._partition, self._offset = topic, partition, offset

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def error(self) -> None:
        return None


class FakeConsumer:
    last: FakeConsumer | None = None

    def __init__(self, conf: dict[str, Any]) -> None:
        FakeConsumer.last = self
        self.conf = conf
        if conf.get("group.protocol") == "consumer":
            self.protocol = "consumer"
        elif "cooperative-sticky" in str(conf.get("partition.assignment.strategy", "")):
            self.protocol = "cooperative"
        else:
            self.protocol = "eager"
        self.assigned: dict[Key, int] = {}
        self.group_assignment: set[Key] = set()  # what the group gave (rkcg_group_assignment)
        self.stored: dict[Key, int] = {}
        self.committed_offsets: dict[Key, int] = {}
        self.member_id = "member-1"
        self.fatal: int | None = None
        self.terminating = False
        self.terminated = False
        self.closed = False
        self.calls: list[str] = []
        self.commit_errors: list[KafkaException] = []
        self.partition_commit_errors: dict[Key, int] = {}
        self.callbacks: dict[str, Callable[..., Any]] = {}
        self.pending: list[Callable[[], Any]] = []
        self.callback_raised: list[BaseException] = []
        self.fetched: list[FakeMessage] = []
        self.seeks: list[tuple[str, int, int]] = []
        self._assign_calls = 0

    # --- what librdkafka does to the application ---------------------------------------------------
    def subscribe(self, topics: list[str], **callbacks: Callable[..., Any]) -> None:
        self.calls.append("subscribe")
        self.callbacks = callbacks

    def rebalance(self, kind: str, keys: Iterable[Key], offsets: dict[Key, int] | None = None) -> None:
        """librdkafka's rebalance_cb as confluent-kafka runs it (kind: assign, revoke, lost)."""
        partitions = [TopicPartition(t, p, (offsets or {}).get((t, p), -1001)) for t, p in keys]
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
                    self.assigned.clear()
                else:
                    for tp in partitions:
                        self.assigned.pop((tp.topic, tp.partition), None)

    def raise_fatal(self, code: int, detail: str = "heartbeat") -> None:
        """rd_kafka_set_fatal_error: no callback, the assignment is dropped, a FATAL log line."""
        self.fatal = code
        self.assigned.clear()
        text = f"Fatal error: {KafkaError(code).str()}: {detail}"
        self.pending.append(
            lambda: self.conf["logger"].log(50, "%s [%s] %s", "FATAL", "rdkafka#consumer-1", text)
        )

    def log_warning(self, facility: str, text: str) -> None:
        """A librdkafka WARNING log line (e.g. MAXPOLL, SESSTMOUT), served by the next poll."""
        self.pending.append(
            lambda: self.conf["logger"].log(30, "%s [%s] %s", facility, "rdkafka#consumer-1", text)
        )

    def deliver(self, topic: str, partition: int, offset: int) -> FakeMessage:
        if self.conf.get("enable.auto.offset.store", "true") == "true":
            self.stored[(topic, partition)] = offset + 1
        return FakeMessage(topic, partition, offset)

    # --- the consumer API ----------------------------------------------------------------------
    def prefetch(self, topic: str, partition: int, *offsets: int) -> None:
        """Records fetched into the local queue; poll/consume hand them out (if still assigned)."""
        self.fetched.extend(FakeMessage(topic, partition, o) for o in offsets)

    def _serve(self) -> None:
        while self.pending:
            self.pending.pop(0)()
            # librdkafka discards what was fetched for partitions no longer assigned (op version barrier)
            self.fetched = [m for m in self.fetched if (m.topic(), m.partition()) in self.assigned]

    def poll(self, timeout: float | None = None) -> Any:
        self.calls.append("poll")
        self._serve()
        if self.fetched:
            return self.fetched.pop(0)
        return None

    def consume(self, num_messages: int = 1, timeout: float | None = None) -> list[Any]:
        self.calls.append("consume")
        self._serve()
        batch, self.fetched = self.fetched[:num_messages], self.fetched[num_messages:]
        return batch

    def seek(self, partition: TopicPartition) -> None:
        """Fetching restarts at partition.offset: what was queued for it is discarded."""
        key = (partition.topic, partition.partition)
        if key not in self.assigned:
            raise kafka_error(KafkaError._STATE)
        self.seeks.append((partition.topic, partition.partition, partition.offset))
        self.fetched = [m for m in self.fetched if (m.topic(), m.partition()) != key]

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

    def _do_assign(self, partitions: list[TopicPartition], *, incremental: bool) -> None:
        if self.fatal is not None or self.terminating:
            self.assigned.clear()  # "treating assign as unassign"
            self._maybe_terminate()
            return
        if incremental:
            for tp in partitions:
                if (tp.topic, tp.partition) in self.assigned:
                    raise kafka_error(KafkaError._CONFLICT)
            for tp in partitions:
                self.assigned[(tp.topic, tp.partition)] = tp.offset
        else:
            self.assigned = {(tp.topic, tp.partition): tp.offset for tp in partitions}

    def assign(self, partitions: list[TopicPartition]) -> None:
        self._check_open()
        self.calls.append("assign")
        self._assign_calls += 1
        if self.protocol != "eager" and self.fatal is None and not self.terminating:
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
        if self.protocol != "eager" and self.fatal is None and not self.terminating:
            raise kafka_error(KafkaError._STATE)
        self.assigned.clear()
        self._maybe_terminate()

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        self._check_open()
        self.calls.append("incremental_unassign")
        self._assign_calls += 1
        if self.protocol == "eager":
            raise kafka_error(KafkaError._STATE)
        for tp in partitions:
            self.assigned.pop((tp.topic, tp.partition), None)
        self._maybe_terminate()

    def assignment(self) -> list[TopicPartition]:
        self._check_open()
        self._check_group_answers()
        return [TopicPartition(t, p) for t, p in sorted(self.assigned)]

    def memberid(self) -> str:
        self._check_open()
        self._check_group_answers()
        self.calls.append("memberid")
        return self.member_id

    def store_offsets(self, message: Any = None, offsets: list[TopicPartition] | None = None) -> None:
        self._check_open()
        if self.conf.get("enable.auto.offset.store", "true") == "true":
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
        todo = {k: v for k, v in self.stored.items() if v > self.committed_offsets.get(k, -1)}
        if not todo:
            raise kafka_error(KafkaError._NO_OFFSET)
        failed = [k for k in todo if k in self.partition_commit_errors]
        for key, offset in todo.items():
            if key not in failed:
                self.committed_offsets[key] = offset
        if failed:  # confluent-kafka raises the last partition's error and drops the list
            raise kafka_error(self.partition_commit_errors[failed[-1]])
        return [TopicPartition(t, p, o) for (t, p), o in sorted(todo.items())]

    def committed(
        self, partitions: list[TopicPartition], timeout: float | None = None
    ) -> list[TopicPartition]:
        self.calls.append("committed")
        return [
            TopicPartition(
                tp.topic, tp.partition, self.committed_offsets.get((tp.topic, tp.partition), -1001)
            )
            for tp in partitions
        ]

    def close(self) -> None:
        self._check_open()
        self.calls.append("close")
        self.terminating = True
        while self.pending:  # close serves what was queued before it, with the group terminating
            self.pending.pop(0)()
        if self.fatal is None:
            # eager revokes the app's assignment (none after a pending assign it turned into an unassign);
            # cooperative and KIP-848 revoke the group's, pending partitions included
            revoke = self.assigned.keys() if self.protocol == "eager" else self.group_assignment
            if revoke:
                self.rebalance("revoke", sorted(revoke))
        self.assigned.clear()
        self.closed = True

"""Closing a consumer: commit what is done, serve every rebalance librdkafka queued for the member, close
the client (revoking through the handler), and report what was committed and what was not; bounded by
a timeout if the application asks (the drivers run it in a thread, and `close_timed_out` says what of
the commit is confirmed).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaException
from confluent_kafka import TopicPartition as ClientPartition

from kafka_coop._waiting import StillRunning, bounded_call
from kafka_coop.consumer._clock import Clock
from kafka_coop.consumer._fatal import describe_error
from kafka_coop.consumer._freeze import FreezeGuard, PyCallState
from kafka_coop.consumer._handler import RebalanceHandler
from kafka_coop.consumer._setup import DriverSetup
from kafka_coop.consumer._steps import Steps
from kafka_coop.errors import ConsumerFailed
from kafka_coop.events import CommittedOffset, RebalanceEvent
from kafka_coop.events import PartitionKey as Key

# How long close serves an incremental rebalance under way before it commits again (see close()).
CLOSE_REBALANCE_WAIT_S = 5.0
# How long close() waits for the client's own close of a member its group dropped (`_close_client`).
CLIENT_CLOSE_WAIT_S = 30.0


@dataclass
class CloseReport:
    """What `close()` committed, and what it could not."""

    committed: list[CommittedOffset] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class Closer:
    """A consumer's close: a base of `WrappedClient`, whose bookkeeping and calls (declared here) it uses."""

    # The wrapped client's, set by `WrappedClient.__init__`
    inner: Any
    prepared: DriverSetup
    handler: RebalanceHandler
    state: PyCallState
    guard: FreezeGuard
    log: logging.Logger
    clock: Clock
    confirmed: dict[Key, int]
    fatal_text: str | None
    subscribed: bool
    closed: bool
    _close_done: object

    if TYPE_CHECKING:  # the core's and the committer's calls

        def keys(self) -> list[Key]: ...
        def offsets(self, keys: Sequence[Key], *, done: object = None) -> list[ClientPartition]: ...
        def may_commit(self) -> str | None: ...
        def _confirm(self, partitions: Iterable[Any]) -> None: ...
        def settle_cancelled(self) -> None: ...
        def seek_back(self, messages: Iterable[Any]) -> None: ...
        def run(self, steps: Steps[Any]) -> Any: ...
        def emit(self, event: RebalanceEvent) -> None: ...

    def close_intended(self, batch_done: bool) -> list[ClientPartition]:
        """What a close would commit (read before a bounded close starts, to say what it could not)."""
        if self.may_commit() is not None or not self.prepared.auto_commit:
            return []
        return self.offsets(self.keys(), done=self.state.held if batch_done else None)

    def close_timed_out(self, intended: list[ClientPartition], timeout: float) -> CloseReport:
        """The report of a close that did not finish within `timeout`: what of `intended` is confirmed."""
        confirmed = self.confirmed
        missing = [tp for tp in intended if confirmed.get((tp.topic, tp.partition)) != tp.offset]
        what = ", ".join(f"{tp.topic}-{tp.partition}@{tp.offset}" for tp in missing) or "nothing pending"
        return CloseReport(
            committed=[(tp.topic, tp.partition, tp.offset) for tp in intended if tp not in missing],
            errors=[
                f"close did not finish within {timeout:g} s (the group coordinator did not answer); "
                f"not committed: {what}; the client goes on closing in the background"
            ],
        )

    def finish_close(self, report: CloseReport) -> None:
        """The end of every close, finished or not: say what failed, emit `closed` (with what was
        committed), close the event sink."""
        error = "; ".join(report.errors) or None
        if error:
            self.log.warning("Close: %s", error)
        self.emit(self.handler.lifecycle("closed", "", committed=report.committed, error=error))
        self.closed = True
        sink = self.prepared.sink
        if sink is not None:
            try:
                sink.close()
            except Exception:
                self.log.exception("Closing the event sink failed")

    def _commit_after_rebalance(
        self, offsets: list[ClientPartition], error: str | None
    ) -> tuple[list[CommittedOffset], str | None]:
        """The close commit was refused with a stale generation: an incremental rebalance is under way
        (e.g. the application stops right after a revoke). Serve it (the records the client hands out
        meanwhile are sought back: they go to no one), then commit the same offsets once."""
        todo = [tp for tp in offsets if self.confirmed.get((tp.topic, tp.partition)) != tp.offset]
        if not todo:
            return [], error
        before, deadline = self.handler.rebalances, self.clock.time() + CLOSE_REBALANCE_WAIT_S
        try:
            while self.handler.rebalances == before and self.clock.time() < deadline:
                msg = self.inner.poll(0.1)
                if msg is not None:
                    self.seek_back([msg])
            result = list(self.inner.commit(offsets=todo, asynchronous=False) or [])
        except (KafkaException, RuntimeError) as exc:
            return [], f"{error}; again after the rebalance: {describe_error(exc)}"
        self._confirm(result)
        return [(tp.topic, tp.partition, tp.offset) for tp in result if tp.error is None], None

    def _serve_rebalances_before_close(self) -> None:
        """Serve, on this thread and while the member's group handler still runs, every rebalance
        librdkafka queued for this member, so that its client's close finds none.

        Why: the client's close starts by terminating the group handler, and a classic member's
        terminate makes a rebalance still queued stale (it rejoins, join-state init), so the handler
        terminates without waiting for it. The close then serves that rebalance, and confluent-kafka's
        callback asks the terminated handler (`rd_kafka_rebalance_protocol`, `rd_kafka_assign`) a
        question nobody answers, holding the GIL: the whole process stops (librdkafka issue 4041; seen
        in CI after a static member's poll overrun, a queued assign of a member that joined during it).

        A member that may leave first unsubscribes: from then on no rebalance can be queued, and the
        revoke it makes is served here. A classic static member with a member id does not: outside
        close, an unsubscribe would send the LeaveGroup static membership exists to avoid. It serves
        what is queued, and only a rebalance that arrives in the instant before the close starts is left
        to it (docs/consumer.md, "Known hang, narrowed"). Records the client hands out meanwhile go to no one:
        they are sought back (not done, not committed), and the partitions' next owner reads them."""
        if not self.subscribed:
            return
        if self._may_leave_first():
            try:
                self.inner.unsubscribe()
            except (KafkaException, RuntimeError) as exc:
                self.log.debug("unsubscribe before close: %s", describe_error(exc))
        deadline = self.clock.time() + CLOSE_REBALANCE_WAIT_S
        try:
            while self.clock.time() < deadline:
                msg = self.inner.poll(0)
                if msg is None:
                    return
                if msg.error() is None:
                    self.seek_back([msg])
        except (KafkaException, RuntimeError) as exc:
            self.log.debug("serving rebalances before close: %s", describe_error(exc))

    def _may_leave_first(self) -> bool:
        """Whether close may unsubscribe before closing the client: not a classic static member that
        still has its member id (its LeaveGroup would hand its partitions to others at once). One whose
        id was reset sends none: librdkafka leaves only with a member id."""
        if self.handler.protocol == "consumer" or not self.prepared.settings.instance_id:
            return True
        try:
            return not str(self.inner.memberid() or "")
        except (KafkaException, RuntimeError):
            return False

    def close(self, *, batch_done: bool) -> CloseReport:
        """Commit what is done, serve every queued rebalance (after an unsubscribe where that sends no
        unwanted LeaveGroup: librdkafka then revokes through the handler here), close the client."""
        report = CloseReport()
        self.handler.closing = True
        self.settle_cancelled()
        if self.fatal_text is not None and self.handler.failure is None:
            self.run(self.handler.fail(self.handler.fatal_from_log(self.fatal_text)))
        keys = self.keys()
        why = self.may_commit()
        if (
            why is None
            and keys
            and self.handler.protocol != "consumer"
            and self.prepared.settings.instance_id
        ):
            try:  # a static member whose member id was reset would be fenced (fatal) by a commit
                if not str(self.inner.memberid() or ""):
                    why = "this member's member id was reset (max.poll.interval.ms or session ran out)"
                    self.handler.evicted = True  # the revoke close makes must not commit either
            except (KafkaException, RuntimeError):
                pass
        self._close_done = self.state.held if batch_done else None
        if why is None and keys:
            intended = self.offsets(keys, done=self._close_done)
            try:
                committed, error, verdict = self.run(self.handler.commit_done(keys))
            except (KafkaException, RuntimeError) as exc:
                committed, error, verdict = [], f"commit on close: {describe_error(exc)}", "failed"
            if verdict == "evicted" and self.handler.protocol != "eager" and self.handler.failure is None:
                committed, error = self._commit_after_rebalance(intended, error)
            report.committed.extend(committed)
            if error:
                report.errors.append(error)
        elif why is not None and keys and not self.prepared.transactional:
            report.errors.append(f"nothing committed on close: {why}")
        evicted = self.handler.evicted
        self._serve_rebalances_before_close()
        evicted = evicted or self.handler.evicted  # serving a loss may have shown the eviction
        # librdkafka's eviction may not be known yet: it logs MAXPOLL to a queue only a poll serves, and
        # a service stuck past its poll limit may go straight to close(). The last call's time tells.
        overran = self.clock.time() - self.guard.checked_at > self.prepared.max_poll_s
        self.handler.client_closing = True
        try:
            if evicted or overran:
                self._close_client(report)
            else:
                self.inner.close()
        except (KafkaException, ConsumerFailed, RuntimeError) as exc:
            self.log.warning("Closing the client reported: %s", describe_error(exc))
        return report

    def _close_client(self, report: CloseReport) -> None:
        """The client's close of a member its group dropped, bounded where the close waits without the
        GIL: past CLIENT_CLOSE_WAIT_S it goes on in a daemon thread and the report says so. The hang seen
        in CI (librdkafka issue 4041: `rd_kafka_rebalance_protocol` / `rd_kafka_assign` inside
        confluent-kafka's rebalance-callback fallback) holds the GIL, so this bound cannot return there
        (docs/consumer.md, "Known hang, narrowed"). What close() commits was committed before it."""
        try:
            bounded_call(self.inner.close, CLIENT_CLOSE_WAIT_S, name="kafka-coop-client-close")
        except StillRunning:
            report.errors.append(
                f"the client's close did not return within {CLIENT_CLOSE_WAIT_S:g} s (librdkafka waits in "
                "its rebalance callback for a member its group dropped); it goes on in the background"
            )


def treat_as_done_on_close() -> bool:
    """Whether the batch the application holds is done when it closes: not while an exception is
    propagating or being handled (close() called from `finally`/`except` after processing raised)."""
    return sys.exc_info()[1] is None

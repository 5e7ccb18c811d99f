"""Live reconfiguration, the member side: judge each control record, and rebuild the client at a safe point.

The control feed hands records over on its own thread; `LiveControl.deliver` queues them and asks the
driver to `arm` its next call. The driver's next `poll`/`consume` (the application's own thread: the
batch it held is done) runs `LiveControl.point`, which judges every queued record (control/_record.judge)
and acts on it there, with the driver's `Member` methods:

- `reconfigure`: drain (explicit marks: wait up to `drain_s` for the records in flight), close the client
  (commit what is done, as close does), install a client built on the new settings (same
  group.instance.id), subscribe, serve the call until the first assignment; on any failure (librdkafka
  refuses the conf, the broker refuses the join: a fatal error, no assignment in `rejoin_s`) go back to the
  old settings the same way and answer `refused`;
- `cutover-close`: drain, close, answer `closed-for-cutover`, and hold: every call returns nothing (no
  client) until the `cutover-rejoin` of the same plan, step + 1, or until `cutover_wait_s`, after which
  the member rejoins on its old settings and answers `refused`;
- `cutover-rejoin`: as `reconfigure`, from the closed state.

Every answer goes on the member's manifest at once; a rebuild emits a `reconfigured` event.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from confluent_kafka import KafkaException

from kafka_coop._vocab import connection_conf
from kafka_coop.control import (
    ControlFeed,
    ControlFollower,
    ControlOptions,
    ControlOutcome,
    ControlRecord,
    judge,
    member_conf,
)
from kafka_coop.errors import ConsumerFailed, KafkaCoopError
from kafka_coop.settings import ConsumerSettings

if TYPE_CHECKING:
    from kafka_coop.consumer._core import WrappedClient
    from kafka_coop.consumer._setup import DriverSetup

DRAIN_STEP_S = 0.05


class Member(Protocol):
    """What a driver gives `LiveControl` (all called on the polling thread)."""

    @property
    def control_core(self) -> WrappedClient: ...

    def control_build(self, settings: ConsumerSettings) -> tuple[DriverSetup, WrappedClient]:
        """A new client on `settings`, not subscribed (raises what librdkafka or the settings refuse)."""
        ...

    def control_close_client(self) -> None:
        """Commit what is done and close the current client, as close does, without ending the member."""
        ...

    def control_install(self, prepared: DriverSetup, core: WrappedClient) -> None:
        """Make `core` the member's client and subscribe it to the member's topics."""
        ...

    def control_hold(self, holding: bool) -> None:
        """Calls return nothing (no client) while `holding`; else they go to the client again."""
        ...

    def control_answered(self) -> None:
        """Publish the manifest now (it carries `LiveControl.outcome`)."""
        ...


@dataclass
class _Closed:
    plan_id: str
    step: int
    began: float
    deadline: float
    settings: ConsumerSettings  # what to rejoin on if no rejoin record comes


class LiveControl:
    """One member's control state: the queue, the last step answered per plan, the cutover it is in."""

    def __init__(
        self,
        options: ControlOptions,
        feed: Any,
        *,
        prepared: DriverSetup,
        arm: Callable[[], None],
        log: logging.Logger,
    ) -> None:
        self.options = options
        self.feed = feed
        self.log = log
        self.clock = prepared.clock  # the consumer's (a rebuilt client keeps it: `_setup.rebuild`)
        self.inbox: deque[ControlRecord] = deque()
        self.wake = threading.Event()
        self.answered: dict[str, int] = {}
        self.outcome: ControlOutcome | None = None
        self.closed: _Closed | None = None
        self.rebuilds: list[float] = []  # seconds per applied reconfiguration (bench, tests)
        self._started_ms = prepared.started_ms
        self._arm = arm
        self._started = False

    def start(self) -> None:
        if not self._started:
            self._started = True
            self.feed.start(self.deliver)

    def close(self) -> None:
        self.feed.close()
        self.wake.set()

    # --- the feed's thread ------------------------------------------------------------------------
    def deliver(self, record: ControlRecord) -> None:
        if record.issued_at_ms < self._started_ms:
            self.log.info(
                "Control record step %d of plan %s predates this member: it changes nothing.",
                record.step,
                record.plan_id,
            )
            return
        self.inbox.append(record)
        self.wake.set()
        self._arm()

    # --- the polling thread -----------------------------------------------------------------------
    def wait(self, timeout: float) -> None:
        """Held for a cutover: wait for a record or the cutover's bound, at most `timeout` (-1: no bound)."""
        closed = self.closed
        if closed is None or self.inbox:
            return
        left = closed.deadline - self.clock.time()
        limit = left if timeout is None or timeout < 0 else min(timeout, left)
        if limit > 0:
            self.wake.wait(limit)
        self.wake.clear()

    def point(self, member: Member) -> None:
        """Judge and act on every queued record; end a cutover that waited too long."""
        while self.inbox:
            record = self.inbox.popleft()
            settings = member.control_core.prepared.settings
            closed = self.closed
            verdict = judge(
                record,
                group=settings.group_id,
                instance_id=settings.instance_id,
                client_id=member.control_core.prepared.client_id,
                answered=self.answered,
                waiting=None if closed is None else (closed.plan_id, closed.step),
            )
            if verdict.verdict == "ignore":
                self.log.info(
                    "Control record step %d of plan %s (%s) ignored: %s.",
                    record.step,
                    record.plan_id,
                    record.kind,
                    verdict.reason,
                )
                continue
            self.answered[record.plan_id] = record.step
            if verdict.verdict == "refuse":
                self.log.warning(
                    "Control record step %d of plan %s refused: %s.",
                    record.step,
                    record.plan_id,
                    verdict.reason,
                )
                self._answer(member, record.plan_id, record.step, "refused", verdict.reason)
            elif record.kind == "cutover-close":
                self._close_for_cutover(member, record)
            else:
                self._reconfigure(member, record)
        closed = self.closed
        if closed is not None and self.clock.time() >= closed.deadline:
            self._give_up(member, closed)

    def _reconfigure(self, member: Member, record: ControlRecord) -> None:
        began = self.clock.time()
        closed = self.closed
        current = closed.settings if closed is not None else member.control_core.prepared.settings
        rendered = closed.settings.render() if closed is not None else member.control_core.prepared.rendered
        try:
            wanted = ConsumerSettings.from_conf(member_conf(rendered, record.settings))
        except (KafkaCoopError, ValueError) as exc:
            self._refuse_before(member, record, f"the new settings are invalid: {exc}")
            return
        if closed is None and wanted == current:
            self._answer(member, record.plan_id, record.step, "applied", "already on these settings", 0.0)
            return
        try:
            prepared, core = member.control_build(wanted)
        except (KafkaException, KafkaCoopError, ValueError) as exc:
            self._refuse_before(member, record, f"librdkafka refused the new settings: {_text(exc)}")
            return
        if closed is None:
            self._drain(member.control_core)
            member.control_close_client()
        else:
            began = closed.began
        member.control_hold(False)
        member.control_install(prepared, core)
        self.closed = None
        error = self._first_assignment(member)
        if error is None:
            seconds = round(self.clock.time() - began, 3)
            self.rebuilds.append(seconds)
            self.log.info(
                "Reconfigured live (plan %s step %d, %s) in %.3f s.",
                record.plan_id,
                record.step,
                record.phase,
                seconds,
            )
            member.control_core.emit(
                member.control_core.handler.lifecycle("reconfigured", member.control_core.handler.member_id)
            )
            self._answer(member, record.plan_id, record.step, "applied", None, seconds)
            return
        reason = f"the new settings failed ({error}); back on the old ones"
        self.log.warning("Control record step %d of plan %s: %s.", record.step, record.plan_id, reason)
        self._back_to(member, current, reason)
        self._answer(member, record.plan_id, record.step, "refused", reason)

    def _refuse_before(self, member: Member, record: ControlRecord, reason: str) -> None:
        """Refused before anything changed: a closed member rejoins on its old settings first."""
        closed = self.closed
        if closed is not None:
            self.closed = None
            member.control_hold(False)
            self._back_to(member, closed.settings, reason, closed_already=True)
        self.log.warning(
            "Control record step %d of plan %s refused: %s.", record.step, record.plan_id, reason
        )
        self._answer(member, record.plan_id, record.step, "refused", reason)

    def _close_for_cutover(self, member: Member, record: ControlRecord) -> None:
        began = self.clock.time()
        settings = member.control_core.prepared.settings
        self._drain(member.control_core)
        member.control_close_client()
        wait_from = self.clock.time()  # the bound counts from the close, however long the commit took
        self.closed = _Closed(
            record.plan_id, record.step, began, wait_from + self.options.cutover_wait_s, settings
        )
        member.control_hold(True)
        self.log.info(
            "Closed for the cutover of plan %s (step %d); waiting up to %g s for its rejoin.",
            record.plan_id,
            record.step,
            self.options.cutover_wait_s,
        )
        self._answer(
            member,
            record.plan_id,
            record.step,
            "closed-for-cutover",
            None,
            round(self.clock.time() - began, 3),
        )

    def _give_up(self, member: Member, closed: _Closed) -> None:
        self.closed = None
        member.control_hold(False)
        reason = (
            f"no cutover-rejoin (step {closed.step + 1}) within {self.options.cutover_wait_s:g} s; "
            "rejoined on the old settings"
        )
        self.log.warning("Cutover of plan %s: %s.", closed.plan_id, reason)
        self._back_to(member, closed.settings, reason, closed_already=True)
        self._answer(member, closed.plan_id, closed.step, "refused", reason)

    def _back_to(
        self, member: Member, settings: ConsumerSettings, reason: str, *, closed_already: bool = False
    ) -> None:
        """Rebuild on `settings` (the member's old ones). A failure here is the member's end: raised."""
        if not closed_already:
            member.control_close_client()
        prepared, core = member.control_build(settings)
        member.control_install(prepared, core)
        error = self._first_assignment(member)
        member.control_core.emit(
            member.control_core.handler.lifecycle(
                "reconfigured", member.control_core.handler.member_id, error=reason
            )
        )
        if error is not None:
            self.log.warning("Back on the old settings, the client has no assignment yet: %s", error)

    def _first_assignment(self, member: Member) -> str | None:
        """Serve the new client until its first rebalance callback (records it hands out meanwhile are
        sought back: the application gets them from its next call). None, or why it failed."""
        core = member.control_core
        before = core.handler.rebalances
        poll = core.make_poll(hand_out=False)
        deadline = self.clock.time() + self.options.rejoin_s
        while core.handler.rebalances == before or core.handler.failure is not None:
            if core.handler.failure is not None:
                return core.handler.failure.message
            if self.clock.time() >= deadline:
                return f"no assignment within {self.options.rejoin_s:g} s"
            try:
                msg = poll(0.1)
            except ConsumerFailed as exc:
                return exc.message
            if msg is not None and msg.error() is None:
                core.seek_back([msg])
            if core.ledger is None:
                core.state.held = None
        return None

    def _drain(self, core: WrappedClient) -> None:
        """Explicit marks: wait (at most drain_s) until every record handed out is marked done."""
        if core.ledger is None:
            return
        deadline = self.clock.time() + self.options.drain_s
        while True:
            core.fold()
            owned = core.keys()
            busy = [key for key in owned if core.ledger.lowest_unfinished(key) is not None]
            if not busy or self.clock.time() >= deadline:
                if busy:
                    self.log.info(
                        "Reconfiguring with %d partition(s) still in flight after %g s: what is finished is "
                        "committed, the rest is fetched again.",
                        len(busy),
                        self.options.drain_s,
                    )
                return
            self.clock.sleep(DRAIN_STEP_S)

    def _answer(
        self,
        member: Member,
        plan_id: str,
        step: int,
        outcome: Literal["applied", "refused", "closed-for-cutover"],
        reason: str | None,
        seconds: float | None = None,
    ) -> None:
        self.outcome = ControlOutcome(
            plan_id=plan_id, step=step, outcome=outcome, reason=reason, seconds=seconds
        )
        if outcome == "refused" and reason is not None:
            member.control_core.warn(f"control step {step} of plan {plan_id} refused: {reason}")
        member.control_answered()


def _text(exc: BaseException) -> str:
    if isinstance(exc, KafkaException) and exc.args:
        inner = exc.args[0]
        return str(inner.str() if hasattr(inner, "str") else inner)
    return str(exc)


# What `control=` takes: off, on with the defaults, options, or a feed of one's own (tests: FakeControl).
ControlChoice = bool | ControlOptions | ControlFeed


def live_control(
    choice: ControlChoice, prepared: DriverSetup, arm: Callable[[], None], log: logging.Logger
) -> LiveControl | None:
    """The member's LiveControl for `control=`, or None when it is off (the default)."""
    if choice is False:
        return None
    if choice is True or isinstance(choice, ControlOptions):
        options = choice if isinstance(choice, ControlOptions) else ControlOptions()
        feed: Any = ControlFollower(
            connection_conf(prepared.rendered), prepared.settings.group_id, topic=options.topic, log=log
        )
    else:
        options = getattr(choice, "options", None) or ControlOptions()
        feed = choice
    return LiveControl(options, feed, prepared=prepared, arm=arm, log=log)

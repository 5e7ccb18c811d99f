"""In-process CoopConsumer members for behaviour tests: each polls on its own thread.

Every event is checked the moment it is emitted against the consumer's real `assignment()`, which is
the only way to prove `owned` is right *at* each callback, not just at the end.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from typing import Any

from confluent_kafka import Producer

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopConsumer
from kafka_coop.events import RebalanceEvent
from testbed.rebalance_protocols import REBALANCE_CONF
from tests.integration.members import wait_for

MARKS = {"enable.auto.offset.store": "false"}


def consumer_conf(bootstrap: str, group: str, rebalance: str, *, marks: bool, **extra: Any) -> dict[str, Any]:
    """A consumer conf with librdkafka's defaults for everything about offsets, or explicit marks
    (`marks`: `enable.auto.offset.store=false`, the application says which records are done)."""
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        **(MARKS if marks else {}),
        **REBALANCE_CONF[rebalance],
        **extra,
    }


class ThreadMember:
    def __init__(
        self,
        bootstrap: str,
        group: str,
        topics: Iterable[str],
        rebalance: str,
        name: str,
        *,
        mark: Callable[[Any], bool] | None = None,
        hooks: Mapping[str, Any] | None = None,
        marks: bool = True,
        **conf: Any,
    ) -> None:
        """`mark(msg)` says whether a processed record is marked done (default: every record), under
        explicit marks (`enable.auto.offset.store=false`); `marks=False` is the drop-in loop (no mark:
        what it polled past is done). `hooks` are CoopConsumer's `start_offsets=`/`on_assigned=`/
        `on_revoked=`/`on_lost=`."""
        self._marks = marks
        self.name = name
        self._mark = mark
        self.events: list[RebalanceEvent] = []
        self.mismatches: list[str] = []
        self.processed: dict[tuple[str, int], list[int]] = {}
        self.stalled = threading.Event()
        self.idle = (
            threading.Event()
        )  # set while stalled and between calls: nothing of ours runs in librdkafka
        self.ended: BaseException | None = None  # what ended the service loop (e.g. an interrupt from poll)
        self.polls = 0  # poll() calls returned: a callback due before one of them has run when it returns
        self._stop = threading.Event()
        self._calls: queue.Queue[tuple[Callable[[CoopConsumer], Any], Future[Any]]] = queue.Queue()
        settings = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": name,
            "auto.offset.reset": "earliest",
            **({"enable.auto.offset.store": "false"} if marks else {}),
            **REBALANCE_CONF[rebalance],
            **{k.replace("_", "."): str(v) for k, v in conf.items()},
        }
        self.consumer = CoopConsumer(settings, events=self._record, **dict(hooks or {}))
        self.consumer.subscribe(list(topics))
        self._thread = threading.Thread(target=self._run, name=f"member-{name}", daemon=True)
        self._thread.start()

    def _record(self, event: RebalanceEvent) -> None:
        # Not while closing: a terminated group never answers assignment() (librdkafka drops the request).
        if event.kind in ("assigned", "revoked", "lost") and not self.consumer.closing:
            real = tuple(sorted((tp.topic, tp.partition) for tp in self.consumer.assignment()))
            if real != event.owned:
                self.mismatches.append(f"{self.name} {event.kind} owned={event.owned} real={real}")
        self.events.append(event)

    def call(self, fn: Callable[[CoopConsumer], Any], timeout_s: float = 30.0) -> Any:
        """Run `fn(consumer)` on the member's own thread: a consumer is not shared between threads."""
        future: Future[Any] = Future()
        self._calls.put((fn, future))
        return future.result(timeout_s)

    def _run(self) -> None:
        try:
            self._serve()
        except BaseException as exc:  # a service's loop ends on it, and its `with` block closes
            self.ended = exc
        finally:
            self.consumer.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            while not self._calls.empty():
                fn, future = self._calls.get()
                try:
                    future.set_result(fn(self.consumer))
                except Exception as exc:
                    future.set_exception(exc)
            if self.stalled.is_set():
                self.idle.set()
                time.sleep(0.05)
                continue
            self.idle.clear()
            msg = self.consumer.poll(0.1)
            self.polls += 1
            if msg is None or msg.error():
                continue
            self.processed.setdefault((msg.topic(), msg.partition()), []).append(msg.offset())
            if self._marks and (self._mark is None or self._mark(msg)):
                self.consumer.mark_done(msg)

    @property
    def owned(self) -> tuple[tuple[str, int], ...]:
        return self.consumer.owned

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]


def wait_settled(
    admin: ClusterAdmin, group: str, members: Iterable[ThreadMember], timeout_s: float = 60.0
) -> None:
    """Wait until nothing more can arrive, then return; "nothing happened" is judged without a fixed sleep.

    Settled means: the broker reports the group Stable with exactly these members, each member owns what
    the broker says it is assigned, and no member is idle while there are partitions enough for all (a
    cooperative rebalance passes through a Stable group whose new member has nothing yet, before the
    second round hands it the revoked partitions). Then every member returns from two more polls,
    which serve any callback already due.
    """
    alive = list(members)

    def settled() -> bool:
        live = admin.describe_group(group)
        if live.state != "stable" or len(live.members) != len(alive):
            return False
        assigned = {m.client_id: set(m.assignment) for m in live.members}
        owned = {m.name: set(m.owned) for m in alive}
        enough = sum(len(parts) for parts in owned.values()) >= len(alive)
        return assigned == owned and (not enough or all(owned.values()))

    wait_for(settled, timeout_s, what=f"group {group} to settle with {len(alive)} members")
    marks = [m.polls for m in alive]
    wait_for(
        lambda: all(m.polls >= mark + 2 for m, mark in zip(alive, marks, strict=True)),
        timeout_s,
        what="every member to poll twice more",
    )


def covers(members: Iterable[ThreadMember], partitions: set[tuple[str, int]]) -> bool:
    """Every partition owned by exactly one member."""
    owned = [p for m in members for p in m.owned]
    return len(owned) == len(set(owned)) and set(owned) == partitions


def produce_keyed(bootstrap: str, topic: str, *, partitions: int, per_partition: int) -> None:
    """`per_partition` records to each of the first `partitions` partitions, valued `P-I`, all delivered."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, f"{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0


def committed_offsets(admin: ClusterAdmin, group: str) -> dict[tuple[str, int], int | None]:
    """What the broker holds for the group (OffsetFetch through the admin client)."""
    return {(o.topic, o.partition): o.committed for o in admin.offsets(group)}

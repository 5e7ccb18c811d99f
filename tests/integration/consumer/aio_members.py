"""In-process CoopAIOConsumer members for behaviour tests: each is an asyncio service on its own thread.

A member consumes in batches, "processes" a record by remembering its offset, and marks it done —
unless the record is one it was told to fail on, where processing raises and the service's
`async with` block exits with that exception (what a crashing asyncio service does). Every rebalance
event is checked, the moment it is emitted, against the client's real `assignment()`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from kafka_coop.consumer import CoopAIOConsumer
from kafka_coop.events import RebalanceEvent
from testbed.rebalance_protocols import REBALANCE_CONF
from tests.integration.consumer.members import wait_for

BATCH = 100
CONSUME_TIMEOUT_S = 0.2


class ProcessingFailed(Exception):
    """What the member's processing raises for a record it was told to fail on."""


class AioMember:
    def __init__(
        self,
        bootstrap: str,
        group: str,
        topics: Iterable[str],
        rebalance: str,
        name: str,
        *,
        fail_on: Iterable[tuple[str, int, int]] = (),
        mark: Callable[[Any], bool] | None = None,
        hooks: Mapping[str, Any] | None = None,
        marks: bool = True,
        **conf: Any,
    ) -> None:
        """`mark(msg)` says whether a processed record is marked done (default: every record); `hooks`
        are CoopAIOConsumer's `start_offsets=`/`on_assigned=`/`on_revoked=`/`on_lost=` (plain or async)."""
        self.name = name
        self.events: list[RebalanceEvent] = []
        self.mismatches: list[str] = []
        self.processed: dict[tuple[str, int], list[int]] = {}
        self.fail_on = set(fail_on)
        self.stalled = threading.Event()
        self.idle = threading.Event()  # set while stalled: no consume in flight
        self._mark = mark
        self._marks = marks
        self._hooks = dict(hooks or {})
        self.ended: BaseException | None = None  # what ended the service, if anything did
        self.consumer: CoopAIOConsumer | None = None
        self._topics = list(topics)
        self._stop = threading.Event()
        self._started = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._settings = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": name,
            "auto.offset.reset": "earliest",
            **({"enable.auto.offset.store": "false"} if marks else {}),
            **REBALANCE_CONF[rebalance],
            **{k.replace("_", "."): str(v) for k, v in conf.items()},
        }
        self._thread = threading.Thread(target=self._run, name=f"aio-member-{name}", daemon=True)
        self._thread.start()
        wait_for(self._started.is_set, what=f"{name} to subscribe")

    def _record(self, event: RebalanceEvent) -> None:
        # Called on the event loop, inside the rebalance callback: the inner Consumer's gate admits this
        # call (the loop presents the identity of the worker serving the callback), so this reads the real
        # assignment at the very moment of the event without waiting.
        # Not while closing: a terminated group never answers assignment() (librdkafka drops the request).
        consumer = self.consumer
        if (
            consumer is not None
            and event.kind in ("assigned", "revoked", "lost")
            and not consumer._handler.closing
        ):
            inner = consumer._consumer  # the sync Consumer under CoopAIOConsumer
            real = tuple(sorted((tp.topic, tp.partition) for tp in inner.assignment()))
            if real != event.owned:
                self.mismatches.append(f"{self.name} {event.kind} owned={event.owned} real={real}")
        self.events.append(event)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:
            self.ended = exc
        finally:
            self._started.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        async with CoopAIOConsumer(self._settings, events=self._record, **self._hooks) as consumer:
            self.consumer = consumer
            await consumer.subscribe(self._topics)
            self._started.set()
            while not self._stop.is_set():
                if self.stalled.is_set():
                    self.idle.set()
                    await asyncio.sleep(0.05)
                    continue
                self.idle.clear()
                for msg in await consumer.consume(num_messages=BATCH, timeout=CONSUME_TIMEOUT_S):
                    if msg.error() is not None:
                        continue
                    where = (msg.topic(), msg.partition(), msg.offset())
                    if where in self.fail_on:
                        raise ProcessingFailed(f"{self.name} failed to process {where}")
                    self.processed.setdefault(where[:2], []).append(where[2])
                    if self._marks and (self._mark is None or self._mark(msg)):
                        await consumer.mark_done(msg)

    def call(self, fn: Callable[[CoopAIOConsumer], Awaitable[Any]], timeout_s: float = 30.0) -> Any:
        """Await `fn(consumer)` on the member's own loop, as the service itself would."""
        assert self._loop is not None and self.consumer is not None
        consumer = self.consumer

        async def run() -> Any:
            return await fn(consumer)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout_s)

    @property
    def owned(self) -> tuple[tuple[str, int], ...]:
        return self.consumer.owned if self.consumer is not None else ()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def count(self) -> int:
        return sum(len(v) for v in self.processed.values())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
        assert not self._thread.is_alive(), f"{self.name} did not close within 60 s"

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

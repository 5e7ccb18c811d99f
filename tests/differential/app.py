"""One program's application, in its own process (so a step can SIGKILL it): `python -m
tests.differential.app '<json>'`, one step per line read from stdin, one JSON report per step on stdout.

The same code drives confluent's class (`impl="confluent"`) and kafka-coop's (`impl="coop"`). Besides
running the step, it keeps the app's ledger, the facts the rule is checked against:
- `permit`: the highest offset per partition the rule lets anyone commit now (never above it: loss);
- `floor`: what the app's own synchronous commits put there (never below it: a rewind).
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
import time
from typing import Any

from confluent_kafka import KafkaException, Producer, TopicPartition

from tests.differential.program import MAX_POLL_INTERVAL_MS, Program

ENDS = ("close", "raise", "sigterm")  # the steps after which the app has closed its consumer
REJOIN_S = 3.0  # after a poll overrun: the lost partitions are served and the member rejoins


class Ledger:
    """What the app was handed and finished, per partition, and what it may see committed."""

    def __init__(self, program: Program, impl: str) -> None:
        self.program = program
        # Who may commit what is done without the app's commit call: auto-commit only. With it off,
        # neither confluent nor kafka-coop commits on an interval, a revoke or a close (docs/consumer.md
        # "The offset contract"), whichever way the app marks.
        self.auto_commits = program.auto_commit
        self.handed: dict[int, dict[int, Any]] = {}  # partition -> offset -> the record
        self.done: dict[int, set[int]] = {}
        self.allowed: dict[int, int] = {}  # the app's own commits, and what auto-commit may commit
        self.floor: dict[int, int] = {}
        self.entitled: dict[int, int] = {}  # what the app's own commits could commit when they began
        self.batch: list[Any] = []  # the records of the last poll/consume (drop-in: in flight)
        self.raised: dict[int, int] = {}  # partition -> the record whose processing raised
        self.lock = threading.Lock()

    def take(self, messages: list[Any]) -> None:
        with self.lock:
            if not self.program.marks:  # the Java rule: what the app polled past is done
                for m in self.batch:
                    self.done.setdefault(m.partition(), set()).add(m.offset())
            self.batch = list(messages)
            for m in messages:
                self.handed.setdefault(m.partition(), {})[m.offset()] = m

    def finish(self, message: Any) -> None:
        with self.lock:
            self.done.setdefault(message.partition(), set()).add(message.offset())

    def unfinished(self) -> list[Any]:
        """The records handed out and not done, by partition and offset."""
        with self.lock:
            return [
                offs[o]
                for p, offs in sorted(self.handed.items())
                for o in sorted(offs)
                if o not in self.done.get(p, set())
            ]

    def done_bound(self, p: int) -> int:
        """Marks: the lowest record handed out and not done; drop-in: the offset after the newest
        record handed out (confluent stores each record as it delivers it)."""
        handed = set(self.handed.get(p, {}))
        if not handed:
            return -1
        if self.program.marks:
            open_ = handed - self.done.get(p, set())
            if open_:
                return min(open_)
        if p in self.raised:  # never past a record whose processing raised
            return min(max(handed) + 1, self.raised[p])
        return max(handed) + 1

    def allow(self, p: int, offset: int) -> None:
        self.allowed[p] = max(self.allowed.get(p, -1), offset)

    def entitle(self, begun: dict[int, int]) -> None:
        """A commit of the app's own began when it was entitled to `begun` (a poll on another thread or
        task may hand out more before it reads what is done: `allow` counts that, this does not)."""
        for p, offset in begun.items():
            self.entitled[p] = max(self.entitled.get(p, -1), offset)

    def asked(self, p: int, offset: int) -> None:
        """The app commits `offset` itself (`commit(message=/offsets=)`), sync or not: below its floor,
        that is its own rewind, and the floor is what it asked now (an asynchronous one, or one whose
        reply a network fault lost, may land at any later step)."""
        if p in self.floor and offset < self.floor[p]:
            self.floor[p] = offset

    def report(self) -> dict[str, Any]:
        with self.lock:
            parts = sorted(set(self.handed) | set(self.allowed))
            permit = {}
            for p in parts:
                # committing the first record handed out commits nothing the app did not finish
                bound = max(
                    self.allowed.get(p, -1), min(self.handed[p], default=-1) if p in self.handed else -1
                )
                if self.auto_commits:
                    bound = max(bound, self.done_bound(p))
                permit[p] = bound
            return {
                "permit": permit,
                "floor": dict(self.floor),
                "allowed": dict(self.allowed),  # what the app's own commits entitled, when they ran
                "entitled": dict(self.entitled),
                "hi": {p: max(h) + 1 for p, h in self.handed.items() if h},
                "bound": {p: self.done_bound(p) for p in self.handed},
            }


class App:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.program: Program = eval(spec["program"], {"Program": Program})  # a Program literal
        self.topic = spec["topic"]
        self.ledger = Ledger(self.program, spec["impl"])
        self.coop = spec["impl"] == "coop"
        self.aio = self.program.driver == "aio"
        self.conf = {
            # through toxiproxy when the program has network faults (the second member, the producer
            # and the runner's reader stay on the direct listener)
            "bootstrap.servers": spec.get("app_bootstrap", spec["bootstrap"]),
            "group.id": spec["group"],
            "client.id": f"app-{spec['impl']}",
            "auto.offset.reset": "earliest",
            **self.program.conf(),
        }
        self.c: Any = None
        self.ends = self.program.steps[-1][0] if self.program.steps else "close"
        self.running = True  # confluent's service loop flag, cleared by its SIGTERM handler
        self.error: str | None = None  # an error a step caught and went on after

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        result = getattr(self.c, name)(*args, **kwargs)
        if hasattr(result, "__await__"):
            result = await result
        return result

    async def start(self) -> None:
        if self.coop:
            from kafka_coop import CoopAIOConsumer, CoopConsumer

            self.c = CoopAIOConsumer(self.conf) if self.aio else CoopConsumer(self.conf)
        else:
            from confluent_kafka import Consumer
            from confluent_kafka.aio import AIOConsumer

            self.c = AIOConsumer(self.conf) if self.aio else Consumer(self.conf)
        if self.ends == "sigterm":
            if self.coop:  # the README's service: the block owns the signal
                await self.c.__aenter__() if self.aio else self.c.__enter__()
            else:  # examples/service.py's way on confluent: a handler that ends the loop
                signal.signal(signal.SIGTERM, lambda *_: setattr(self, "running", False))
        await self.call("subscribe", [self.topic])

    async def mark(self, message: Any) -> None:
        if self.coop and self.program.mark_style == "mark_done":
            await self.call("mark_done", message)
        else:
            await self.call("store_offsets", message=message)
        self.ledger.finish(message)

    async def take(self, count: int, batch: bool, *, deadline_s: float = 2.0) -> list[Any]:
        got: list[Any] = []
        deadline = time.monotonic() + deadline_s
        while len(got) < count and time.monotonic() < deadline:
            if batch:
                msgs = await self.call("consume", count - len(got), 0.3)
            else:
                msg = await self.call("poll", 0.3)
                msgs = [msg] if msg is not None else []
            records = [m for m in msgs if m.error() is None]
            self.ledger.take(records)
            got.extend(records)
        return got

    async def commit(self, how: str, sync: bool) -> None:
        ledger = self.ledger
        if how == "plain":
            with ledger.lock:
                allowed = {p: ledger.done_bound(p) for p in ledger.handed}
            ledger.entitle(allowed)
            try:
                result = await self.call("commit", asynchronous=not sync)
            finally:  # a commit that raised may have landed (its reply lost): it was entitled to this
                for p, off in allowed.items():
                    ledger.allow(p, off)
            if sync and result:
                for tp in result:
                    if tp.offset >= 0 and tp.error is None:
                        ledger.floor[tp.partition] = tp.offset
            return
        if how == "message":
            if not ledger.batch:
                return
            msg = ledger.batch[-1]
            ledger.allow(msg.partition(), msg.offset() + 1)
            ledger.entitle({msg.partition(): msg.offset() + 1})
            ledger.asked(msg.partition(), msg.offset() + 1)
            await self.call("commit", message=msg, asynchronous=not sync)
            if sync:
                ledger.floor[msg.partition()] = msg.offset() + 1
            return
        owned = {tp.partition for tp in await self.call("assignment")}
        with ledger.lock:
            offsets = [
                TopicPartition(self.topic, p, ledger.done_bound(p))
                for p in sorted(owned)
                if ledger.done_bound(p) >= 0
            ]
        if not offsets:
            return
        ledger.entitle({tp.partition: tp.offset for tp in offsets})
        for tp in offsets:
            ledger.allow(tp.partition, tp.offset)
            ledger.asked(tp.partition, tp.offset)
        await self.call("commit", offsets=offsets, asynchronous=not sync)
        if sync:
            for tp in offsets:
                ledger.floor[tp.partition] = tp.offset

    async def concurrently(self, work: Any, main: Any) -> None:
        """`work()` (a blocking function, or a coroutine function under asyncio) on another thread or
        task, until `main()` returns."""
        stop = threading.Event()
        if self.aio:

            async def loop() -> None:
                while not stop.is_set():
                    await work()
                    await asyncio.sleep(0.01)

            task = asyncio.ensure_future(loop())
            try:
                await main()
            finally:
                stop.set()
                await task
            return

        def run() -> None:
            while not stop.is_set():
                work()
                time.sleep(0.01)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        try:
            await main()
        finally:
            stop.set()
            thread.join(10)

    async def step(self, step: tuple[Any, ...]) -> dict[str, Any]:
        kind = step[0]
        error = None
        began = time.monotonic()
        try:
            await self._step(kind, step)
        except KafkaException as exc:
            error = exc.args[0].name()
        if self.error is not None:
            error, self.error = self.error, None
        assignment = sorted(tp.partition for tp in await self.call("assignment")) if kind not in ENDS else []
        took_s = round(time.monotonic() - began, 2)  # a commit under a fault: did it wait for the heal?
        return {
            "step": list(step),
            "error": error,
            "took_s": took_s,
            "owned": assignment,
            **self.ledger.report(),
        }

    async def _step(self, kind: str, step: tuple[Any, ...]) -> None:
        program = self.program
        if kind in ("poll", "consume"):
            await self.take(int(step[1]), kind == "consume")
        elif kind == "mark" and program.marks:
            todo = self.ledger.unfinished()
            pick = {"all": todo, "odd": todo[::2], "last": todo[-1:]}[str(step[1])]
            for message in pick:
                await self.mark(message)
        elif kind == "mark_thread":
            await self._mark_thread(int(step[1]))
        elif kind == "commit":
            await self.commit(str(step[1]), bool(step[2]))
        elif kind == "cut_commit":  # the runner made the fault before it sent the step, and heals it
            try:
                await self.commit(str(step[2]), bool(step[3]))
            except KafkaException as exc:  # lost on the way or on the way back: may have landed or not
                self.error = exc.args[0].name()
        elif kind == "commit_thread":
            await self._commit_thread(int(step[1]))
        elif kind == "pause":
            time.sleep(int(step[1]) / 1000)
        elif kind == "idle":  # polls until 3 records came, then waits out the rest
            end = time.monotonic() + int(step[1]) / 1000
            got = 0
            while time.monotonic() < end and got < 3:
                got += len(await self.take(1, False, deadline_s=0.1))
            time.sleep(max(0.0, end - time.monotonic()))
        elif kind in ("join", "leave", "join_commit"):
            if kind == "join_commit":  # the second member's join is under way: commit before polling
                try:
                    await self.commit(str(step[1]), bool(step[2]))
                except KafkaException as exc:
                    self.error = exc.args[0].name()
            await self._poll_until_owned(1 if kind != "leave" else 2)
        elif kind == "overrun":  # then, before any poll, the commit the group refuses (member dropped)
            time.sleep(MAX_POLL_INTERVAL_MS / 1000 + 1.5)
            if step[1] != "none":
                try:
                    await self.commit(str(step[1]), bool(step[2]))
                except KafkaException as exc:
                    self.error = exc.args[0].name()
            await self._poll_until_owned(None)
        elif kind == "close":
            await self.call("close")
        elif kind == "raise":
            await self._raise()
        elif kind == "sigterm":
            await self._sigterm()

    async def _poll_until_owned(self, want: int | None, timeout_s: float = 30.0) -> None:
        """Polls (processing what comes) until the app owns `want` partitions (None: after a loss, at
        least REJOIN_S, until it owns some again: the lost partitions served, the member back)."""
        started = time.monotonic()
        while time.monotonic() < started + timeout_s:
            await self.take(1, False, deadline_s=0.1)
            owned = len(await self.call("assignment"))
            if owned == want or (want is None and owned and time.monotonic() > started + REJOIN_S):
                break

    async def _raise(self) -> None:
        """The next record's processing raises; the loop ends on it and the consumer is closed while
        the exception propagates, as a `with` block (or `try`/`finally: close()`) does."""
        got: list[Any] = []
        end = time.monotonic() + 5
        while not got and time.monotonic() < end:
            msg = await self.call("poll", 0.3)
            if msg is not None and msg.error() is None:
                got = [msg]
        self.ledger.take(got)
        for msg in got:
            self.ledger.raised[msg.partition()] = msg.offset()
        try:
            raise RuntimeError("processing failed")
        except RuntimeError:
            await self.call("close")

    async def _sigterm(self) -> None:
        """SIGTERM came (the runner sent it before this step): the service loop goes on polling until
        the signal ends it. kafka-coop: the next poll raises ShutdownSignal, the block's exit closes
        and swallows it; confluent: the handler cleared `running`, the loop ends, close()."""
        end = time.monotonic() + 20
        if not self.coop:
            while self.running and time.monotonic() < end:
                await self.take(1, False, deadline_s=0.1)
            await self.call("close")
            return
        try:
            while time.monotonic() < end:
                await self.take(1, False, deadline_s=0.1)
        except SystemExit as exc:  # kafka_coop's ShutdownSignal
            exit_ = self.c.__aexit__(type(exc), exc, exc.__traceback__) if self.aio else None
            swallowed = (
                await exit_ if exit_ is not None else self.c.__exit__(type(exc), exc, exc.__traceback__)
            )
            if not swallowed:
                raise
            return
        raise RuntimeError("SIGTERM did not end kafka-coop's `with` block within 20 s")

    async def _mark_thread(self, count: int) -> None:
        todo = self.ledger.unfinished() if self.program.marks else []

        def marks_of(message: Any) -> Any:
            if self.aio:
                return self.mark(message)
            if self.coop and self.program.mark_style == "mark_done":
                self.c.mark_done(message)
            else:
                self.c.store_offsets(message=message)
            self.ledger.finish(message)
            return None

        pending = list(todo)

        async def mark_one_async() -> None:
            if pending:
                await marks_of(pending.pop(0))

        def mark_one() -> None:
            if pending:
                marks_of(pending.pop(0))

        async def main() -> None:
            await self.take(count, False)
            while pending:
                await asyncio.sleep(0.01)

        await self.concurrently(mark_one_async if self.aio else mark_one, main)

    async def _commit_thread(self, count: int) -> None:
        producer = Producer({"bootstrap.servers": self.spec["bootstrap"]})
        ledger = self.ledger

        def note(result: Any) -> None:
            for tp in result or []:
                if tp.offset >= 0:
                    ledger.floor[tp.partition] = tp.offset

        def allowed() -> dict[int, int]:
            with ledger.lock:
                return {p: ledger.done_bound(p) for p in ledger.handed}

        def commit_once() -> None:
            ledger.entitle(allowed())
            try:
                result = self.c.commit(asynchronous=False)
            except KafkaException:
                return
            for p, off in allowed().items():  # after it returned: the most it may have been entitled to
                ledger.allow(p, off)
            note(result)

        async def commit_once_async() -> None:
            ledger.entitle(allowed())
            try:
                result = await self.c.commit(asynchronous=False)
            except KafkaException:
                return
            for p, off in allowed().items():
                ledger.allow(p, off)
            note(result)

        async def main() -> None:
            trickle = threading.Thread(target=self._trickle, args=(producer, count), daemon=True)
            trickle.start()
            first = True
            got = 0
            end = time.monotonic() + 15
            while got < count * 2 and time.monotonic() < end:
                msg = await self.call("poll", 1.0)
                if msg is None or msg.error() is not None:
                    continue
                self.ledger.take([msg])
                got += 1
                if self.program.marks and not first:
                    await self.mark(msg)
                first = False
            trickle.join(10)

        await self.concurrently(commit_once_async if self.aio else commit_once, main)

    def _trickle(self, producer: Producer, count: int) -> None:
        for i in range(count):
            for p in range(2):
                producer.produce(self.topic, f"t-{i}".encode(), partition=p)
            producer.flush(5)
            time.sleep(0.03)


async def main(spec: dict[str, Any]) -> None:
    app = App(spec)
    await app.start()
    print(json.dumps({"ready": True}), flush=True)
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        step = tuple(json.loads(line))
        report = await app.step(step)
        print(json.dumps(report), flush=True)
        if step[0] in ENDS:
            return


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))

"""`commit()` after the member overran max.poll.interval.ms, before its next poll: confluent-kafka's
librdkafka refuses it locally with `_ASSIGNMENT_LOST` (the assignment is lost the moment its poll timer
fires), the synchronous call raising it and the asynchronous one reporting it to `on_commit` at the next
poll, with nothing sent. kafka-coop commits explicit offsets itself, so it must ask for the same verdict:
both drivers, every protocol, with nothing new since the app's last commit (kafka-coop said `_NO_OFFSET`)
and with records finished since (kafka-coop sent them: the broker refused them as UNKNOWN_MEMBER_ID on
the classic protocol and accepted them on KIP-848, for partitions the group had taken away).

Each scenario runs side by side with confluent's own class (the oracle) on the same broker; all of them
at once, on threads, so the module costs one overrun (~15 s)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.aio import AIOConsumer

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopAIOConsumer, CoopConsumer
from testbed.rebalance_protocols import REBALANCE_CONF

MAX_POLL_MS = 6000  # the least librdkafka allows with a 6 s session
OVERRUN_S = MAX_POLL_MS / 1000 + 2.5  # past it, and past librdkafka's 1 s timer that notices
PROTOCOLS = ("eager-range", "cooperative-sticky", "consumer")
DRIVERS = ("sync", "aio")
RECORDS = 20


@dataclass(frozen=True)
class Outcome:
    sync: str  # what commit(asynchronous=False) ended in
    on_commit: list[str]  # what on_commit reported for the asynchronous commit after it


def outcome_of(exc: KafkaException | None) -> str:
    return "ok" if exc is None else f"KafkaException({exc.args[0].name()})"


async def overrun_then_commit(
    impl: str, driver: str, protocol: str, new: bool, bootstrap: str, topic: str
) -> Outcome:
    """Poll and store 6 records, commit them, (`new`: poll and store 2 more), stop polling past
    max.poll.interval.ms, then commit synchronously and asynchronously before the next poll."""
    reported: list[str] = []

    def on_commit(err: Any, partitions: Any) -> None:
        reported.append("ok" if err is None else f"KafkaException({err.name()})")

    async def on_commit_async(err: Any, partitions: Any) -> None:  # AIOConsumer awaits its callbacks
        on_commit(err, partitions)

    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": topic,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "max.poll.interval.ms": MAX_POLL_MS,
        "on_commit": on_commit_async if driver == "aio" else on_commit,
        **REBALANCE_CONF[protocol],
        **({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500} if protocol != "consumer" else {}),
    }
    if impl == "confluent":
        c: Any = AIOConsumer(conf) if driver == "aio" else Consumer(conf)
    else:
        c = (
            CoopAIOConsumer(conf, handle_signals=False)
            if driver == "aio"
            else CoopConsumer(conf, handle_signals=False)
        )

    async def call(name: str, *args: Any, **kwargs: Any) -> Any:
        result = getattr(c, name)(*args, **kwargs)
        return await result if asyncio.iscoroutine(result) or asyncio.isfuture(result) else result

    async def take(count: int) -> None:
        got, deadline = 0, time.monotonic() + 30
        while got < count and time.monotonic() < deadline:
            msg = await call("poll", 0.5)
            if msg is not None and msg.error() is None:
                await call("store_offsets", message=msg)
                got += 1
        assert got == count, f"{impl} {driver} {protocol}: {got} of {count} records"

    try:
        await call("subscribe", [topic])
        await take(6)
        await call("commit", asynchronous=False)
        if new:
            await take(2)
        time.sleep(OVERRUN_S)  # no call at all: the member overruns its poll limit
        error: KafkaException | None = None
        try:
            await call("commit", asynchronous=False)
        except KafkaException as exc:
            error = exc
        reported.clear()
        await call("commit", asynchronous=True)
        for _ in range(3):  # the asynchronous commit's outcome comes with a poll
            await call("poll", 0.5)
            if reported:
                break
        return Outcome(outcome_of(error), list(reported))
    finally:
        await call("close")


SCENARIOS = [(driver, protocol, new) for driver in DRIVERS for protocol in PROTOCOLS for new in (False, True)]


@pytest.fixture(scope="module")
def outcomes(
    bootstrap: str, admin: ClusterAdmin
) -> Iterator[dict[tuple[str, str, str, bool], Outcome | BaseException]]:
    """Every scenario on both implementations, all at once (one thread and event loop each)."""
    runs = [(impl, *s) for s in SCENARIOS for impl in ("confluent", "coop")]
    producer = Producer({"bootstrap.servers": bootstrap})
    topics = {}
    for i, run in enumerate(runs):
        topic = f"overrun-commit-{run[0]}-{run[1]}-{run[2]}-{int(run[3])}-{time.time_ns() % 10**9}-{i}"
        admin.ensure_topic(topic, 1)
        for _ in range(RECORDS):
            producer.produce(topic, b"x", partition=0)
        topics[run] = topic
    assert producer.flush(30) == 0

    def one(run: tuple[str, str, str, bool]) -> Outcome | BaseException:
        try:
            return asyncio.run(overrun_then_commit(*run, bootstrap, topics[run]))
        except BaseException as exc:  # reported by the test that reads it
            return exc

    with ThreadPoolExecutor(len(runs)) as pool:
        results = dict(zip(runs, pool.map(one, runs), strict=True))
    yield results


def _pair(
    outcomes: dict[tuple[str, str, str, bool], Outcome | BaseException], scenario: tuple[str, str, bool]
) -> tuple[Outcome, Outcome]:
    want, got = outcomes[("confluent", *scenario)], outcomes[("coop", *scenario)]
    for result in (want, got):
        if isinstance(result, BaseException):
            raise result
    assert isinstance(want, Outcome) and isinstance(got, Outcome)
    return want, got


@pytest.mark.parametrize(("driver", "protocol"), [(d, p) for d in DRIVERS for p in PROTOCOLS])
def test_a_commit_with_nothing_new_after_an_overrun_is_refused_as_assignment_lost_as_confluent_does(
    outcomes: Any, driver: str, protocol: str
) -> None:
    want, got = _pair(outcomes, (driver, protocol, False))
    assert want.sync == "KafkaException(_ASSIGNMENT_LOST)", f"confluent's own verdict changed: {want}"
    assert got.sync == want.sync


@pytest.mark.parametrize(("driver", "protocol"), [(d, p) for d in DRIVERS for p in PROTOCOLS])
def test_a_commit_of_records_finished_before_an_overrun_is_refused_as_assignment_lost_as_confluent_does(
    outcomes: Any, driver: str, protocol: str
) -> None:
    want, got = _pair(outcomes, (driver, protocol, True))
    assert want.sync == "KafkaException(_ASSIGNMENT_LOST)", f"confluent's own verdict changed: {want}"
    assert got.sync == want.sync


@pytest.mark.parametrize(("driver", "protocol"), [(d, p) for d in DRIVERS for p in PROTOCOLS])
def test_an_asynchronous_commit_after_an_overrun_reports_assignment_lost_to_on_commit_as_confluent_does(
    outcomes: Any, driver: str, protocol: str
) -> None:
    want, got = _pair(outcomes, (driver, protocol, True))
    assert want.on_commit == ["KafkaException(_ASSIGNMENT_LOST)"], f"confluent's own verdict changed: {want}"
    assert got.on_commit == want.on_commit

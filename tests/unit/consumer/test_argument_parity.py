"""A call with arguments confluent-kafka refuses is refused the same way by CoopConsumer and
CoopAIOConsumer, on the C poll path and the Python one, in drop-in and explicit-marks mode: seeded
generated calls, each made on a raw `confluent_kafka.Consumer` (`confluent_kafka.aio.AIOConsumer`) and on
kafka-coop's over the same conf, must end the same way (both accept, or both raise the same exception
type, and for a KafkaException the same code).

confluent-kafka checks its arguments before any I/O, so the bootstrap is a loopback port nobody
listens on; every timeout generated is short, so a call that is accepted returns at once."""

from __future__ import annotations

import asyncio
import inspect
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.aio import AIOConsumer

from kafka_coop.consumer import CoopAIOConsumer, CoopConsumer, _core

SEED = 38
CALLS_PER_METHOD = 100
T = "parity-topic"

TIMEOUTS: list[Any] = [0, 0.0, 0.01, "0", None, [], object()]
COUNTS: list[Any] = [0, 1, 5, -1, 1_000_001, 2**40, "1", None, 1.5]
PARTITION_LISTS: list[Any] = [
    [],
    [TopicPartition(T, 0)],
    [TopicPartition(T, 0, 5)],
    [TopicPartition(T, -1, 5)],
    "x",
    None,
    [1],
    [None],
    TopicPartition(T, 0),
]
PARTITIONS: list[Any] = [TopicPartition(T, 0, 5), TopicPartition(T, 0), "x", None, 1, [TopicPartition(T, 0)]]
FLAGS: list[Any] = [True, False, 1, 0, "x", None]
MESSAGES: list[Any] = [None, "x", 1, TopicPartition(T, 0, 1)]
TOPICS: list[Any] = [None, T, "", 1, [T]]
MISSING = object()

# method -> the parameters confluent-kafka names, each with the values generated for it.
SIGNATURES: dict[str, list[tuple[str, list[Any]]]] = {
    "poll": [("timeout", TIMEOUTS)],
    "consume": [("num_messages", COUNTS), ("timeout", TIMEOUTS)],
    "commit": [("message", MESSAGES), ("offsets", PARTITION_LISTS), ("asynchronous", FLAGS)],
    "store_offsets": [("message", MESSAGES), ("offsets", PARTITION_LISTS)],
    "seek": [("partition", PARTITIONS)],
    "assign": [("partitions", PARTITION_LISTS)],
    "incremental_assign": [("partitions", PARTITION_LISTS)],
    "incremental_unassign": [("partitions", PARTITION_LISTS)],
    "pause": [("partitions", PARTITION_LISTS)],
    "resume": [("partitions", PARTITION_LISTS)],
    "committed": [("partitions", PARTITION_LISTS), ("timeout", TIMEOUTS)],
    "position": [("partitions", PARTITION_LISTS)],
    "get_watermark_offsets": [("partition", PARTITIONS), ("timeout", TIMEOUTS), ("cached", FLAGS)],
    "offsets_for_times": [("partitions", PARTITION_LISTS), ("timeout", TIMEOUTS)],
    "list_topics": [("topic", TOPICS), ("timeout", TIMEOUTS)],
    "memberid": [],
    "assignment": [],
    "unassign": [],
}

Call = tuple[str, tuple[Any, ...], dict[str, Any]]


def blocks(name: str, kwargs: dict[str, Any]) -> bool:
    """A call that would wait for the unreachable broker (not an argument check)."""
    if name == "commit":  # one with offsets to commit, even asynchronous: the client's close waits for it
        offsets = kwargs.get("offsets")
        sync = not kwargs.get("asynchronous", True)
        valid = isinstance(offsets, list) and all(type(tp) is TopicPartition for tp in offsets)
        return (valid and bool(offsets)) or (
            sync and (offsets is not None or kwargs.get("message") is not None)
        )
    if any(p == "timeout" for p, _ in SIGNATURES[name]):  # omitted: -1, wait for ever
        return "timeout" not in kwargs or (name == "list_topics" and kwargs["timeout"] is None)
    return False


def generate(seed: int) -> Iterator[Call]:
    """Calls with generated arguments, each passed positionally or by keyword, some with one too many
    or a keyword no signature has."""
    rng = random.Random(seed)
    for name, params in SIGNATURES.items():
        for _ in range(CALLS_PER_METHOD):
            chosen = {p: rng.choice(values) for p, values in params if rng.random() < 0.8}
            if (
                params
                and params[0][0] not in chosen
                and name not in ("poll", "consume", "commit", "store_offsets", "list_topics")
            ):
                chosen[params[0][0]] = rng.choice(params[0][1])  # a required argument, mostly given
            chosen = {k: v for k, v in chosen.items() if v is not MISSING}
            if blocks(name, chosen):
                continue
            names = [p for p, _ in params]
            positional = rng.random() < 0.5
            args: tuple[Any, ...] = ()
            if positional:
                leading = []
                for p in names:  # only a prefix can go positionally
                    if p not in chosen:
                        break
                    leading.append(chosen.pop(p))
                args = tuple(leading)
            extra = rng.random()
            if extra < 0.08:
                args = (*args, 0) if not chosen else args
            elif extra < 0.16:
                chosen["tmeout"] = 0
            yield name, args, chosen


def outcome(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    try:
        fn(*args, **kwargs)
    except KafkaException as exc:
        return f"KafkaException({exc.args[0].name()})"
    except Exception as exc:
        return type(exc).__name__
    return "ok"


async def outcome_awaited(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """As `outcome`, for an asyncio consumer's method: the call and its await both count."""
    try:
        result = fn(*args, **kwargs)
        if inspect.isawaitable(result):
            await result
    except KafkaException as exc:
        return f"KafkaException({exc.args[0].name()})"
    except Exception as exc:
        return type(exc).__name__
    return "ok"


CONF = {
    "bootstrap.servers": "127.0.0.1:9",  # the discard port: nothing listens, nothing is sent
    "group.id": "argument-parity",
    "socket.connection.setup.timeout.ms": 1000,
    "log_level": 0,
    "enable.auto.commit": False,  # (else the raw client's close waits out the session for a coordinator)
}


@pytest.fixture(params=["c", "python"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "python":
        monkeypatch.setattr(_core, "FastPoll", None)
    return str(request.param)


@pytest.mark.parametrize("mode", ["drop-in", "marks"])
def test_a_call_confluent_refuses_is_refused_the_same_way(path: str, mode: str) -> None:
    conf = {**CONF, **({"enable.auto.offset.store": False} if mode == "marks" else {})}
    raw = Consumer(conf)
    coop = CoopConsumer(dict(conf), handle_signals=False)
    if mode == "drop-in":  # (explicit marks' poll is Python on both)
        assert (type(coop.__dict__["poll"]).__name__ == "FastPoll") == (path == "c")
    differ = []
    try:
        for name, args, kwargs in generate(SEED):
            want = outcome(getattr(raw, name), args, kwargs)
            got = outcome(getattr(coop, name), args, kwargs)
            if got != want:
                differ.append(f"{name}(*{args!r}, **{kwargs!r}): confluent {want}, kafka-coop {got}")
    finally:
        raw.close()
        coop.close()
    assert not differ, f"{len(differ)} calls differ:\n" + "\n".join(differ[:40])


@pytest.mark.parametrize("mode", ["drop-in", "marks"])
def test_an_asyncio_call_confluent_refuses_is_refused_the_same_way(path: str, mode: str) -> None:
    """The same calls on AIOConsumer and CoopAIOConsumer (AIOConsumer's own methods only: kafka-coop's
    extras, such as `memberid`, are not confluent's to refuse)."""
    conf = {**CONF, **({"enable.auto.offset.store": False} if mode == "marks" else {})}

    async def run() -> list[str]:
        raw = AIOConsumer(dict(conf))
        coop = CoopAIOConsumer(dict(conf), handle_signals=False)
        if mode == "drop-in":
            assert (type(coop._poll_fn).__name__ == "FastPoll") == (path == "c")
        differ = []
        try:
            for name, args, kwargs in generate(SEED):
                if not hasattr(AIOConsumer, name):
                    continue
                want = await outcome_awaited(getattr(raw, name), args, kwargs)
                got = await outcome_awaited(getattr(coop, name), args, kwargs)
                if got != want:
                    differ.append(f"{name}(*{args!r}, **{kwargs!r}): confluent {want}, kafka-coop {got}")
        finally:
            await raw.close()
            await coop.close()
        return differ

    differ = asyncio.run(run())
    assert not differ, f"{len(differ)} calls differ:\n" + "\n".join(differ[:40])

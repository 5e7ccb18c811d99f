"""A subscription that can never be assigned says so within seconds (docs/contracts.md `warning`).

On the sandbox broker, under the classic protocol (librdkafka reports the missing topic once, as an
error event) and KIP-848 (it reports nothing): a warning log line and a `warning` event naming the
missing topic, none for the topic that exists.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import pytest

from kafka_coop import CoopAIOConsumer, CoopConsumer, RebalanceEvent

WARNED_WITHIN_S = 8.0
PROTOCOLS = {"classic": {}, "consumer": {"group.protocol": "consumer"}}


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_a_subscribed_topic_that_does_not_exist_is_warned_about_within_seconds(
    protocol: str,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    real, missing = topic_factory(2), unique("no-such-topic")
    events: list[RebalanceEvent] = []
    conf = {"bootstrap.servers": bootstrap, "group.id": unique("g"), **PROTOCOLS[protocol]}
    caplog.set_level(logging.WARNING, logger="kafka_coop.consumer")
    began = time.monotonic()
    with CoopConsumer(conf, events=events.append, handle_signals=False) as consumer:
        consumer.subscribe([real, missing])
        while time.monotonic() - began < WARNED_WITHIN_S and not any(e.kind == "warning" for e in events):
            consumer.poll(0.2)
        warned = time.monotonic() - began
        owned = consumer.owned
    warnings = [e for e in events if e.kind == "warning"]
    print(f"{protocol}: warned {warned:.2f} s after subscribe")
    assert len(warnings) == 1, [e.kind for e in events]
    assert warnings[0].error is not None and repr(missing) in warnings[0].error
    assert real not in warnings[0].error
    assert {t for t, _ in owned} <= {real}
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [m for m in logged if repr(missing) in m] == [warnings[0].error]


def test_the_asyncio_consumer_warns_about_a_missing_topic_too(
    bootstrap: str, unique: Callable[[str], str]
) -> None:
    missing = unique("no-such-topic")
    events: list[RebalanceEvent] = []

    async def run() -> None:
        conf = {"bootstrap.servers": bootstrap, "group.id": unique("g"), "group.protocol": "consumer"}
        began = time.monotonic()
        async with CoopAIOConsumer(conf, events=events.append, handle_signals=False) as consumer:
            await consumer.subscribe([missing])
            while time.monotonic() - began < WARNED_WITHIN_S and not any(e.kind == "warning" for e in events):
                await consumer.poll(0.2)

    asyncio.run(run())
    warnings = [e for e in events if e.kind == "warning"]
    assert len(warnings) == 1 and repr(missing) in (warnings[0].error or "")

"""Building a CoopConsumer over kafka_coop.testing's fake client, for the consumer's unit tests."""

from __future__ import annotations

from typing import Any

from kafka_coop.consumer import CoopConsumer
from kafka_coop.events import RebalanceEvent
from kafka_coop.sinks import MemorySink
from kafka_coop.testing import FakeConsumer, FakeGroup, FakeMessage

T = "t"
PROTOCOL_CONF = {
    "eager": {"partition.assignment.strategy": "range"},
    "cooperative": {"partition.assignment.strategy": "cooperative-sticky"},
    "consumer": {"group.protocol": "consumer"},
}
PROTOCOLS = list(PROTOCOL_CONF)
MARKS = {"enable.auto.offset.store": "false"}


def conf_for(
    protocol: str = "cooperative", *, instance_id: str | None = None, **extra: Any
) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": "b:9092",
        "group.id": "g",
        "auto.offset.reset": "earliest",
        **PROTOCOL_CONF[protocol],
        **extra,
    }
    if instance_id:
        conf["group.instance.id"] = instance_id
    return conf


def make(
    protocol: str = "cooperative",
    *,
    instance_id: str | None = None,
    marks: bool = True,
    subscribe: bool = True,
    **kwargs: Any,
) -> tuple[CoopConsumer, FakeConsumer, MemorySink]:
    """A subscribed CoopConsumer over a fake client; `marks`: enable.auto.offset.store=false."""
    conf = conf_for(protocol, instance_id=instance_id, **(MARKS if marks else {}))
    conf.update(kwargs.pop("conf", {}))
    group = FakeGroup()
    sink = MemorySink()
    consumer = CoopConsumer(conf, events=sink, client=group.client, **kwargs)
    if subscribe:
        consumer.subscribe([T])
    inner = group.consumer
    assert inner is not None
    return consumer, inner, sink


def kinds(sink: MemorySink) -> list[str]:
    return [e.kind for e in sink.events]


def last(sink: MemorySink, kind: str) -> RebalanceEvent:
    return [e for e in sink.events if e.kind == kind][-1]


def parts(*ps: int) -> list[tuple[str, int]]:
    return [(T, p) for p in ps]


def hand_out(consumer: CoopConsumer, inner: FakeConsumer, partition: int, offset: int) -> FakeMessage:
    """The record at `offset` of `partition`, handed to the application by a `poll`."""
    inner.group.produce(T, partition, f"{partition}-{offset}".encode(), at=offset)
    inner.assigned[(T, partition)] = offset
    msg = consumer.poll(0)
    assert isinstance(msg, FakeMessage) and (msg.partition(), msg.offset()) == (partition, offset), msg
    return msg


def mark(consumer: CoopConsumer, inner: FakeConsumer, partition: int, offset: int) -> FakeMessage:
    """Hand out the record at `offset` and mark it done (explicit marks)."""
    msg = hand_out(consumer, inner, partition, offset)
    consumer.mark_done(msg)  # type: ignore[arg-type]
    return msg

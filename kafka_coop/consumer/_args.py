"""confluent-kafka's own argument checks, made before kafka-coop reads an argument itself, so that a
call confluent refuses is refused the same way (same exception type and text) and a call kafka-coop
takes apart (`commit(message=)`, `store_offsets`, `seek`, `assign`) never fails on its own attribute
access first (tests/unit/consumer/test_argument_parity.py)."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import TopicPartition as ClientPartition


def check_partitions(partitions: Any) -> None:
    """confluent's `py_to_c_parts`: a list of TopicPartition."""
    if not isinstance(partitions, list):
        raise TypeError("requires list of TopicPartition")
    for tp in partitions:
        if type(tp) is not ClientPartition:
            raise TypeError("expected cimpl.TopicPartition")


def check_unassign(partitions: Any) -> None:
    """`incremental_unassign`'s list, each partition once: librdkafka 2.16 aborts the process on a
    duplicate (rd_kafka_assignment_subtract), so it is refused as `incremental_assign` refuses one."""
    check_partitions(partitions)
    seen: set[tuple[str, int]] = set()
    for tp in partitions:
        key = (tp.topic, tp.partition)
        if key in seen:
            raise KafkaException(
                KafkaError(
                    KafkaError._INVALID_ARG,
                    f"Duplicate {tp.topic} [{tp.partition}] in the list given to incremental_unassign: "
                    "list each partition once (librdkafka would abort the process).",
                )
            )
        seen.add(key)


def check_partition(tp: Any) -> None:
    if type(tp) is not ClientPartition:
        raise TypeError("expected cimpl.TopicPartition")


def check_message(msg: Any) -> None:
    """A record (confluent's Message, or one that behaves as it, such as kafka_coop.testing's), without
    an error: confluent refuses to commit or store an error event."""
    if not all(callable(getattr(msg, name, None)) for name in ("topic", "partition", "offset", "error")):
        raise TypeError("expected cimpl.Message")
    error = msg.error()
    if error is not None:
        raise KafkaException(
            KafkaError(KafkaError._INVALID_ARG, f"Cannot store offsets for message with error: '{error}'")
        )


def check_commit(msg: Any, offsets: Any) -> None:
    """`commit(message=, offsets=)`, as confluent checks them (None is not given)."""
    if msg is not None and offsets is not None:
        raise ValueError("message and offsets are mutually exclusive")
    if offsets is not None:
        check_partitions(offsets)
    elif msg is not None:
        check_message(msg)


def check_store(msg: Any, offsets: Any) -> None:
    """`store_offsets(message=, offsets=)`: one of them, as confluent checks them."""
    if msg is None and offsets is None:
        raise ValueError("expected either message or offsets")
    check_commit(msg, offsets)


def commit_flag(asynchronous: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """confluent's `commit(message, offsets, async, asynchronous)`: the last of them given wins."""
    if len(args) > 1:
        raise TypeError(f"function takes at most 4 arguments ({3 + len(args)} given)")
    unknown = set(kwargs) - {"async"}
    if unknown:
        raise TypeError(f"'{unknown.pop()}' is an invalid keyword argument for this function")
    if args:
        asynchronous = args[0]
    elif "async" in kwargs:
        asynchronous = kwargs["async"]
    return bool(asynchronous)

"""The step protocol between the rebalance handler and the driver that runs it.

The handler never calls the client. Each rebalance callback is a generator of steps: it yields what it
needs done, the driver executes the step and sends the result back (or throws the exception the call
raised into the generator), and the generator decides the next one. Both drivers execute every step
synchronously, on the thread librdkafka runs the callback on (the polling thread; a pool worker under
asyncio), so a rebalance never waits for another thread; only `CallHook` and `Emit` go elsewhere
under asyncio (to the event loop, where hooks and sinks run).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from kafka_coop.events import PartitionKey, RebalanceEvent

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Assign:
    """`incremental_assign(partitions)` (cooperative, consumer) or `assign(partitions)` (eager)."""

    partitions: list[Any]  # confluent_kafka.TopicPartition
    incremental: bool


@dataclass(frozen=True, slots=True)
class Unassign:
    """`incremental_unassign(partitions)` (cooperative, consumer) or `unassign()` (eager)."""

    partitions: list[Any]
    incremental: bool


@dataclass(frozen=True, slots=True)
class Commit:
    """Commit, synchronously and with explicit offsets, what is done of `keys` (the driver's committer
    decides the offsets); returns the committed `confluent_kafka.TopicPartition`s, per-partition errors
    included, or raises the client's KafkaException."""

    keys: tuple[PartitionKey, ...]


@dataclass(frozen=True, slots=True)
class Release:
    """The partitions left this member (revoked, lost, fenced): forget their offsets, marks and seeks."""

    keys: tuple[PartitionKey, ...]
    # An eager revoke: the partitions may be assigned again by the assignment that ends the rebalance.
    retire: bool = False


@dataclass(frozen=True, slots=True)
class ReadCommitted:
    """`committed(partitions, timeout=timeout_s)`: the broker's committed offsets."""

    partitions: list[Any]
    timeout_s: float


@dataclass(frozen=True, slots=True)
class ReadAssignment:
    """`assignment()`: what librdkafka really has assigned."""


@dataclass(frozen=True, slots=True)
class ReadMemberId:
    """`memberid()`: "" (or None) once a classic member's id was reset."""


@dataclass(frozen=True, slots=True)
class Wait:
    """Sleep: the back-off before a commit retry."""

    seconds: float


@dataclass(frozen=True, slots=True)
class CallHook:
    """Call a user hook (awaited on the event loop under asyncio when it is a coroutine function)."""

    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Emit:
    """Give an event to the sink (on the event loop under asyncio)."""

    event: RebalanceEvent


Step: TypeAlias = (
    Assign
    | Unassign
    | Commit
    | Release
    | ReadCommitted
    | ReadAssignment
    | ReadMemberId
    | Wait
    | CallHook
    | Emit
)
Steps: TypeAlias = Generator[Step, Any, T]


def run_steps(steps: Steps[T], execute: Callable[[Step], Any]) -> T:
    """Drive a handler generator to its end, executing each step."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as stop:
            result: T = stop.value
            return result
        value, error = None, None
        try:
            value = execute(step)
        except BaseException as exc:  # the generator decides; it re-raises what it cannot handle
            error = exc

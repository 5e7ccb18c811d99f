"""Kafka's embedded consumer protocol: the Subscription and Assignment payloads of JoinGroup/SyncGroup.

The group coordinator treats these payloads as opaque bytes; only members (and tools like this one)
interpret them. Field order and versions follow apache/kafka's ConsumerProtocolSubscription.json and
ConsumerProtocolAssignment.json (versions 0-3, never flexible, so no tagged fields or varints).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from kafka_coop.events import PartitionKey
from kafka_coop.protocol._buffer import (
    INT16_MAX,
    INT16_SIZE,
    INT32_MAX,
    INT32_MIN,
    INT32_SIZE,
    Reader,
    Writer,
)
from kafka_coop.protocol._errors import ProtocolDecodeError

MAX_SUBSCRIPTION_VERSION = 3
MAX_ASSIGNMENT_VERSION = 3

# The smallest possible {topic: string, partitions: [int32]} element: empty topic, empty partition array.
_TOPIC_PARTITIONS_MIN_SIZE = INT16_SIZE + INT32_SIZE


def _check_wire_string(value: str) -> str:
    """Reject strings the wire cannot carry, so a model that validates always encodes."""
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValueError(f"not encodable as UTF-8: {exc.reason}") from None
    if size > INT16_MAX:
        raise ValueError(f"{size} UTF-8 bytes exceed the int16 length limit {INT16_MAX}")
    return value


WireString = Annotated[str, AfterValidator(_check_wire_string)]
Int32 = Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX)]
# Any non-negative int16: decoding keeps a newer-than-known wire version rather than lying about it.
WireVersion = Annotated[int, Field(ge=0, le=INT16_MAX)]
TopicPartitions = tuple[tuple[WireString, Int32], ...]


class ConsumerProtocolSubscription(BaseModel):
    """What one member tells the group leader: its topics, its owned partitions and its rack.

    `version` is the wire version as received and may exceed `MAX_SUBSCRIPTION_VERSION` for payloads
    from newer clients; fields introduced after `version` keep their defaults, exactly as Kafka does.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: WireVersion
    topics: tuple[WireString, ...]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = ()
    generation_id: Int32 = -1
    rack_id: WireString | None = None


class ConsumerProtocolAssignment(BaseModel):
    """What the group leader hands one member back in SyncGroup.

    Versions 1-3 add no fields here; they exist so the assignment can be versioned in step with the
    subscription, which is why a v3 assignment is byte-for-byte a v0 one apart from its header.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: WireVersion
    partitions: TopicPartitions
    user_data: bytes | None = None


def _read_version(reader: Reader, max_known: int) -> tuple[int, int]:
    """Return (wire version, version whose fields to read).

    Kafka promises newer versions only append fields, so it parses a newer payload with the newest
    schema it knows and ignores the rest; we do the same. Negative versions have no such promise.
    """
    start = reader.offset
    version = reader.int16("version")
    if version < 0:
        raise ProtocolDecodeError("version", start, f"unsupported negative version {version}")
    return version, min(version, max_known)


def _read_topic_partitions_element(reader: Reader, field: str) -> tuple[str, tuple[int, ...]]:
    topic = reader.string(f"{field}.topic")
    partitions = reader.array(f"{field}.partitions", Reader.int32, INT32_SIZE)
    return topic, partitions


def _read_topic_partitions(reader: Reader, field: str) -> tuple[PartitionKey, ...]:
    """Flatten the wire's per-topic grouping, which is an encoding detail rather than information."""
    groups = reader.array(field, _read_topic_partitions_element, _TOPIC_PARTITIONS_MIN_SIZE)
    return tuple((topic, partition) for topic, partitions in groups for partition in partitions)


def _group_by_topic(partitions: Iterable[PartitionKey]) -> list[tuple[str, list[int]]]:
    """Group as the wire requires, in first-appearance order so encoding is deterministic and stable.

    A topic that reappears later joins its first group rather than starting a second one, matching
    Kafka's own assignment serializer (which looks topics up by name before adding them).
    """
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    return list(grouped.items())


def _write_topic_partitions_element(writer: Writer, element: tuple[str, list[int]], field: str) -> None:
    topic, partitions = element
    writer.string(topic, f"{field}.topic")
    writer.array(partitions, Writer.int32, f"{field}.partitions")


def _write_topic_partitions(writer: Writer, partitions: Iterable[PartitionKey], field: str) -> None:
    writer.array(_group_by_topic(partitions), _write_topic_partitions_element, field)


def _check_encodable_version(version: int, max_known: int, kind: str) -> int:
    """Refuse to stamp a version whose fields we do not know; the peer would misparse the payload."""
    if not 0 <= version <= max_known:
        raise ValueError(f"cannot encode {kind} version {version}: only versions 0..{max_known} are known")
    return version


def decode_subscription(data: bytes) -> ConsumerProtocolSubscription:
    """Parse a JoinGroup member's metadata; trailing bytes are tolerated as Kafka tolerates them."""
    reader = Reader(data)
    version, schema = _read_version(reader, MAX_SUBSCRIPTION_VERSION)
    topics = reader.array("topics", Reader.string, INT16_SIZE)
    user_data = reader.nullable_bytes("user_data")
    owned = _read_topic_partitions(reader, "owned_partitions") if schema >= 1 else ()
    generation_id = reader.int32("generation_id") if schema >= 2 else -1
    rack_id = reader.nullable_string("rack_id") if schema >= 3 else None
    return ConsumerProtocolSubscription(
        version=version,
        topics=topics,
        user_data=user_data,
        owned_partitions=owned,
        generation_id=generation_id,
        rack_id=rack_id,
    )


def encode_subscription(sub: ConsumerProtocolSubscription) -> bytes:
    """Write exactly the fields of `sub.version`; fields newer than it are dropped, as on the wire."""
    version = _check_encodable_version(sub.version, MAX_SUBSCRIPTION_VERSION, "subscription")
    writer = Writer()
    writer.int16(version, "version")
    writer.array(sub.topics, Writer.string, "topics")
    writer.nullable_bytes(sub.user_data, "user_data")
    if version >= 1:
        _write_topic_partitions(writer, sub.owned_partitions, "owned_partitions")
    if version >= 2:
        writer.int32(sub.generation_id, "generation_id")
    if version >= 3:
        writer.nullable_string(sub.rack_id, "rack_id")
    return writer.getvalue()


def decode_assignment(data: bytes) -> ConsumerProtocolAssignment:
    """Parse a SyncGroup assignment; trailing bytes are tolerated as Kafka tolerates them."""
    reader = Reader(data)
    version, _schema = _read_version(reader, MAX_ASSIGNMENT_VERSION)
    partitions = _read_topic_partitions(reader, "assigned_partitions")
    user_data = reader.nullable_bytes("user_data")
    return ConsumerProtocolAssignment(version=version, partitions=partitions, user_data=user_data)


def encode_assignment(assignment: ConsumerProtocolAssignment) -> bytes:
    """Encode for SyncGroup; every known version shares one field layout, only the header differs."""
    version = _check_encodable_version(assignment.version, MAX_ASSIGNMENT_VERSION, "assignment")
    writer = Writer()
    writer.int16(version, "version")
    _write_topic_partitions(writer, assignment.partitions, "assigned_partitions")
    writer.nullable_bytes(assignment.user_data, "user_data")
    return writer.getvalue()

"""ConsumerGroupDescribe (API key 69, KIP-848; v1 adds MemberType, KIP-1099): the group coordinator's own
view of a consumer group, its epochs and every member's current and target assignment.

Field order, types and versions follow apache/kafka's ConsumerGroupDescribeRequest.json and
ConsumerGroupDescribeResponse.json (as shipped in kafka-clients 4.1.1): versions 0-1, flexible from 0, so
compact strings and arrays and a tagged-field section ending every struct. No Python client sends this
request (docs/inspection.md "The coordinator's view"), so the bytes are ours; the header and the
connection are kafka-python's.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field

from kafka_coop._vocab import SeenGroupProtocol
from kafka_coop.events import PartitionKey
from kafka_coop.protocol._buffer import INT16_MAX, INT32_MAX, INT32_MIN, INT32_SIZE
from kafka_coop.protocol._compact import (
    INT8_MAX,
    INT8_MIN,
    UUID_SIZE,
    CompactReader,
    CompactWriter,
    TaggedFields,
)
from kafka_coop.protocol._consumer_protocol import WireString

API_KEY: Final = 69
MAX_VERSION: Final = 1
MEMBER_TYPE_UNKNOWN: Final = -1
MEMBER_TYPES: Final[dict[int, SeenGroupProtocol]] = {0: "classic", 1: "consumer"}
AUTHORIZED_OPERATIONS_OMITTED: Final = INT32_MIN  # the schema's default: not asked for

Int8 = Annotated[int, Field(ge=INT8_MIN, le=INT8_MAX)]
Int16 = Annotated[int, Field(ge=-(INT16_MAX + 1), le=INT16_MAX)]
Int32 = Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX)]
Version = Annotated[int, Field(ge=0, le=MAX_VERSION)]

# Smallest encodings, which bound a declared array count by the bytes left: a compact string or array
# is at least its one-byte length, a tagged-field section its one-byte count.
_TOPIC_MIN = UUID_SIZE + 1 + 1 + 1
_MEMBER_MIN = 1 + 1 + 1 + INT32_SIZE + 1 + 1 + 1 + 1 + 2 + 2 + 1
_GROUP_MIN = 2 + 1 + 1 + 1 + INT32_SIZE + INT32_SIZE + 1 + 1 + INT32_SIZE + 1


class _Wire(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    unknown_tagged_fields: TaggedFields = ()


class AssignedTopic(_Wire):
    """One topic of an assignment: the broker names it by id and by name."""

    topic_id: uuid.UUID
    topic_name: WireString
    partitions: tuple[Int32, ...] = ()


class MemberAssignment(_Wire):
    topic_partitions: tuple[AssignedTopic, ...] = ()

    @property
    def partitions(self) -> tuple[PartitionKey, ...]:
        """(topic, partition) pairs, sorted: the wire's grouping by topic is not information."""
        return tuple(sorted((t.topic_name, p) for t in self.topic_partitions for p in t.partitions))


class DescribedMember(_Wire):
    member_id: WireString
    instance_id: WireString | None = None
    rack_id: WireString | None = None
    member_epoch: Int32
    client_id: WireString
    client_host: WireString
    subscribed_topic_names: tuple[WireString, ...] = ()
    subscribed_topic_regex: WireString | None = None
    assignment: MemberAssignment = MemberAssignment()
    target_assignment: MemberAssignment = MemberAssignment()
    member_type: Int8 = MEMBER_TYPE_UNKNOWN  # v1+: 0 classic, 1 consumer; -1 where not sent (v0)

    @property
    def type_name(self) -> SeenGroupProtocol:
        return MEMBER_TYPES.get(self.member_type, "unknown")


class DescribedGroup(_Wire):
    error_code: Int16 = 0
    error_message: WireString | None = None
    group_id: WireString
    group_state: WireString = ""
    group_epoch: Int32 = 0
    assignment_epoch: Int32 = 0
    assignor_name: WireString = ""
    members: tuple[DescribedMember, ...] = ()
    authorized_operations: Int32 = AUTHORIZED_OPERATIONS_OMITTED


class ConsumerGroupDescribeRequest(_Wire):
    """Versions 0 and 1 are the same bytes: v1 only tells the broker the client reads MemberType."""

    version: Version = MAX_VERSION
    group_ids: tuple[WireString, ...]
    include_authorized_operations: bool = False


class ConsumerGroupDescribeResponse(_Wire):
    version: Version
    throttle_time_ms: Int32 = 0
    groups: tuple[DescribedGroup, ...] = ()


def _check_version(version: int) -> int:
    """A version whose fields we do not know would be misread: refused, not guessed (a caller's bug)."""
    if not 0 <= version <= MAX_VERSION:
        raise ValueError(f"ConsumerGroupDescribe version {version} is not one of 0..{MAX_VERSION}")
    return version


# --- request ----------------------------------------------------------------------------------------


def encode_request(request: ConsumerGroupDescribeRequest) -> bytes:
    """The request body (what follows the v2 request header)."""
    _check_version(request.version)
    writer = CompactWriter()
    writer.compact_array(request.group_ids, CompactWriter.compact_string, "group_ids")
    writer.boolean(request.include_authorized_operations, "include_authorized_operations")
    writer.tagged_fields(request.unknown_tagged_fields, "tagged_fields")
    return writer.getvalue()


def decode_request(data: bytes, version: int) -> ConsumerGroupDescribeRequest:
    _check_version(version)
    reader = CompactReader(data)
    group_ids = reader.compact_array("group_ids", CompactReader.compact_string, 1)
    include = reader.boolean("include_authorized_operations")
    tags = reader.tagged_fields("tagged_fields")
    reader.expect_end("request")
    return ConsumerGroupDescribeRequest(
        version=version,
        group_ids=group_ids,
        include_authorized_operations=include,
        unknown_tagged_fields=tags,
    )


# --- response ---------------------------------------------------------------------------------------


def _read_topic(reader: CompactReader, field: str) -> AssignedTopic:
    return AssignedTopic(
        topic_id=reader.uuid(f"{field}.topic_id"),
        topic_name=reader.compact_string(f"{field}.topic_name"),
        partitions=reader.compact_array(f"{field}.partitions", CompactReader.int32, INT32_SIZE),
        unknown_tagged_fields=reader.tagged_fields(f"{field}.tagged_fields"),
    )


def _read_assignment(reader: CompactReader, field: str) -> MemberAssignment:
    return MemberAssignment(
        topic_partitions=reader.compact_array(f"{field}.topic_partitions", _read_topic, _TOPIC_MIN),
        unknown_tagged_fields=reader.tagged_fields(f"{field}.tagged_fields"),
    )


def _member_reader(version: int) -> Callable[[CompactReader, str], DescribedMember]:
    def read(reader: CompactReader, field: str) -> DescribedMember:
        return DescribedMember(
            member_id=reader.compact_string(f"{field}.member_id"),
            instance_id=reader.compact_nullable_string(f"{field}.instance_id"),
            rack_id=reader.compact_nullable_string(f"{field}.rack_id"),
            member_epoch=reader.int32(f"{field}.member_epoch"),
            client_id=reader.compact_string(f"{field}.client_id"),
            client_host=reader.compact_string(f"{field}.client_host"),
            subscribed_topic_names=reader.compact_array(
                f"{field}.subscribed_topic_names", CompactReader.compact_string, 1
            ),
            subscribed_topic_regex=reader.compact_nullable_string(f"{field}.subscribed_topic_regex"),
            assignment=_read_assignment(reader, f"{field}.assignment"),
            target_assignment=_read_assignment(reader, f"{field}.target_assignment"),
            member_type=reader.int8(f"{field}.member_type") if version >= 1 else MEMBER_TYPE_UNKNOWN,
            unknown_tagged_fields=reader.tagged_fields(f"{field}.tagged_fields"),
        )

    return read


def _group_reader(version: int) -> Callable[[CompactReader, str], DescribedGroup]:
    read_member = _member_reader(version)

    def read(reader: CompactReader, field: str) -> DescribedGroup:
        return DescribedGroup(
            error_code=reader.int16(f"{field}.error_code"),
            error_message=reader.compact_nullable_string(f"{field}.error_message"),
            group_id=reader.compact_string(f"{field}.group_id"),
            group_state=reader.compact_string(f"{field}.group_state"),
            group_epoch=reader.int32(f"{field}.group_epoch"),
            assignment_epoch=reader.int32(f"{field}.assignment_epoch"),
            assignor_name=reader.compact_string(f"{field}.assignor_name"),
            members=reader.compact_array(f"{field}.members", read_member, _MEMBER_MIN),
            authorized_operations=reader.int32(f"{field}.authorized_operations"),
            unknown_tagged_fields=reader.tagged_fields(f"{field}.tagged_fields"),
        )

    return read


def decode_response(data: bytes, version: int) -> ConsumerGroupDescribeResponse:
    """The response body (after the v1 response header) of a request sent at `version`.

    Bytes left after the message are an error: the frame is exactly one message, so leftovers mean
    the bytes are not what this version says they are.
    """
    _check_version(version)
    reader = CompactReader(data)
    throttle = reader.int32("throttle_time_ms")
    groups = reader.compact_array("groups", _group_reader(version), _GROUP_MIN)
    tags = reader.tagged_fields("tagged_fields")
    reader.expect_end("response")
    return ConsumerGroupDescribeResponse(
        version=version, throttle_time_ms=throttle, groups=groups, unknown_tagged_fields=tags
    )


def _write_topic(writer: CompactWriter, topic: AssignedTopic, field: str) -> None:
    writer.uuid(topic.topic_id, f"{field}.topic_id")
    writer.compact_string(topic.topic_name, f"{field}.topic_name")
    writer.compact_array(topic.partitions, CompactWriter.int32, f"{field}.partitions")
    writer.tagged_fields(topic.unknown_tagged_fields, f"{field}.tagged_fields")


def _write_assignment(writer: CompactWriter, assignment: MemberAssignment, field: str) -> None:
    writer.compact_array(assignment.topic_partitions, _write_topic, f"{field}.topic_partitions")
    writer.tagged_fields(assignment.unknown_tagged_fields, f"{field}.tagged_fields")


def encode_response(response: ConsumerGroupDescribeResponse) -> bytes:
    """What a broker writes; here for tests and fuzzing (the shell only decodes).

    MemberType is `ignorable` in the schema: at version 0 it is left out, as Kafka's writer does.
    """
    version = _check_version(response.version)

    def write_member(writer: CompactWriter, member: DescribedMember, field: str) -> None:
        writer.compact_string(member.member_id, f"{field}.member_id")
        writer.compact_nullable_string(member.instance_id, f"{field}.instance_id")
        writer.compact_nullable_string(member.rack_id, f"{field}.rack_id")
        writer.int32(member.member_epoch, f"{field}.member_epoch")
        writer.compact_string(member.client_id, f"{field}.client_id")
        writer.compact_string(member.client_host, f"{field}.client_host")
        writer.compact_array(
            member.subscribed_topic_names, CompactWriter.compact_string, f"{field}.subscribed_topic_names"
        )
        writer.compact_nullable_string(member.subscribed_topic_regex, f"{field}.subscribed_topic_regex")
        _write_assignment(writer, member.assignment, f"{field}.assignment")
        _write_assignment(writer, member.target_assignment, f"{field}.target_assignment")
        if version >= 1:
            writer.int8(member.member_type, f"{field}.member_type")
        writer.tagged_fields(member.unknown_tagged_fields, f"{field}.tagged_fields")

    def write_group(writer: CompactWriter, group: DescribedGroup, field: str) -> None:
        writer.int16(group.error_code, f"{field}.error_code")
        writer.compact_nullable_string(group.error_message, f"{field}.error_message")
        writer.compact_string(group.group_id, f"{field}.group_id")
        writer.compact_string(group.group_state, f"{field}.group_state")
        writer.int32(group.group_epoch, f"{field}.group_epoch")
        writer.int32(group.assignment_epoch, f"{field}.assignment_epoch")
        writer.compact_string(group.assignor_name, f"{field}.assignor_name")
        writer.compact_array(group.members, write_member, f"{field}.members")
        writer.int32(group.authorized_operations, f"{field}.authorized_operations")
        writer.tagged_fields(group.unknown_tagged_fields, f"{field}.tagged_fields")

    writer = CompactWriter()
    writer.int32(response.throttle_time_ms, "throttle_time_ms")
    writer.compact_array(response.groups, write_group, "groups")
    writer.tagged_fields(response.unknown_tagged_fields, "tagged_fields")
    return writer.getvalue()

"""ConsumerGroupDescribe v0/v1 codecs (flexible encoding: compact strings and arrays, tagged fields).

Byte vectors are built by hand from apache/kafka's ConsumerGroupDescribeRequest/Response.json (as
shipped in kafka-clients 4.1.1), not by the encoder under test; tests/integration/protocol checks the
codec against Kafka's own schema files and a real broker.
"""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from kafka_coop.protocol import (
    MAX_CONSUMER_GROUP_DESCRIBE_VERSION,
    AssignedTopic,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedGroup,
    DescribedMember,
    MemberAssignment,
    ProtocolDecodeError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from tests.unit.protocol.strategies import names, responses, tags

TOPIC_ID = uuid.UUID("0b5f4c1e-7d0a-4e4b-9a55-3f1f2d4b6c7e")


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def cstr(value: str | None) -> bytes:
    if value is None:
        return b"\x00"
    raw = value.encode()
    return uvarint(len(raw) + 1) + raw


def carray(items: list[bytes]) -> bytes:
    return uvarint(len(items) + 1) + b"".join(items)


def i8(value: int) -> bytes:
    return struct.pack(">b", value)


def i16(value: int) -> bytes:
    return struct.pack(">h", value)


def i32(value: int) -> bytes:
    return struct.pack(">i", value)


NO_TAGS = b"\x00"


def topic_bytes(name: str, partitions: list[int]) -> bytes:
    return TOPIC_ID.bytes + cstr(name) + carray([i32(p) for p in partitions]) + NO_TAGS


def assignment_bytes(topics: list[bytes]) -> bytes:
    return carray(topics) + NO_TAGS


def member_bytes(version: int, member_type: int = 1) -> bytes:
    return (
        cstr("Aa0-member-id-22chars_")
        + cstr("pod-1")
        + cstr(None)
        + i32(7)
        + cstr("svc")
        + cstr("/127.0.0.1")
        + carray([cstr("orders")])
        + cstr(None)
        + assignment_bytes([topic_bytes("orders", [0, 2])])
        + assignment_bytes([topic_bytes("orders", [0])])
        + (i8(member_type) if version >= 1 else b"")
        + NO_TAGS
    )


def group_bytes(version: int) -> bytes:
    return (
        i16(0)
        + cstr(None)
        + cstr("orders-app")
        + cstr("Reconciling")
        + i32(8)
        + i32(8)
        + cstr("uniform")
        + carray([member_bytes(version)])
        + i32(-(2**31))
        + NO_TAGS
    )


def response_bytes(version: int) -> bytes:
    return i32(0) + carray([group_bytes(version)]) + NO_TAGS


def expected_response(version: int) -> ConsumerGroupDescribeResponse:
    member = DescribedMember(
        member_id="Aa0-member-id-22chars_",
        instance_id="pod-1",
        member_epoch=7,
        client_id="svc",
        client_host="/127.0.0.1",
        subscribed_topic_names=("orders",),
        assignment=MemberAssignment(
            topic_partitions=(AssignedTopic(topic_id=TOPIC_ID, topic_name="orders", partitions=(0, 2)),)
        ),
        target_assignment=MemberAssignment(
            topic_partitions=(AssignedTopic(topic_id=TOPIC_ID, topic_name="orders", partitions=(0,)),)
        ),
        member_type=1 if version >= 1 else -1,
    )
    group = DescribedGroup(
        group_id="orders-app",
        group_state="Reconciling",
        group_epoch=8,
        assignment_epoch=8,
        assignor_name="uniform",
        members=(member,),
    )
    return ConsumerGroupDescribeResponse(version=version, groups=(group,))


# --- hand-built vectors ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1])
def test_request_matches_hand_built_bytes_at_both_versions(version: int) -> None:
    wire = carray([cstr("a"), cstr("b")]) + b"\x01" + NO_TAGS
    request = ConsumerGroupDescribeRequest(
        version=version, group_ids=("a", "b"), include_authorized_operations=True
    )
    assert encode_request(request) == wire
    assert decode_request(wire, version) == request


@pytest.mark.parametrize("version", [0, 1])
def test_response_decodes_from_hand_built_bytes(version: int) -> None:
    assert decode_response(response_bytes(version), version) == expected_response(version)


@pytest.mark.parametrize("version", [0, 1])
def test_response_encodes_to_hand_built_bytes(version: int) -> None:
    assert encode_response(expected_response(version)) == response_bytes(version)


def test_v1_member_type_names_classic_and_consumer() -> None:
    wire = response_bytes(1).replace(member_bytes(1, 1), member_bytes(1, 0))
    (member,) = decode_response(wire, 1).groups[0].members
    assert (member.member_type, member.type_name) == (0, "classic")
    assert expected_response(1).groups[0].members[0].type_name == "consumer"


def test_v0_member_has_no_type() -> None:
    (member,) = decode_response(response_bytes(0), 0).groups[0].members
    assert (member.member_type, member.type_name) == (-1, "unknown")


def test_v0_encoding_leaves_out_the_ignorable_member_type() -> None:
    assert encode_response(expected_response(1).model_copy(update={"version": 0})) == response_bytes(0)


def test_assignment_partitions_are_flattened_and_sorted() -> None:
    assignment = MemberAssignment(
        topic_partitions=(
            AssignedTopic(topic_id=TOPIC_ID, topic_name="z", partitions=(3, 1)),
            AssignedTopic(topic_id=uuid.uuid4(), topic_name="a", partitions=(0,)),
        )
    )
    assert assignment.partitions == (("a", 0), ("z", 1), ("z", 3))


def test_group_error_with_message_decodes() -> None:
    group = (
        i16(69)
        + cstr("Group g is not a consumer group.")
        + cstr("g")
        + cstr("")
        + i32(0)
        + i32(0)
        + cstr("")
        + carray([])
        + i32(-(2**31))
        + NO_TAGS
    )
    (decoded,) = decode_response(i32(0) + carray([group]) + NO_TAGS, 1).groups
    assert (decoded.error_code, decoded.error_message) == (69, "Group g is not a consumer group.")


# --- tagged fields ---------------------------------------------------------------------------------


def test_unknown_tagged_fields_are_kept_and_written_back() -> None:
    tags = uvarint(2) + uvarint(0) + uvarint(2) + b"\xab\xcd" + uvarint(300) + uvarint(0)
    wire = i32(5) + carray([]) + tags
    decoded = decode_response(wire, 1)
    assert decoded.unknown_tagged_fields == ((0, b"\xab\xcd"), (300, b""))
    assert encode_response(decoded) == wire


def test_tagged_fields_out_of_order_raise() -> None:
    tags = uvarint(2) + uvarint(5) + uvarint(0) + uvarint(5) + uvarint(0)
    with pytest.raises(ProtocolDecodeError, match="does not follow"):
        decode_response(i32(0) + carray([]) + tags, 1)


def test_model_refuses_tags_out_of_order() -> None:
    with pytest.raises(ValidationError, match="rise strictly"):
        ConsumerGroupDescribeResponse(version=1, unknown_tagged_fields=((3, b""), (1, b"")))


def test_tagged_field_larger_than_what_is_left_raises() -> None:
    tags = uvarint(1) + uvarint(0) + uvarint(100) + b"xx"
    with pytest.raises(ProtocolDecodeError, match=r"tagged_fields\[0\].data"):
        decode_response(i32(0) + carray([]) + tags, 1)


# --- varints ---------------------------------------------------------------------------------------


def test_multi_byte_varint_lengths_decode() -> None:
    name = "g" * 200  # length + 1 = 201: two varint bytes
    wire = carray([cstr(name)]) + b"\x00" + NO_TAGS
    assert wire[1:3] == b"\xc9\x01"
    assert decode_request(wire, 1).group_ids == (name,)


def test_varint_longer_than_five_bytes_raises() -> None:
    with pytest.raises(ProtocolDecodeError, match="longer than 5 bytes"):
        decode_request(b"\x80\x80\x80\x80\x80\x01" + b"\x00" + NO_TAGS, 1)


def test_varint_over_32_bits_raises() -> None:
    with pytest.raises(ProtocolDecodeError, match="exceeds 32 bits"):
        decode_request(b"\xff\xff\xff\xff\x1f" + b"\x00" + NO_TAGS, 1)


# --- malformed input -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1])
def test_truncated_response_at_every_prefix_length_raises(version: int) -> None:
    wire = response_bytes(version)
    for length in range(len(wire)):
        with pytest.raises(ProtocolDecodeError):
            decode_response(wire[:length], version)


def test_bytes_after_the_message_raise() -> None:
    with pytest.raises(ProtocolDecodeError, match="1 bytes left"):
        decode_response(response_bytes(1) + b"\x00", 1)


def test_v1_bytes_read_as_v0_do_not_pass_silently() -> None:
    with pytest.raises(ProtocolDecodeError):
        decode_response(response_bytes(1), 0)


def test_null_group_id_raises() -> None:
    with pytest.raises(ProtocolDecodeError, match=r"group_ids\[0\].*null"):
        decode_request(carray([b"\x00"]) + b"\x00" + NO_TAGS, 1)


def test_boolean_other_than_zero_or_one_raises() -> None:
    with pytest.raises(ProtocolDecodeError, match="invalid boolean byte 2"):
        decode_request(carray([]) + b"\x02" + NO_TAGS, 1)


def test_string_longer_than_int16_raises() -> None:
    wire = uvarint(2) + uvarint(0x8000 + 1) + b"x" * 0x8000 + b"\x00" + NO_TAGS
    with pytest.raises(ProtocolDecodeError, match="exceeds 32767"):
        decode_request(wire, 1)


@pytest.mark.parametrize(
    "wire",
    [
        i32(0) + uvarint(2**31) + NO_TAGS,
        i32(0) + carray([group_bytes(1)[:-30]]),
    ],
    ids=["groups", "members"],
)
def test_huge_declared_count_in_short_buffer_raises_quickly(wire: bytes) -> None:
    started = time.perf_counter()
    with pytest.raises(ProtocolDecodeError):
        decode_response(wire, 1)
    assert time.perf_counter() - started < 1.0


def test_decode_error_names_the_nested_field() -> None:
    wire = response_bytes(1)
    cut = wire.index(TOPIC_ID.bytes) + len(TOPIC_ID.bytes) + len(cstr("orders")) + 1 + 4 + 2
    with pytest.raises(ProtocolDecodeError) as caught:
        decode_response(wire[:cut], 1)
    assert caught.value.field == "groups[0].members[0].assignment.topic_partitions[0].partitions"


@pytest.mark.parametrize("version", [-1, 2])
def test_unknown_version_is_refused_as_a_caller_error(version: int) -> None:
    with pytest.raises(ValueError, match=r"not one of 0\.\.1"):
        decode_response(response_bytes(1), version)


# --- generated messages ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(MAX_CONSUMER_GROUP_DESCRIBE_VERSION + 1))
@given(data=st.data())
def test_generated_responses_round_trip(version: int, data: st.DataObject) -> None:
    response = data.draw(responses(version))
    wire = encode_response(response)
    assert decode_response(wire, version) == response
    assert encode_response(decode_response(wire, version)) == wire


@given(group_ids=st.lists(names, max_size=5), include=st.booleans(), tagged=tags)
def test_generated_requests_round_trip(
    group_ids: list[str], include: bool, tagged: tuple[tuple[int, bytes], ...]
) -> None:
    request = ConsumerGroupDescribeRequest(
        group_ids=tuple(group_ids), include_authorized_operations=include, unknown_tagged_fields=tagged
    )
    assert decode_request(encode_request(request), request.version) == request


# --- fuzzing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("decode", [decode_response, decode_request])
@given(data=st.binary(max_size=512), version=st.integers(0, 1))
def test_arbitrary_bytes_decode_or_raise_protocol_decode_error(
    decode: Callable[[bytes, int], object], data: bytes, version: int
) -> None:
    try:
        decode(data, version)
    except ProtocolDecodeError:
        return


@given(version=st.integers(0, 1), position=st.integers(min_value=0), value=st.integers(0, 255))
def test_single_byte_corruption_of_a_real_response_decodes_or_raises(
    version: int, position: int, value: int
) -> None:
    """Random bytes rarely pass the first count; corrupting a real response reaches the nested fields."""
    wire = response_bytes(version)
    index = position % len(wire)
    corrupted = wire[:index] + bytes([value]) + wire[index + 1 :]
    try:
        result = decode_response(corrupted, version)
    except ProtocolDecodeError:
        return
    assert isinstance(result, ConsumerGroupDescribeResponse)


# --- models ---------------------------------------------------------------------------------------


def test_member_type_outside_int8_is_refused() -> None:
    with pytest.raises(ValidationError):
        DescribedMember(member_id="m", member_epoch=0, client_id="c", client_host="h", member_type=128)


def test_request_defaults_to_the_newest_version_without_authorized_operations() -> None:
    request = ConsumerGroupDescribeRequest(group_ids=("g",))
    assert (request.version, request.include_authorized_operations) == (1, False)

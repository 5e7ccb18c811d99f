"""Wire codecs for Kafka's ConsumerProtocolSubscription / ConsumerProtocolAssignment payloads.

Byte vectors below are built by hand from apache/kafka's message JSON specs, not produced by the
encoder under test, so they pin the format rather than merely the encoder's self-consistency.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from kafka_coop.protocol import (
    MAX_ASSIGNMENT_VERSION,
    MAX_SUBSCRIPTION_VERSION,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    ProtocolDecodeError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

NULL_BYTES = b"\xff\xff\xff\xff"
NULL_STRING = b"\xff\xff"


def i16(value: int) -> bytes:
    return struct.pack(">h", value)


def i32(value: int) -> bytes:
    return struct.pack(">i", value)


def wire_str(value: str) -> bytes:
    raw = value.encode()
    return i16(len(raw)) + raw


def wire_bytes(value: bytes) -> bytes:
    return i32(len(value)) + value


def wire_topic_partitions(groups: list[tuple[str, list[int]]]) -> bytes:
    out = i32(len(groups))
    for topic, partitions in groups:
        out += wire_str(topic) + i32(len(partitions)) + b"".join(i32(p) for p in partitions)
    return out


# --- hand-built vectors -------------------------------------------------------------------------

V0_SUB_BYTES = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\xff\xff\xff\xff"
V0_SUB = ConsumerProtocolSubscription(version=0, topics=("t",))

V1_SUB_BYTES = (
    i16(1)
    + i32(2)
    + wire_str("a")
    + wire_str("b")
    + wire_bytes(b"\x01\x02")
    + wire_topic_partitions([("a", [0, 1])])
)
V1_SUB = ConsumerProtocolSubscription(
    version=1, topics=("a", "b"), user_data=b"\x01\x02", owned_partitions=(("a", 0), ("a", 1))
)

V2_SUB_BYTES = i16(2) + i32(1) + wire_str("a") + NULL_BYTES + wire_topic_partitions([]) + i32(7)
V2_SUB = ConsumerProtocolSubscription(version=2, topics=("a",), generation_id=7)

V3_SUB_BYTES = (
    i16(3)
    + i32(2)
    + wire_str("orders")
    + wire_str("payments")
    + wire_bytes(b"ud")
    + wire_topic_partitions([("orders", [0, 3]), ("payments", [1])])
    + i32(42)
    + wire_str("eu-west-1a")
)
V3_SUB = ConsumerProtocolSubscription(
    version=3,
    topics=("orders", "payments"),
    user_data=b"ud",
    owned_partitions=(("orders", 0), ("orders", 3), ("payments", 1)),
    generation_id=42,
    rack_id="eu-west-1a",
)

ASSIGNMENT_BODY = wire_topic_partitions([("t", [0, 2]), ("u", [5])]) + wire_bytes(b"")
ASSIGNMENT_PARTITIONS = (("t", 0), ("t", 2), ("u", 5))


# --- hypothesis strategies ----------------------------------------------------------------------

int32s = st.integers(min_value=-(2**31), max_value=2**31 - 1)
names = st.text(max_size=12)
user_datas = st.none() | st.binary(max_size=32)
# Already grouped by topic (unique topics, contiguous partitions): the only shape that survives the
# wire's per-topic grouping unchanged.
grouped_partitions = st.dictionaries(names, st.lists(int32s, max_size=4), max_size=4).map(
    lambda groups: tuple((topic, p) for topic, parts in groups.items() for p in parts)
)


@st.composite
def subscriptions(draw: st.DrawFn, version: int) -> ConsumerProtocolSubscription:
    return ConsumerProtocolSubscription(
        version=version,
        topics=tuple(draw(st.lists(names, max_size=5))),
        user_data=draw(user_datas),
        owned_partitions=draw(grouped_partitions) if version >= 1 else (),
        generation_id=draw(int32s) if version >= 2 else -1,
        rack_id=draw(st.none() | names) if version >= 3 else None,
    )


@st.composite
def assignments(draw: st.DrawFn, version: int) -> ConsumerProtocolAssignment:
    return ConsumerProtocolAssignment(
        version=version, partitions=draw(grouped_partitions), user_data=draw(user_datas)
    )


# --- hand-built vectors decode and encode -------------------------------------------------------


def test_v0_subscription_decodes_from_hand_built_bytes() -> None:
    assert decode_subscription(V0_SUB_BYTES) == V0_SUB


def test_v0_subscription_encodes_to_hand_built_bytes() -> None:
    assert encode_subscription(V0_SUB) == V0_SUB_BYTES


def test_v1_subscription_with_user_data_and_owned_partitions_matches_hand_built_bytes() -> None:
    assert decode_subscription(V1_SUB_BYTES) == V1_SUB
    assert encode_subscription(V1_SUB) == V1_SUB_BYTES


def test_v2_subscription_with_generation_matches_hand_built_bytes() -> None:
    assert decode_subscription(V2_SUB_BYTES) == V2_SUB
    assert encode_subscription(V2_SUB) == V2_SUB_BYTES


def test_v3_subscription_with_owned_partitions_generation_and_rack_matches_hand_built_bytes() -> None:
    assert decode_subscription(V3_SUB_BYTES) == V3_SUB
    assert encode_subscription(V3_SUB) == V3_SUB_BYTES


def test_v3_subscription_with_null_rack_encodes_null_string() -> None:
    sub = V3_SUB.model_copy(update={"rack_id": None})
    assert encode_subscription(sub) == V3_SUB_BYTES[: -len(wire_str("eu-west-1a"))] + NULL_STRING


@pytest.mark.parametrize("version", range(MAX_ASSIGNMENT_VERSION + 1))
def test_assignment_matches_hand_built_bytes_at_each_version(version: int) -> None:
    wire = i16(version) + ASSIGNMENT_BODY
    model = ConsumerProtocolAssignment(version=version, partitions=ASSIGNMENT_PARTITIONS, user_data=b"")
    assert decode_assignment(wire) == model
    assert encode_assignment(model) == wire


def test_assignment_with_null_user_data_matches_hand_built_bytes() -> None:
    wire = i16(0) + wire_topic_partitions([]) + NULL_BYTES
    assert decode_assignment(wire) == ConsumerProtocolAssignment(version=0, partitions=())
    assert encode_assignment(ConsumerProtocolAssignment(version=0, partitions=())) == wire


# --- round trips ----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(MAX_SUBSCRIPTION_VERSION + 1))
def test_subscription_round_trips_at_each_version(version: int) -> None:
    sub = ConsumerProtocolSubscription(
        version=version,
        topics=("a", "b"),
        user_data=b"\x00\xff",
        owned_partitions=(("a", 1), ("a", 2), ("b", 0)) if version >= 1 else (),
        generation_id=9 if version >= 2 else -1,
        rack_id="r1" if version >= 3 else None,
    )
    assert decode_subscription(encode_subscription(sub)) == sub


@pytest.mark.parametrize("version", range(MAX_ASSIGNMENT_VERSION + 1))
def test_assignment_round_trips_at_each_version(version: int) -> None:
    assignment = ConsumerProtocolAssignment(
        version=version, partitions=(("a", 1), ("b", 0), ("b", 4)), user_data=b"\x01"
    )
    assert decode_assignment(encode_assignment(assignment)) == assignment


@pytest.mark.parametrize("version", range(MAX_SUBSCRIPTION_VERSION + 1))
@given(data=st.data())
def test_generated_subscriptions_round_trip(version: int, data: st.DataObject) -> None:
    sub = data.draw(subscriptions(version))
    wire = encode_subscription(sub)
    assert decode_subscription(wire) == sub
    assert encode_subscription(decode_subscription(wire)) == wire


@pytest.mark.parametrize("version", range(MAX_ASSIGNMENT_VERSION + 1))
@given(data=st.data())
def test_generated_assignments_round_trip(version: int, data: st.DataObject) -> None:
    assignment = data.draw(assignments(version))
    wire = encode_assignment(assignment)
    assert decode_assignment(wire) == assignment
    assert encode_assignment(decode_assignment(wire)) == wire


def test_non_ascii_topic_round_trips_as_utf8() -> None:
    sub = ConsumerProtocolSubscription(version=0, topics=("tópico-✓",))
    wire = encode_subscription(sub)
    assert wire_str("tópico-✓") in wire
    assert decode_subscription(wire) == sub


# --- encoding rules -------------------------------------------------------------------------------


def test_encode_subscription_groups_owned_partitions_by_topic_in_first_appearance_order() -> None:
    sub = ConsumerProtocolSubscription(
        version=1, topics=("a", "b"), owned_partitions=(("b", 1), ("a", 0), ("b", 2))
    )
    wire = encode_subscription(sub)
    assert wire.endswith(wire_topic_partitions([("b", [1, 2]), ("a", [0])]))
    assert decode_subscription(wire).owned_partitions == (("b", 1), ("b", 2), ("a", 0))


def test_encode_assignment_groups_partitions_by_topic_in_first_appearance_order() -> None:
    assignment = ConsumerProtocolAssignment(version=0, partitions=(("z", 3), ("y", 1), ("z", 0)))
    wire = encode_assignment(assignment)
    assert wire == i16(0) + wire_topic_partitions([("z", [3, 0]), ("y", [1])]) + NULL_BYTES


def test_encode_subscription_writes_only_fields_of_its_version() -> None:
    sub = V3_SUB.model_copy(update={"version": 0})
    assert encode_subscription(sub) == i16(0) + i32(2) + wire_str("orders") + wire_str("payments") + (
        wire_bytes(b"ud")
    )


@pytest.mark.parametrize("version", [MAX_SUBSCRIPTION_VERSION + 1, 100])
def test_encode_subscription_rejects_unknown_version(version: int) -> None:
    with pytest.raises(ValueError, match="version"):
        encode_subscription(ConsumerProtocolSubscription(version=version, topics=()))


def test_encode_assignment_rejects_unknown_version() -> None:
    with pytest.raises(ValueError, match="version"):
        encode_assignment(ConsumerProtocolAssignment(version=MAX_ASSIGNMENT_VERSION + 1, partitions=()))


# --- forward compatibility ------------------------------------------------------------------------


def test_subscription_version_4_decodes_v3_fields_and_ignores_trailing_bytes() -> None:
    wire = i16(4) + V3_SUB_BYTES[2:] + b"future-field\x00\x01"
    assert decode_subscription(wire) == V3_SUB.model_copy(update={"version": 4})


def test_assignment_version_4_decodes_known_fields_and_ignores_trailing_bytes() -> None:
    wire = i16(4) + ASSIGNMENT_BODY + b"\x00\x00\x00\x07future"
    decoded = decode_assignment(wire)
    assert decoded.version == 4
    assert decoded.partitions == ASSIGNMENT_PARTITIONS
    assert decoded.user_data == b""


def test_subscription_with_trailing_bytes_after_known_version_decodes() -> None:
    assert decode_subscription(V1_SUB_BYTES + b"\xde\xad") == V1_SUB


def test_assignment_with_trailing_bytes_after_known_version_decodes() -> None:
    assert decode_assignment(i16(0) + ASSIGNMENT_BODY + b"\x01").partitions == ASSIGNMENT_PARTITIONS


def test_max_int16_version_is_accepted_as_forward_compatible() -> None:
    assert decode_subscription(i16(0x7FFF) + V3_SUB_BYTES[2:]).version == 0x7FFF


# --- malformed input ------------------------------------------------------------------------------


@pytest.mark.parametrize("decode", [decode_subscription, decode_assignment])
def test_negative_version_raises(decode: Callable[[bytes], object]) -> None:
    with pytest.raises(ProtocolDecodeError, match="version"):
        decode(i16(-1) + ASSIGNMENT_BODY)


@pytest.mark.parametrize("wire", [V0_SUB_BYTES, V1_SUB_BYTES, V2_SUB_BYTES, V3_SUB_BYTES])
def test_truncated_subscription_at_every_prefix_length_raises(wire: bytes) -> None:
    for length in range(len(wire)):
        with pytest.raises(ProtocolDecodeError):
            decode_subscription(wire[:length])


@pytest.mark.parametrize("version", range(MAX_ASSIGNMENT_VERSION + 1))
def test_truncated_assignment_at_every_prefix_length_raises(version: int) -> None:
    wire = i16(version) + ASSIGNMENT_BODY
    for length in range(len(wire)):
        with pytest.raises(ProtocolDecodeError):
            decode_assignment(wire[:length])


@pytest.mark.parametrize(
    "wire",
    [
        i16(0) + i32(2**31 - 1) + wire_str("t"),
        i16(1) + i32(0) + NULL_BYTES + i32(2**31 - 1),
        i16(1) + i32(0) + NULL_BYTES + i32(1) + wire_str("t") + i32(2**31 - 1) + i32(0),
    ],
    ids=["topics", "owned_partitions", "owned_partitions.partitions"],
)
def test_huge_declared_array_count_in_short_buffer_raises_quickly(wire: bytes) -> None:
    started = time.perf_counter()
    with pytest.raises(ProtocolDecodeError, match="declares 2147483647 elements"):
        decode_subscription(wire)
    assert time.perf_counter() - started < 1.0


def test_huge_declared_bytes_length_in_short_buffer_raises() -> None:
    with pytest.raises(ProtocolDecodeError, match="user_data"):
        decode_subscription(i16(0) + i32(0) + i32(2**31 - 1) + b"xx")


def test_null_topics_array_raises() -> None:
    with pytest.raises(ProtocolDecodeError, match=r"topics.*null"):
        decode_subscription(i16(0) + i32(-1) + NULL_BYTES)


def test_null_topic_name_raises() -> None:
    with pytest.raises(ProtocolDecodeError, match=r"topics\[0\].*null"):
        decode_subscription(i16(0) + i32(1) + NULL_STRING + NULL_BYTES)


@pytest.mark.parametrize(
    "wire",
    [
        i16(0) + i32(0) + i32(-2),
        i16(3) + i32(0) + NULL_BYTES + i32(0) + i32(-1) + i16(-2),
        i16(0) + i32(-5) + NULL_BYTES,
    ],
    ids=["user_data", "rack_id", "topics"],
)
def test_negative_length_other_than_minus_one_raises(wire: bytes) -> None:
    with pytest.raises(ProtocolDecodeError, match="negative length"):
        decode_subscription(wire)


def test_invalid_utf8_topic_raises() -> None:
    with pytest.raises(ProtocolDecodeError, match="UTF-8"):
        decode_subscription(i16(0) + i32(1) + i16(2) + b"\xc3\x28" + NULL_BYTES)


def test_decode_error_names_field_path_and_offset() -> None:
    wire = i16(1) + i32(0) + NULL_BYTES + i32(1) + wire_str("t") + i32(2) + i32(0)
    with pytest.raises(ProtocolDecodeError) as caught:
        decode_subscription(wire)
    assert caught.value.field == "owned_partitions[0].partitions"
    assert caught.value.offset == 2 + 4 + 4 + 4 + 3
    assert "owned_partitions[0].partitions" in str(caught.value)
    assert f"offset {caught.value.offset}" in str(caught.value)


def test_protocol_decode_error_is_a_value_error() -> None:
    assert issubclass(ProtocolDecodeError, ValueError)


@given(st.binary(max_size=512))
def test_arbitrary_bytes_decode_to_subscription_or_protocol_decode_error(data: bytes) -> None:
    try:
        result = decode_subscription(data)
    except ProtocolDecodeError:
        return
    assert isinstance(result, ConsumerProtocolSubscription)


@given(st.binary(max_size=512))
def test_arbitrary_bytes_decode_to_assignment_or_protocol_decode_error(data: bytes) -> None:
    try:
        result = decode_assignment(data)
    except ProtocolDecodeError:
        return
    assert isinstance(result, ConsumerProtocolAssignment)


@given(
    st.sampled_from([V0_SUB_BYTES, V1_SUB_BYTES, V2_SUB_BYTES, V3_SUB_BYTES]),
    st.integers(min_value=0),
    st.integers(min_value=0, max_value=255),
)
def test_single_byte_corruption_of_valid_subscription_decodes_or_raises_protocol_decode_error(
    wire: bytes, position: int, value: int
) -> None:
    """Random bytes rarely get past the first count; corrupting real payloads reaches deeper fields."""
    index = position % len(wire)
    corrupted = wire[:index] + bytes([value]) + wire[index + 1 :]
    try:
        result = decode_subscription(corrupted)
    except ProtocolDecodeError:
        return
    assert isinstance(result, ConsumerProtocolSubscription)


# --- models -------------------------------------------------------------------------------------


def test_subscription_defaults_match_kafka_field_defaults() -> None:
    sub = ConsumerProtocolSubscription(version=0, topics=())
    assert (sub.user_data, sub.owned_partitions, sub.generation_id, sub.rack_id) == (None, (), -1, None)


def test_models_are_frozen() -> None:
    with pytest.raises(ValidationError):
        V3_SUB.version = 2  # type: ignore[misc]


@pytest.mark.parametrize("partition", [2**31, -(2**31) - 1])
def test_model_rejects_partition_outside_int32(partition: int) -> None:
    with pytest.raises(ValidationError):
        ConsumerProtocolAssignment(version=0, partitions=(("t", partition),))


def test_model_rejects_topic_too_long_for_int16_length() -> None:
    with pytest.raises(ValidationError, match="int16 length limit"):
        ConsumerProtocolSubscription(version=0, topics=("x" * 0x8000,))


def test_model_rejects_string_not_encodable_as_utf8() -> None:
    with pytest.raises(ValidationError, match="UTF-8"):
        ConsumerProtocolSubscription(version=3, topics=(), rack_id="\ud800")


@pytest.mark.parametrize("version", [-1, 0x8000])
def test_model_rejects_version_outside_non_negative_int16(version: int) -> None:
    with pytest.raises(ValidationError):
        ConsumerProtocolAssignment(version=version, partitions=())


def test_protocol_package_imports_no_client_cli_or_terminal_libraries() -> None:
    code = (
        "import sys, kafka_coop.protocol; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'confluent_kafka', 'click', 'rich'}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"

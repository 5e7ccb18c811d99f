"""The coordinator shell's own decisions and its fit to kafka-python's connection, without a broker."""

from __future__ import annotations

import io
import struct

import pytest

from kafka_coop.coordinator import CoordinatorAnswer, _EncodedRequest, _node_id, describe_version
from kafka_coop.errors import InvalidInput
from kafka_coop.protocol import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedGroup,
    ProtocolDecodeError,
    encode_request,
    encode_response,
)

# kafka-python loads its schema files with importlib.resources' legacy read_text/open_text
pytestmark = pytest.mark.filterwarnings(
    "ignore:read_text is deprecated:DeprecationWarning", "ignore:open_text is deprecated:DeprecationWarning"
)


@pytest.mark.parametrize(
    ("offered", "version"),
    [((0, 1), 1), ((0, 0), 0), ((0, 5), 1), ((2, 3), None), (None, None)],
    ids=["v1", "v0-only", "newer-broker", "only-newer-versions", "not-offered"],
)
def test_the_newest_version_both_sides_read_is_chosen(
    offered: tuple[int, int] | None, version: int | None
) -> None:
    assert describe_version(offered) == version


def test_the_request_goes_out_framed_behind_a_v2_header() -> None:
    body = encode_request(ConsumerGroupDescribeRequest(group_ids=("g",)))
    request = _EncodedRequest(1, body)
    request.with_header(correlation_id=7, client_id="kafka-coop-admin")
    wire = request.encode(framed=True, header=True)
    (size,) = struct.unpack(">i", wire[:4])
    assert size == len(wire) - 4
    client_id = b"kafka-coop-admin"
    header = struct.pack(">hhih", 69, 1, 7, len(client_id)) + client_id + b"\x00"  # + empty tagged fields
    assert wire[4:] == header + body


def test_the_response_header_is_read_and_the_body_decoded_by_our_codec() -> None:
    response = ConsumerGroupDescribeResponse(version=1, groups=(DescribedGroup(group_id="g"),))
    request = _EncodedRequest(1, b"")
    request.with_header(correlation_id=9)
    assert request.header is not None
    pending = request.header.get_response_class()
    buffer = io.BytesIO(struct.pack(">i", 9) + b"\x00" + encode_response(response))
    assert pending.parse_header(buffer).correlation_id == 9
    assert pending.decode(buffer) == response


def test_an_undecodable_body_is_kept_for_the_sentence_and_raised_for_kafka_python() -> None:
    request = _EncodedRequest(1, b"")
    request.with_header(correlation_id=1)
    assert request.header is not None
    with pytest.raises(ProtocolDecodeError):
        request.header.decode(io.BytesIO(b"\x00\x00"))
    assert request.header.decode_error is not None and "throttle_time_ms" in request.header.decode_error


def test_answers_say_which_request_they_came_from() -> None:
    described = DescribedGroup(group_id="g")
    assert CoordinatorAnswer(group="g", status="described", version=1, described=described).api == (
        "ConsumerGroupDescribe v1"
    )
    assert CoordinatorAnswer(group="g", status="described", version=0, described=described).api == (
        "ConsumerGroupDescribe v0"
    )
    assert CoordinatorAnswer(group="g", status="not-a-consumer-group", version=1).api is None


@pytest.mark.parametrize(("node", "broker"), [(3, 3), ("coordinator-2", 2), ("bootstrap-0", 0), ("x", None)])
def test_the_coordinator_is_named_by_its_broker_id(node: object, broker: int | None) -> None:
    assert _node_id(node) == broker


def test_a_setting_kafka_python_cannot_take_is_refused_before_connecting() -> None:
    from kafka_coop.coordinator import CoordinatorClient

    with pytest.raises(InvalidInput) as err:
        CoordinatorClient("127.0.0.1:1", {"sasl.oauthbearer.client.secret": "hush"})
    assert "ConsumerGroupDescribe" in err.value.message and "hush" not in str(err.value)


def test_a_broker_newer_than_kafka_python_knows_is_named_newer_not_its_newest() -> None:
    """kafka-python stops at the newest table it has (4.3 for a 4.4 broker): serving one API version
    more than that table says the broker is newer, so plans read "4.4+" and not "4.3"."""
    from kafka.protocol.broker_version_data import BROKER_API_VERSIONS

    from kafka_coop.coordinator import _past_known

    newest = max(BROKER_API_VERSIONS)
    known = dict(BROKER_API_VERSIONS[newest])
    assert _past_known(newest[:2], known) == f"{newest[0]}.{newest[1]}"
    key, (low, high) = next(iter(known.items()))
    assert _past_known(newest[:2], known | {key: (low, high + 1)}) == f"{newest[0]}.{newest[1] + 1}+"
    assert _past_known((4, 0), known | {key: (low, high + 1)}) == "4.0"

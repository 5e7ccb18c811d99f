"""Pure codecs for Kafka wire formats no maintained Python client exposes: the consumer protocol payloads
(the bytes inside JoinGroup and SyncGroup) and ConsumerGroupDescribe (KIP-848's describe, v0-v1).

Pure on purpose: no broker client, CLI or terminal imports, so the codecs can be unit- and fuzz-tested
in isolation and reused by any layer that sees raw group metadata (e.g. DescribeGroups output).
"""

from kafka_coop.protocol._consumer_group_describe import API_KEY as CONSUMER_GROUP_DESCRIBE_KEY
from kafka_coop.protocol._consumer_group_describe import MAX_VERSION as MAX_CONSUMER_GROUP_DESCRIBE_VERSION
from kafka_coop.protocol._consumer_group_describe import (
    AssignedTopic,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedGroup,
    DescribedMember,
    MemberAssignment,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from kafka_coop.protocol._consumer_protocol import (
    MAX_ASSIGNMENT_VERSION,
    MAX_SUBSCRIPTION_VERSION,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kafka_coop.protocol._errors import ProtocolDecodeError

__all__ = [
    "CONSUMER_GROUP_DESCRIBE_KEY",
    "MAX_ASSIGNMENT_VERSION",
    "MAX_CONSUMER_GROUP_DESCRIBE_VERSION",
    "MAX_SUBSCRIPTION_VERSION",
    "AssignedTopic",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "ConsumerProtocolAssignment",
    "ConsumerProtocolSubscription",
    "DescribedGroup",
    "DescribedMember",
    "MemberAssignment",
    "ProtocolDecodeError",
    "decode_assignment",
    "decode_request",
    "decode_response",
    "decode_subscription",
    "encode_assignment",
    "encode_request",
    "encode_response",
    "encode_subscription",
]

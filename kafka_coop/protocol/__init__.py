"""Pure codecs for Kafka's consumer protocol payloads (the bytes inside JoinGroup and SyncGroup).

Pure on purpose: no broker client, CLI or terminal imports, so the codecs can be unit- and fuzz-tested
in isolation and reused by any layer that sees raw group metadata (e.g. DescribeGroups output).
"""

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
    "MAX_ASSIGNMENT_VERSION",
    "MAX_SUBSCRIPTION_VERSION",
    "ConsumerProtocolAssignment",
    "ConsumerProtocolSubscription",
    "ProtocolDecodeError",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]

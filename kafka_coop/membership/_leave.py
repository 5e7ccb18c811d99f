"""LeaveGroup on behalf of static members (shell; kafka-python's admin client).

confluent-kafka's AdminClient has no call that sends LeaveGroup for other members (librdkafka sends it
only for its own consumer). kafka-python's `KafkaAdminClient.remove_group_members` does: against
brokers that support LeaveGroup v3+ (Kafka 2.3+) it sends one batched request whose members carry
`group_instance_id` (kafka/admin/_groups.py, `_remove_group_members_batch_request`, `min_version=3`),
the same request Java's `Admin.removeMembersFromConsumerGroup` sends. So we use it rather than encode
the request ourselves.

Connection settings arrive as librdkafka keys and become kafka-python's arguments in `_kafka_python`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from kafka_coop._kafka_python import admin_client, kafka_python_conf
from kafka_coop.errors import ClusterUnavailable, InvalidInput

REMOVE_REASON: Final = "kafka-coop remove-members: the member was stopped"
DEFAULT_TIMEOUT_S: Final = 10.0


class MemberOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    instance_id: str
    error: str | None  # None: removed; else the broker's error name (UNKNOWN_MEMBER_ID: already gone)


class LeaveGroupClient:
    """A kafka-python admin connection, opened before the members to remove are chosen, so its import
    and bootstrap overlap the describe and manifest reads (remove-members runs between a stop and the
    next gate, when every partition waits)."""

    def __init__(
        self, bootstrap: str, conf: Mapping[str, str] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
    ):
        settings = kafka_python_conf(bootstrap, conf or {})  # refuses unknown keys before connecting
        self.bootstrap = bootstrap
        self._client = admin_client(bootstrap, settings, timeout_s, "remove-members")

    def remove(self, group: str, instance_ids: Sequence[str]) -> list[MemberOutcome]:
        """Send one LeaveGroup (v3+) naming `instance_ids`; the per-member result, as the broker gave it."""
        if not instance_ids:
            return []
        from kafka.admin import MemberToRemove
        from kafka.errors import GroupAuthorizationFailedError, KafkaError, NoError, UnsupportedVersionError

        try:
            members = [MemberToRemove(group_instance_id=i, reason=REMOVE_REASON) for i in instance_ids]
            result = self._client.remove_group_members(group, members)
        except GroupAuthorizationFailedError:
            raise ClusterUnavailable(
                f"Not authorized to remove members from group {group!r}.",
                hint="LeaveGroup needs READ on the group for the principal in --command-config.",
            ) from None
        except UnsupportedVersionError:
            raise InvalidInput(
                "The cluster does not support removing static members (LeaveGroup v3, Kafka 2.3+)."
            ) from None
        except KafkaError as exc:
            raise ClusterUnavailable(
                f"LeaveGroup for group {group!r} failed: {type(exc).__name__}.",
                hint="Check that the group's coordinator is up (`kafka-coop describe GROUP`).",
            ) from None
        return [
            MemberOutcome(
                instance_id=i,
                error=None if result.get(i, NoError) is NoError else _error_name(result.get(i)),
            )
            for i in instance_ids
        ]

    def close(self) -> None:
        self._client.close()


def _error_name(error: Any) -> str:
    """kafka-python error class -> the protocol's name (UnknownMemberIdError -> UNKNOWN_MEMBER_ID)."""
    message = getattr(error, "message", None)
    return str(message) if message else getattr(error, "__name__", str(error))

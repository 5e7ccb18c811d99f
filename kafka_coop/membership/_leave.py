"""LeaveGroup on behalf of static members (shell; the one module that imports kafka-python).

confluent-kafka's AdminClient has no call that sends LeaveGroup for other members (librdkafka sends it
only for its own consumer). kafka-python's `KafkaAdminClient.remove_group_members` does: against
brokers that support LeaveGroup v3+ (Kafka 2.3+) it sends one batched request whose members carry
`group_instance_id` (kafka/admin/_groups.py, `_remove_group_members_batch_request`, `min_version=3`),
the same request Java's `Admin.removeMembersFromConsumerGroup` sends. So we use it rather than encode
the request ourselves.

Connection settings arrive as librdkafka keys (what `--command-config` holds for every other command)
and are translated to kafka-python's names here; a key kafka-python has no equivalent for is refused
with one sentence rather than silently dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from kafka_coop._extras import require
from kafka_coop.errors import ClusterUnavailable, InvalidInput

REMOVE_REASON: Final = "kafka-coop remove-members: the member was stopped"
DEFAULT_TIMEOUT_S: Final = 10.0

# librdkafka key -> kafka-python KafkaAdminClient argument
_KEYS: Final = {
    "client.id": "client_id",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.crl.location": "ssl_crlfile",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
}
# settings that tune librdkafka only and mean nothing for one admin request
_IGNORED_PREFIXES: Final = (
    "reconnect.",
    "socket.",
    "debug",
    "log",
    "statistics.",
    "enable.",
    "api.version",
    "broker.",
    "metadata.",
    "topic.metadata",
    "client.rack",
    "allow.auto.create.topics",
    "request.timeout.ms",
    "bootstrap.servers",
)


class MemberOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    instance_id: str
    error: str | None  # None: removed; else the broker's error name (UNKNOWN_MEMBER_ID: already gone)


def kafka_python_conf(bootstrap: str, conf: Mapping[str, str]) -> dict[str, Any]:
    """kafka-python's arguments for librdkafka-style connection settings (pure; secrets stay inside)."""
    out: dict[str, Any] = {"bootstrap_servers": bootstrap.split(","), "client_id": "kafka-coop-admin"}
    for key, value in conf.items():
        if key in _KEYS:
            out[_KEYS[key]] = (
                value.upper() if key in ("security.protocol", "sasl.mechanism", "sasl.mechanisms") else value
            )
        elif key == "ssl.endpoint.identification.algorithm":
            out["ssl_check_hostname"] = value.lower() == "https"
        elif not key.startswith(_IGNORED_PREFIXES):
            raise InvalidInput(
                f"remove-members cannot use the setting {key!r} (its admin client, kafka-python, takes "
                "security.protocol, sasl.mechanism, sasl.username/password and ssl.*.location keys).",
                hint="Give remove-members a --command-config with only those keys.",
            )
    return out


def _quiet() -> None:
    """kafka-python logs connection retries at WARNING: our one-sentence errors say what matters."""
    logger = logging.getLogger("kafka")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    logger.propagate = False


class LeaveGroupClient:
    """A kafka-python admin connection, opened before the members to remove are chosen, so its import
    and bootstrap overlap the describe and manifest reads (remove-members runs between a stop and the
    next gate, when every partition waits)."""

    def __init__(
        self, bootstrap: str, conf: Mapping[str, str] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
    ):
        settings = kafka_python_conf(bootstrap, conf or {})  # refuses unknown keys before connecting
        require("kafka", "remove-members")
        _quiet()
        from kafka.admin import KafkaAdminClient
        from kafka.errors import KafkaError

        timeout_ms = int(timeout_s * 1000)
        self.bootstrap = bootstrap
        try:
            self._client = KafkaAdminClient(
                **settings, request_timeout_ms=timeout_ms, bootstrap_timeout_ms=timeout_ms
            )
        except KafkaError as exc:  # KafkaTimeoutError: no broker answered; others: SASL/SSL handshake
            raise ClusterUnavailable(
                f"Could not reach the Kafka cluster at {bootstrap}: {exc}.",
                hint="Check --bootstrap-server and --command-config.",
            ) from None

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

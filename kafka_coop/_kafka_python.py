"""kafka-python connections from the settings every command takes (shell; loads kafka-python on use).

Two commands need requests confluent-kafka cannot send: remove-members (LeaveGroup for other members)
and the coordinator's view of a group (ConsumerGroupDescribe v1, ListGroups with group types).
kafka-python's admin client connects, authenticates (SASL PLAIN/SCRAM/GSSAPI/OAUTHBEARER over
PLAINTEXT or SSL) and negotiates versions for both. Connection settings arrive as librdkafka keys (what
`--command-config` holds for every other command) and are translated here; a key kafka-python has no
equivalent for is refused with one sentence rather than silently dropped.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from typing import Any, Final

from kafka_coop._extras import require
from kafka_coop.errors import ClusterUnavailable, InvalidInput

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


def kafka_python_conf(
    bootstrap: str, conf: Mapping[str, str], *, what: str = "remove-members"
) -> dict[str, Any]:
    """kafka-python's arguments for librdkafka-style connection settings (pure; secrets stay inside).

    `what` names the command (or the read) in the one sentence that refuses a setting.
    """
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
                f"{what} cannot use the setting {key!r} (its admin client, kafka-python, takes "
                "security.protocol, sasl.mechanism, sasl.username/password and ssl.*.location keys).",
                hint=f"Give {what} a --command-config with only those keys.",
            )
    return out


def quiet() -> None:
    """kafka-python logs connection retries at WARNING: our one-sentence errors say what matters."""
    logger = logging.getLogger("kafka")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    logger.propagate = False


def admin_client(bootstrap: str, settings: Mapping[str, Any], timeout_s: float, what: str) -> Any:
    """A connected kafka-python `KafkaAdminClient`; ClusterUnavailable (exit 3) when none answers or
    the login is refused. `settings` come from `kafka_python_conf`."""
    require("kafka", what)
    quiet()
    with warnings.catch_warnings():  # kafka-python 3.0 reads its schema files with a deprecated API
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.admin import KafkaAdminClient
        from kafka.errors import KafkaError

    timeout_ms = int(timeout_s * 1000)
    try:
        return KafkaAdminClient(**settings, request_timeout_ms=timeout_ms, bootstrap_timeout_ms=timeout_ms)
    except KafkaError as exc:  # KafkaTimeoutError: no broker answered; others: SASL/SSL handshake
        raise ClusterUnavailable(
            f"Could not reach the Kafka cluster at {bootstrap}: {exc}.",
            hint="Check --bootstrap-server and --command-config.",
        ) from None

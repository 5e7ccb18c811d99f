"""librdkafka connection settings (what --command-config holds) as Spark Kafka source options.

`report kafka://TOPIC` reads through librdkafka on the python engine and through the Java client on the
spark engine; one --command-config serves both. The names differ where librdkafka has its own:
SASL credentials become a JAAS line, a CA file becomes a PEM truststore (Java client 2.7+). Everything
else is passed on under `kafka.` with its own name. Pure: no Spark here.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_coop.errors import InvalidInput

_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
_HANDLED = frozenset(
    {
        "bootstrap.servers",
        "sasl.username",
        "sasl.password",
        "sasl.mechanisms",
        "sasl.mechanism",
        "ssl.ca.location",
    }
)


def _jaas_quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def java_client_options(conf: Mapping[str, str]) -> dict[str, str]:
    """Spark `kafka.*` options for the same connection; InvalidInput for a login the Java client cannot
    be given from these settings (one sentence, exit 2)."""
    out = {f"kafka.{key}": value for key, value in conf.items() if key not in _HANDLED}
    mechanism = conf.get("sasl.mechanism", conf.get("sasl.mechanisms"))
    if mechanism is not None:
        out["kafka.sasl.mechanism"] = mechanism
    if "sasl.username" in conf and "sasl.jaas.config" not in conf:
        module = _LOGIN_MODULES.get((mechanism or "GSSAPI").upper())
        if module is None:
            raise InvalidInput(
                f"The spark engine cannot log in with sasl.mechanism {mechanism!r} from sasl.username.",
                hint="Set sasl.jaas.config in --command-config, or use --engine python.",
            )
        user, password = _jaas_quoted(conf["sasl.username"]), _jaas_quoted(conf.get("sasl.password", ""))
        out["kafka.sasl.jaas.config"] = f"{module} required username={user} password={password};"
    if "ssl.ca.location" in conf:
        out["kafka.ssl.truststore.type"] = "PEM"
        out["kafka.ssl.truststore.location"] = conf["ssl.ca.location"]
    if out.get("kafka.ssl.endpoint.identification.algorithm") == "none":
        out["kafka.ssl.endpoint.identification.algorithm"] = ""  # librdkafka's "none" is Java's ""
    return out

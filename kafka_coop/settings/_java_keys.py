"""Java client properties that librdkafka does not take, each with what to write instead.

`--command-config` files are often copied from a Java client's; librdkafka refuses these keys with an
`_INVALID_ARG` that names neither the file nor the key's librdkafka equivalent. Checked where a
command reads its settings, so the sentence names both. (Which keys librdkafka 2.x refuses was read
off `AdminClient({key: ...})`; `ssl.keystore.location` and `ssl.keystore.password` it does take, for a
PKCS#12 file.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from kafka_coop.errors import SettingsError

_PEM_CA = (
    "ssl.ca.location with a PEM file of the CA certificates (export them from the truststore with "
    "`keytool -exportcert -rfc -keystore TRUSTSTORE -alias ALIAS -file ca.pem`)"
)
_DROP_IT = "nothing: librdkafka has no such setting, leave the key out"

# Java key -> what librdkafka takes instead.
JAVA_ONLY_KEYS: Final[Mapping[str, str]] = {
    "ssl.truststore.location": _PEM_CA,
    "ssl.truststore.password": f"nothing (a PEM CA file has no password): {_PEM_CA}",
    "ssl.truststore.type": f"nothing (librdkafka reads PEM): {_PEM_CA}",
    "ssl.truststore.certificates": "ssl.ca.pem (the CA certificates as PEM text)",
    "ssl.keystore.type": "ssl.keystore.location + ssl.keystore.password for a PKCS#12 file, or "
    "ssl.certificate.location + ssl.key.location for PEM files (convert a JKS keystore to PKCS#12 with "
    "`keytool -importkeystore -deststoretype PKCS12`)",
    "ssl.keystore.certificate.chain": "ssl.certificate.pem",
    "ssl.keystore.key": "ssl.key.pem",
    "sasl.jaas.config": "sasl.username and sasl.password (with sasl.mechanism, e.g. SCRAM-SHA-512) "
    "instead of a JAAS login module",
    "sasl.login.callback.handler.class": "sasl.oauthbearer.method=oidc with sasl.oauthbearer.client.id, "
    "sasl.oauthbearer.client.secret and sasl.oauthbearer.token.endpoint.url",
    "sasl.client.callback.handler.class": _DROP_IT,
    "sasl.login.class": _DROP_IT,
    "ssl.protocol": "nothing: librdkafka negotiates the TLS version itself, leave the key out",
    "ssl.enabled.protocols": "nothing: librdkafka negotiates the TLS version itself, leave the key out",
    "ssl.provider": _DROP_IT,
    "security.providers": _DROP_IT,
    "ssl.trustmanager.algorithm": _DROP_IT,
    "ssl.keymanager.algorithm": _DROP_IT,
    "ssl.secure.random.implementation": _DROP_IT,
    "ssl.engine.factory.class": _DROP_IT,
    "default.api.timeout.ms": "nothing: give the command --timeout instead",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "send.buffer.bytes": "socket.send.buffer.bytes",
}


def refuse_java_only(conf: Mapping[str, str], *, source: str) -> None:
    """SettingsError (exit 2) for the first Java-only key of `conf`, naming `source` and the equivalent.

    Java disables hostname verification with an empty `ssl.endpoint.identification.algorithm`;
    librdkafka spells that `none` and refuses the empty value.
    """
    for key in sorted(conf):
        if key in JAVA_ONLY_KEYS:
            raise SettingsError(
                f"{source} sets {key}, a Java client property that librdkafka does not take.",
                hint=f"Write {JAVA_ONLY_KEYS[key]}.",
            )
    if conf.get("ssl.endpoint.identification.algorithm", None) == "":
        raise SettingsError(
            f"{source} sets ssl.endpoint.identification.algorithm to the empty value, which is how Java "
            "turns hostname verification off; librdkafka refuses it.",
            hint="Write ssl.endpoint.identification.algorithm=none (or leave it out to keep verification).",
        )

"""Security material of a `--security sasl_ssl` sandbox: a CA, the brokers' TLS keystore, SCRAM users.

Everything is made with the JDK's own `keytool` (the sandbox needs a JDK anyway, so no extra Python
dependency): a self-signed CA, one broker key pair signed by it with the loopback address in its
subjectAltName (clients verify the broker's hostname, as in production), a PKCS12 keystore and a PKCS12
truststore for the brokers, and the CA in PEM for librdkafka clients (`ssl.ca.location`).

Users are SCRAM-SHA-512 credentials written into the cluster metadata at format time
(`kafka-storage format --add-scram`): `admin` is a super user (brokers also talk to each other as it),
`app` is a restricted user whose ACLs the sandbox grants after start (`RESTRICTED_ACLS`). The passwords
live in `secrets.json` and in the client properties files, both mode 0600; the sandbox state file and
everything `status` prints hold none of them.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kafka_coop.errors import ClusterUnavailable, InvalidInput

SUPER_USER = "admin"
RESTRICTED_USER = "app"
USERS = (SUPER_USER, RESTRICTED_USER)
# The restricted user may use topics and groups whose names start with this (ACLs PREFIXED).
RESTRICTED_PREFIX = "app"
MECHANISM = "SCRAM-SHA-512"
BROKER_CN = "kafka-coop-broker"
BROKER_PRINCIPAL = f"User:CN={BROKER_CN}"
CERT_VALIDITY_DAYS = 3650
SECRETS_FILE = "secrets.json"
TLS_DIR = "tls"
_PASSWORD = re.compile(r"^[A-Za-z0-9_.-]{8,128}$")
_HIDDEN = "[hidden]"
_SECRET_KEY = re.compile(r"password|jaas|secret", re.IGNORECASE)


class Secrets(BaseModel):
    """What must never be printed: the keystore password and each user's password."""

    store_password: str
    users: dict[str, str]


def redact(config: Mapping[str, str]) -> dict[str, str]:
    """The config with every secret-bearing value replaced, for state files and output."""
    return {k: (_HIDDEN if _SECRET_KEY.search(k) else v) for k, v in config.items()}


def check_password(user: str, password: str) -> None:
    """SCRAM passwords pass through `kafka-storage --add-scram`'s [name=..,password=..] syntax."""
    if not _PASSWORD.match(password):
        raise InvalidInput(
            f"The password for sandbox user {user!r} must be 8-128 letters, digits, '.', '_' or '-'.",
            hint="Choose a password without spaces, quotes, commas or brackets.",
        )


def load_or_make_secrets(directory: Path, passwords: Mapping[str, str] | None) -> Secrets:
    """The sandbox's secrets: read back if it has them (a restart), else made (given ones win)."""
    path = directory / SECRETS_FILE
    with contextlib.suppress(OSError, ValueError):
        return Secrets.model_validate_json(path.read_text())
    users = {user: secrets.token_hex(16) for user in USERS}
    for user, password in (passwords or {}).items():
        if user not in USERS:
            raise InvalidInput(
                f"The sandbox has no user {user!r}; its users are {', '.join(USERS)}.",
                hint="Pass passwords only for those users.",
            )
        check_password(user, password)
        users[user] = password
    made = Secrets(store_password=secrets.token_hex(16), users=users)
    _write_private(path, made.model_dump_json(indent=2))
    return made


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    tmp.replace(path)


def _keytool() -> str:
    keytool = shutil.which("keytool")
    if keytool is None:
        raise InvalidInput(
            "keytool (part of every JDK) was not found on PATH; the sandbox makes its TLS material with it.",
            hint="Install a JDK 17+ (e.g. `apt-get install openjdk-17-jdk-headless`) and retry.",
        )
    return keytool


class TlsFiles(BaseModel):
    keystore: str
    truststore: str
    ca_pem: str


def tls_files(directory: Path) -> TlsFiles:
    tls = directory / TLS_DIR
    return TlsFiles(
        keystore=str(tls / "broker.p12"), truststore=str(tls / "truststore.p12"), ca_pem=str(tls / "ca.pem")
    )


def ensure_tls(directory: Path, store_password: str) -> TlsFiles:
    """Make the CA, the broker keystore and the truststores once; later starts reuse them."""
    files = tls_files(directory)
    if all(Path(p).exists() for p in (files.keystore, files.truststore, files.ca_pem)):
        return files
    tls = directory / TLS_DIR
    shutil.rmtree(tls, ignore_errors=True)
    tls.mkdir(parents=True)
    ca_store = tls / "ca.p12"  # the CA's private key: only used here, to sign the broker certificate
    log = tls / "keytool.log"
    common = ["-storetype", "PKCS12", "-storepass", store_password, "-keypass", store_password]
    gen = ["-genkeypair", "-keyalg", "EC", "-groupname", "secp256r1", "-validity", str(CERT_VALIDITY_DAYS)]
    steps: list[list[str]] = [
        [
            *gen,
            "-alias",
            "ca",
            "-dname",
            "CN=kafka-coop-sandbox-ca",
            "-ext",
            "bc:c",
            "-keystore",
            str(ca_store),
        ],
        ["-exportcert", "-alias", "ca", "-rfc", "-file", files.ca_pem, "-keystore", str(ca_store)],
        [*gen, "-alias", "broker", "-dname", f"CN={BROKER_CN}", "-keystore", files.keystore],
        ["-certreq", "-alias", "broker", "-file", str(tls / "broker.csr"), "-keystore", files.keystore],
        [
            "-gencert",
            "-alias",
            "ca",
            "-infile",
            str(tls / "broker.csr"),
            "-outfile",
            str(tls / "broker.pem"),
            "-rfc",
            "-validity",
            str(CERT_VALIDITY_DAYS),
            "-ext",
            "SAN=ip:127.0.0.1,dns:localhost",
            "-ext",
            "EKU=serverAuth,clientAuth",
            "-keystore",
            str(ca_store),
        ],
        ["-importcert", "-noprompt", "-alias", "ca", "-file", files.ca_pem, "-keystore", files.keystore],
        [
            "-importcert",
            "-noprompt",
            "-alias",
            "broker",
            "-file",
            str(tls / "broker.pem"),
            "-keystore",
            files.keystore,
        ],
        ["-importcert", "-noprompt", "-alias", "ca", "-file", files.ca_pem, "-keystore", files.truststore],
    ]
    keytool = _keytool()
    with log.open("w") as out:
        for step in steps:
            proc = subprocess.run(
                [keytool, *step, *common, "-J-Xmx64m"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
            )
            if proc.returncode != 0:
                raise ClusterUnavailable(
                    f"Making the sandbox's TLS material failed at `keytool {step[0]}`.",
                    hint="Check the keytool log; a JDK 17+ keytool is needed.",
                    log_path=log,
                )
    return files


def _jaas(user: str, password: str) -> str:
    module = "org.apache.kafka.common.security.scram.ScramLoginModule"
    return f'{module} required username="{user}" password="{password}";'


def server_config(
    directory: Path, made: Secrets, files: TlsFiles, sasl_listeners: list[str]
) -> dict[str, str]:
    """Broker settings for SASL_SSL client listeners, an SSL controller listener and the authorizer.

    Brokers talk to each other over the client listener as the super user; controllers and brokers
    reach the controller quorum over mutual TLS, whose certificate principal is a super user too
    (KRaft controllers cannot use SCRAM: its credentials live in the metadata they serve).
    """
    config: dict[str, str] = {
        "sasl.enabled.mechanisms": MECHANISM,
        "sasl.mechanism.inter.broker.protocol": MECHANISM,
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": files.keystore,
        "ssl.keystore.password": made.store_password,
        "ssl.key.password": made.store_password,
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": files.truststore,
        "ssl.truststore.password": made.store_password,
        "listener.name.controller.ssl.client.auth": "required",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{SUPER_USER};{BROKER_PRINCIPAL}",
        "allow.everyone.if.no.acl.found": "false",
    }
    for listener in sasl_listeners:
        key = f"listener.name.{listener.lower()}.{MECHANISM.lower()}.sasl.jaas.config"
        config[key] = _jaas(SUPER_USER, made.users[SUPER_USER])
    return config


def scram_format_args(made: Secrets) -> list[str]:
    args: list[str] = []
    for user, password in made.users.items():
        args += ["--add-scram", f"{MECHANISM}=[name={user},password={password}]"]
    return args


def client_conf(made: Secrets, files: TlsFiles, user: str) -> dict[str, str]:
    """librdkafka settings for one sandbox user (what the properties files hold)."""
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": MECHANISM,
        "sasl.username": user,
        "sasl.password": made.users[user],
        "ssl.ca.location": files.ca_pem,
    }


def write_client_properties(directory: Path, made: Secrets, files: TlsFiles) -> dict[str, str]:
    """One `<user>.properties` per user, for `--command-config`; returns user -> path."""
    paths: dict[str, str] = {}
    for user in USERS:
        path = directory / f"{user}.properties"
        body = f"# kafka-coop sandbox client settings for SCRAM user {user!r} (librdkafka names)\n"
        body += "".join(f"{k}={v}\n" for k, v in client_conf(made, files, user).items())
        _write_private(path, body)
        paths[user] = str(path)
    return paths


def restricted_acl_bindings() -> list[Any]:
    """What `app` may do: its own prefixed topics and groups, reading cluster and broker configs, the
    manifest topic (so its members can publish what they are) and reading the control topic (so they
    can be reconfigured live, by the operator only)."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    from kafka_coop.control import CONTROL_TOPIC
    from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC

    principal = f"User:{RESTRICTED_USER}"
    allow = AclPermissionType.ALLOW
    grants: list[tuple[Any, str, Any, list[Any]]] = [
        (
            ResourceType.TOPIC,
            RESTRICTED_PREFIX,
            ResourcePatternType.PREFIXED,
            [AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE],
        ),
        (
            ResourceType.GROUP,
            RESTRICTED_PREFIX,
            ResourcePatternType.PREFIXED,
            [AclOperation.READ, AclOperation.DESCRIBE],
        ),
        (
            ResourceType.TOPIC,
            DEFAULT_MANIFEST_TOPIC,
            ResourcePatternType.LITERAL,
            [AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE],
        ),
        (  # a member follows the control topic; only the operator (admin here) writes it
            ResourceType.TOPIC,
            CONTROL_TOPIC,
            ResourcePatternType.LITERAL,
            [AclOperation.READ, AclOperation.DESCRIBE],
        ),
        (
            ResourceType.BROKER,  # the cluster resource ("kafka-cluster")
            "kafka-cluster",
            ResourcePatternType.LITERAL,
            [AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS],
        ),
    ]
    return [
        AclBinding(rtype, name, pattern, principal, "*", op, allow)
        for rtype, name, pattern, ops in grants
        for op in ops
    ]

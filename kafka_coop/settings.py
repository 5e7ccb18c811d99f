"""ConsumerSettings: the one validated source of a librdkafka consumer configuration.

A consumer that cannot work should fail here, before a process joins a live group, with one sentence
of what is wrong and a hint of what to do — not later, as an opaque `_INVALID_ARG` from librdkafka or,
worse, as a member that joins and disturbs the group. The rules below are the ones librdkafka and the
group coordinator enforce (FACTS.md "Client capabilities"):

- librdkafka refuses mixed eager + cooperative assignor lists, so the KIP-429 two-bounce does not exist
  for confluent-kafka members;
- under KIP-848 (`group.protocol=consumer`) the broker assigns, and librdkafka refuses the classic-only
  keys;
- `group.instance.id` must pass Kafka's valid-id rule, or the JoinGroup is rejected.

Unknown keys only warn (a newer librdkafka may know them); secrets are `SecretStr` everywhere except
in `render()`, the single place that hands them to the client. This module is pure: no confluent_kafka,
click or rich, so planners and the CLI can validate configs for members that run elsewhere.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, NoReturn, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    SecretStr,
    ValidationError,
    model_validator,
)

from kafka_coop.errors import SettingsError

Rebalance = Literal["eager-range", "eager-roundrobin", "cooperative-sticky", "consumer"]
RemoteAssignor = Literal["uniform", "range"]
Protocol = Literal["eager", "cooperative", "consumer"]

DEFAULT_REBALANCE: Rebalance = "cooperative-sticky"
LIBRDKAFKA_DEFAULT_ASSIGNORS: tuple[str, ...] = ("range", "roundrobin")
DEFAULT_ENV_PREFIX = "KAFKA_COOP_"
ENV_CONF_INFIX = "CONF_"
REDACTED = "***"
UPGRADE_PLAN_HINT = (
    "Run `kafka-coop upgrade-plan GROUP --to cooperative` for a path that works with librdkafka."
)

# Kafka's valid-id rule (org.apache.kafka.common.internals.Topic.validate, used for group.instance.id).
INSTANCE_ID_MAX_LENGTH = 249
INSTANCE_ID_PATTERN = re.compile(r"[a-zA-Z0-9._-]+")
INSTANCE_ID_RESERVED = frozenset({".", ".."})

# librdkafka's classic assignors (src/rdkafka_assignor.c); names are case-sensitive there.
EAGER_ASSIGNORS = frozenset({"range", "roundrobin"})
COOPERATIVE_ASSIGNORS = frozenset({"cooperative-sticky"})
ASSIGNOR_TO_REBALANCE: dict[str, Rebalance] = {
    "range": "eager-range",
    "roundrobin": "eager-roundrobin",
    "cooperative-sticky": "cooperative-sticky",
}
REBALANCE_TO_ASSIGNOR: dict[Rebalance, str] = {v: k for k, v in ASSIGNOR_TO_REBALANCE.items()}
REBALANCE_PROTOCOL: dict[Rebalance, Protocol] = {
    "eager-range": "eager",
    "eager-roundrobin": "eager",
    "cooperative-sticky": "cooperative",
    "consumer": "consumer",
}
_ASSIGNOR_OF_REBALANCE: dict[str, str] = {str(k): v for k, v in REBALANCE_TO_ASSIGNOR.items()}
GROUP_PROTOCOLS = frozenset({"classic", "consumer"})

# librdkafka refuses these with group.protocol=consumer: the broker owns assignment and session there.
CLASSIC_ONLY_KEYS = (
    "partition.assignment.strategy",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "group.protocol.type",
)

# Keys whose values are credentials. Java-only names are included because `--command-config` files are
# often shared with Java clients, and a secret must stay hidden even where librdkafka will not use it.
SECRET_KEYS = frozenset(
    {
        "sasl.password",
        "ssl.key.password",
        "ssl.keystore.password",
        "sasl.oauthbearer.client.secret",
        "ssl.key.pem",
        "sasl.oauthbearer.config",
        "sasl.oauthbearer.client.credentials.client.secret",
        "sasl.oauthbearer.assertion.private.key.passphrase",
        "sasl.oauthbearer.assertion.private.key.pem",
        "sasl.jaas.config",
        "ssl.truststore.password",
    }
)

# Python objects confluent-kafka accepts in the conf dict; they are not librdkafka strings.
CALLBACK_KEYS = frozenset({"error_cb", "throttle_cb", "stats_cb", "oauth_cb", "on_commit", "logger"})

# Global (*) and consumer (C) properties from librdkafka's CONFIGURATION.md (master, 2.1x), excluding
# the dedicated-API callbacks. Used only to suggest a spelling; an unknown key is never an error.
KNOWN_CONSUMER_KEYS = frozenset(
    {
        "allow.auto.create.topics",
        "api.version.fallback.ms",
        "api.version.request",
        "api.version.request.timeout.ms",
        "auto.commit.enable",
        "auto.commit.interval.ms",
        "auto.offset.reset",
        "bootstrap.servers",
        "broker.address.family",
        "broker.address.ttl",
        "broker.version.fallback",
        "builtin.features",
        "check.crcs",
        "client.dns.lookup",
        "client.id",
        "client.rack",
        "connections.max.idle.ms",
        "consume.callback.max.messages",
        "coordinator.query.interval.ms",
        "debug",
        "enable.auto.commit",
        "enable.auto.offset.store",
        "enable.metrics.push",
        "enable.partition.eof",
        "enable.random.seed",
        "enable.sasl.oauthbearer.unsecure.jwt",
        "enable.ssl.certificate.verification",
        "enabled_events",
        "fetch.error.backoff.ms",
        "fetch.max.bytes",
        "fetch.message.max.bytes",
        "fetch.min.bytes",
        "fetch.queue.backoff.ms",
        "fetch.wait.max.ms",
        "group.id",
        "group.instance.id",
        "group.protocol",
        "group.protocol.type",
        "group.remote.assignor",
        "heartbeat.interval.ms",
        "https.ca.location",
        "https.ca.pem",
        "interceptors",
        "internal.termination.signal",
        "isolation.level",
        "log.connection.close",
        "log.queue",
        "log.thread.name",
        "log_level",
        "max.in.flight",
        "max.in.flight.requests.per.connection",
        "max.partition.fetch.bytes",
        "max.poll.interval.ms",
        "max.poll.records",
        "message.copy.max.bytes",
        "message.max.bytes",
        "metadata.broker.list",
        "metadata.max.age.ms",
        "metadata.recovery.rebootstrap.trigger.ms",
        "metadata.recovery.strategy",
        "offset.store.method",
        "offset.store.path",
        "offset.store.sync.interval.ms",
        "partition.assignment.strategy",
        "plugin.library.paths",
        "queued.max.messages.kbytes",
        "queued.min.messages",
        "receive.message.max.bytes",
        "reconnect.backoff.jitter.ms",
        "reconnect.backoff.max.ms",
        "reconnect.backoff.ms",
        "retry.backoff.max.ms",
        "retry.backoff.ms",
        "sasl.kerberos.keytab",
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.min.time.before.relogin",
        "sasl.kerberos.principal",
        "sasl.kerberos.service.name",
        "sasl.mechanism",
        "sasl.mechanisms",
        "sasl.oauthbearer.assertion.algorithm",
        "sasl.oauthbearer.assertion.claim.aud",
        "sasl.oauthbearer.assertion.claim.exp.seconds",
        "sasl.oauthbearer.assertion.claim.iss",
        "sasl.oauthbearer.assertion.claim.jti.include",
        "sasl.oauthbearer.assertion.claim.nbf.seconds",
        "sasl.oauthbearer.assertion.claim.sub",
        "sasl.oauthbearer.assertion.file",
        "sasl.oauthbearer.assertion.jwt.template.file",
        "sasl.oauthbearer.assertion.private.key.file",
        "sasl.oauthbearer.assertion.private.key.passphrase",
        "sasl.oauthbearer.assertion.private.key.pem",
        "sasl.oauthbearer.client.credentials.client.id",
        "sasl.oauthbearer.client.credentials.client.secret",
        "sasl.oauthbearer.client.id",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.config",
        "sasl.oauthbearer.extensions",
        "sasl.oauthbearer.grant.type",
        "sasl.oauthbearer.metadata.authentication.type",
        "sasl.oauthbearer.method",
        "sasl.oauthbearer.scope",
        "sasl.oauthbearer.sub.claim.name",
        "sasl.oauthbearer.token.endpoint.url",
        "sasl.password",
        "sasl.username",
        "security.protocol",
        "session.timeout.ms",
        "share.acknowledgement.mode",
        "socket.blocking.max.ms",
        "socket.connection.setup.timeout.ms",
        "socket.keepalive.enable",
        "socket.max.fails",
        "socket.nagle.disable",
        "socket.receive.buffer.bytes",
        "socket.send.buffer.bytes",
        "socket.timeout.ms",
        "ssl.ca.certificate.stores",
        "ssl.ca.location",
        "ssl.ca.pem",
        "ssl.certificate.location",
        "ssl.certificate.pem",
        "ssl.cipher.suites",
        "ssl.crl.location",
        "ssl.curves.list",
        "ssl.endpoint.identification.algorithm",
        "ssl.engine.id",
        "ssl.engine.location",
        "ssl.key.location",
        "ssl.key.password",
        "ssl.key.pem",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.providers",
        "ssl.sigalgs.list",
        "statistics.interval.ms",
        "topic.blacklist",
        "topic.metadata.propagation.max.ms",
        "topic.metadata.refresh.fast.cnt",
        "topic.metadata.refresh.fast.interval.ms",
        "topic.metadata.refresh.interval.ms",
        "topic.metadata.refresh.sparse",
    }
)

# librdkafka keys that have a typed field; `extra` must not carry them, or render() would be ambiguous.
TYPED_KEYS: dict[str, str] = {
    "bootstrap.servers": "bootstrap_servers",
    "metadata.broker.list": "bootstrap_servers",
    "group.id": "group_id",
    "partition.assignment.strategy": "rebalance",
    "group.protocol": "rebalance",
    "group.remote.assignor": "remote_assignor",
    "group.instance.id": "instance_id",
    "session.timeout.ms": "session_timeout_ms",
    "max.poll.interval.ms": "max_poll_interval_ms",
    "client.id": "client_id",
}
SUGGESTION_CUTOFF = 0.75
_PROPERTY_WHITESPACE = " \t\f"


def validate_instance_id(value: str) -> str:
    """Apply Kafka's valid-id rule, because the coordinator rejects a JoinGroup that breaks it.

    The one implementation of the rule: identity.py resolves templates and then calls this.
    """
    hint = "Use 1-249 characters from a-z, A-Z, 0-9, '.', '_' and '-', e.g. the pod name."
    if not value:
        raise SettingsError("group.instance.id is empty.", hint=hint)
    if value in INSTANCE_ID_RESERVED:
        raise SettingsError(f"group.instance.id cannot be {value!r}.", hint=hint)
    if len(value) > INSTANCE_ID_MAX_LENGTH:
        raise SettingsError(
            f"group.instance.id is {len(value)} characters long; "
            f"Kafka allows at most {INSTANCE_ID_MAX_LENGTH}.",
            hint=hint,
        )
    if not INSTANCE_ID_PATTERN.fullmatch(value):
        bad = sorted({ch for ch in value if not INSTANCE_ID_PATTERN.fullmatch(ch)})
        raise SettingsError(
            f"group.instance.id {value!r} contains characters Kafka does not allow: {''.join(bad)!r}.",
            hint=hint,
        )
    return value


def parse_assignors(value: str) -> tuple[str, ...]:
    """Split a `partition.assignment.strategy` list and refuse what librdkafka would refuse at creation."""
    names = tuple(part.strip() for part in value.replace(" ", ",").split(",") if part.strip())
    if not names:
        raise SettingsError(
            "partition.assignment.strategy is empty.",
            hint="Set it to cooperative-sticky, range or roundrobin, or leave it out.",
        )
    for name in names:
        if name not in ASSIGNOR_TO_REBALANCE:
            raise SettingsError(
                f"partition.assignment.strategy names {name!r}, which librdkafka does not support.",
                hint="Use cooperative-sticky, range or roundrobin (lower case; Java class names do not "
                "work).",
            )
    eager = [n for n in names if n in EAGER_ASSIGNORS]
    cooperative = [n for n in names if n in COOPERATIVE_ASSIGNORS]
    if eager and cooperative:
        raise SettingsError(
            f"partition.assignment.strategy={','.join(names)} mixes eager and cooperative assignors, and "
            'librdkafka refuses to create such a consumer ("online migration between assignors with '
            'different protocol types is not supported"), so the KIP-429 two-bounce does not exist for '
            "confluent-kafka members.",
            hint=UPGRADE_PLAN_HINT,
        )
    return names


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java `.properties` text, because `--command-config` files are shared with Java tools.

    Follows java.util.Properties.load: `#`/`!` comment lines, `=`, `:` or whitespace separators, an odd
    number of trailing backslashes continues the line (leading whitespace of the next line is dropped),
    and the escapes `\\t \\n \\r \\f \\uXXXX`. Later keys win, as in Java.
    """
    result: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(_PROPERTY_WHITESPACE)
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(_PROPERTY_WHITESPACE)
            i += 1
        if _continues(line):  # a final backslash with nothing after it is dropped, as in Java
            line = line[:-1]
        key, value = _split_property(line)
        result[_unescape(key)] = _unescape(value)
    return result


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split_property(line: str) -> tuple[str, str]:
    """Split where java.util.Properties does: the first unescaped `=`, `:` or whitespace."""
    end = 0
    value_start = len(line)
    has_separator = False
    while end < len(line):
        ch = line[end]
        if ch == "\\":
            end += 2
            continue
        if ch in "=:":
            value_start, has_separator = end + 1, True
            break
        if ch in _PROPERTY_WHITESPACE:
            value_start = end + 1
            break
        end += 1
    key = line[: min(end, len(line))]
    while value_start < len(line):
        ch = line[value_start]
        if ch in _PROPERTY_WHITESPACE:
            value_start += 1
        elif ch in "=:" and not has_separator:
            value_start, has_separator = value_start + 1, True
        else:
            break
    return key, line[value_start:]


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out: list[str] = []
    j = 0
    while j < len(text):
        ch = text[j]
        if ch != "\\" or j + 1 >= len(text):
            out.append(ch)
            j += 1
            continue
        nxt = text[j + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[j + 2 : j + 6]):
            out.append(chr(int(text[j + 2 : j + 6], 16)))
            j += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        j += 2
    return "".join(out)


def _scalar(key: str, value: Any) -> str:
    """librdkafka takes strings; confluent-kafka also accepts bools and numbers, so normalize those."""
    if key in CALLBACK_KEYS or callable(value):
        raise SettingsError(
            f"Setting {key!r} is a Python callback; ConsumerSettings holds librdkafka settings only.",
            hint="Leave callbacks out of the settings; CoopConsumer reports rebalances and errors as events.",
        )
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    raise SettingsError(
        f"Setting {key!r} has a {type(value).__name__} value; librdkafka takes strings, numbers or booleans.",
        hint=f"Write {key} as a string, e.g. a comma-separated list.",
    )


def _int_setting(key: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise SettingsError(
            f"{key}={value!r} is not a whole number of milliseconds.",
            hint=f"Set {key} to an integer, e.g. 45000.",
        ) from None


def _suggest(key: str) -> str:
    close = difflib.get_close_matches(key, sorted(KNOWN_CONSUMER_KEYS), n=1, cutoff=SUGGESTION_CUTOFF)
    if close:
        return f"Unknown setting {key!r}; did you mean {close[0]!r}?"
    return f"Unknown setting {key!r}; librdkafka may refuse it."


def _first_error(exc: ValidationError) -> SettingsError:
    err = exc.errors()[0]
    field = ".".join(str(part) for part in err["loc"]) or "settings"
    return SettingsError(
        f"Setting {field!r} is invalid: {err['msg']}.",
        hint="Check the value against the ConsumerSettings fields (see `help(ConsumerSettings)`).",
    )


class ConsumerSettings(BaseModel):
    """Typed consumer settings; build with fields, `from_conf`, `from_env` or `from_properties`.

    Built from fields, `rebalance` defaults to cooperative-sticky. Built from a conf dict (`from_conf`, the
    drop-in path) without `partition.assignment.strategy`, it keeps librdkafka's own default
    `range,roundrobin`: switching protocol on a live group is a migration (`kafka-coop upgrade-plan`), not
    a side effect of changing a class name. `assignors` keeps an explicit eager list such as
    `range,roundrobin`; `rebalance` then names its first entry.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    bootstrap_servers: str
    group_id: str
    rebalance: Rebalance = DEFAULT_REBALANCE
    assignors: tuple[str, ...] | None = None
    remote_assignor: RemoteAssignor | None = None
    instance_id: str | None = None
    session_timeout_ms: int | None = Field(default=None, gt=0)
    max_poll_interval_ms: int | None = Field(default=None, gt=0)
    client_id: str | None = None
    extra: dict[str, str] = Field(default_factory=dict)
    secrets: dict[str, SecretStr] = Field(default_factory=dict)

    # --- constructors ----------------------------------------------------------------------------
    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> ConsumerSettings:
        """Accept the dict a confluent_kafka.Consumer would take, so CoopConsumer is a drop-in."""
        return cls(**_fields_from_conf(conf))

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] = os.environ, prefix: str = DEFAULT_ENV_PREFIX
    ) -> ConsumerSettings:
        """Read `<prefix>BOOTSTRAP_SERVERS`, `GROUP_ID`, `REBALANCE`, ... and `<prefix>CONF_<KEY>`.

        In `CONF_<KEY>` a `_` stands for `.` and `__` for `_` (`CONF_LOG__LEVEL` is `log_level`), since
        environment names cannot hold dots. The named variables win over `CONF_` ones. An
        `INSTANCE_ID` with placeholders (`{pod}`, `{ordinal}`, ...) is resolved from the same environ,
        so a StatefulSet can give every pod its own static id with one variable.
        """
        conf: dict[str, str] = {}
        conf_prefix = prefix + ENV_CONF_INFIX
        for name, value in environ.items():
            if name.startswith(conf_prefix) and len(name) > len(conf_prefix):
                raw = name[len(conf_prefix) :].lower()
                conf[raw.replace("__", "\0").replace("_", ".").replace("\0", "_")] = value
        named = {
            "BOOTSTRAP_SERVERS": "bootstrap.servers",
            "GROUP_ID": "group.id",
            "CLIENT_ID": "client.id",
            "SESSION_TIMEOUT_MS": "session.timeout.ms",
            "MAX_POLL_INTERVAL_MS": "max.poll.interval.ms",
            "REMOTE_ASSIGNOR": "group.remote.assignor",
        }
        for var, key in named.items():
            if prefix + var in environ:
                conf[key] = environ[prefix + var]
        rebalance = environ.get(prefix + "REBALANCE")
        if rebalance is not None:
            conf.pop("partition.assignment.strategy", None)
            conf.pop("group.protocol", None)
            if rebalance == "consumer":
                conf["group.protocol"] = "consumer"
            elif rebalance in _ASSIGNOR_OF_REBALANCE:
                conf["partition.assignment.strategy"] = _ASSIGNOR_OF_REBALANCE[rebalance]
            else:
                raise SettingsError(
                    f"{prefix}REBALANCE={rebalance!r} is not a rebalance mode.",
                    hint=f"Use one of {', '.join(get_args(Rebalance))}.",
                )
        instance_id = environ.get(prefix + "INSTANCE_ID")
        if instance_id is not None:
            if "{" in instance_id:
                from kafka_coop.identity import resolve_instance_id  # identity imports this module

                instance_id = resolve_instance_id(
                    instance_id, group=conf.get("group.id", ""), environ=environ
                )
            conf["group.instance.id"] = instance_id or ""
        return cls.from_conf(conf)

    @staticmethod
    def read_properties(path_or_text: str | Path) -> dict[str, str]:
        """Parse a Java-style properties file (a `Path`, or a `str` without `=` or newline) or text."""
        if isinstance(path_or_text, str) and ("\n" in path_or_text or "=" in path_or_text):
            return parse_properties(path_or_text)
        path = Path(path_or_text)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise SettingsError(
                f"Properties file {str(path)!r} does not exist.",
                hint="Check the path and the working directory.",
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise SettingsError(
                f"Properties file {str(path)!r} cannot be read: {exc}.",
                hint="Check that it is a readable UTF-8 text file.",
            ) from None
        return parse_properties(text)

    @classmethod
    def from_properties(cls, path_or_text: str | Path) -> ConsumerSettings:
        """Build from a Java-style properties file or text, the format Kafka's own tools take."""
        return cls.from_conf(cls.read_properties(path_or_text))

    # --- validation ------------------------------------------------------------------------------
    @model_validator(mode="wrap")
    @classmethod
    def _as_settings_error(
        cls, data: Any, handler: ModelWrapValidatorHandler[ConsumerSettings]
    ) -> ConsumerSettings:
        """Turn pydantic's errors into SettingsError, so callers catch one type with a hint."""
        if isinstance(data, dict):
            data = _normalize_fields(data)
        try:
            return handler(data)
        except ValidationError as exc:
            raise _first_error(exc) from None

    @model_validator(mode="after")
    def _check(self) -> ConsumerSettings:
        if self.rebalance == "consumer":
            if self.assignors is not None:
                _classic_key_error("partition.assignment.strategy")
            if self.session_timeout_ms is not None:
                _classic_key_error("session.timeout.ms")
            for key in CLASSIC_ONLY_KEYS:
                if key in self.extra:
                    _classic_key_error(key)
        elif self.remote_assignor is not None:
            raise SettingsError(
                f"remote_assignor={self.remote_assignor!r} needs group.protocol=consumer, but rebalance is "
                f"{self.rebalance!r}; under the classic protocol the client's assignor decides.",
                hint="Set rebalance='consumer' (group.protocol=consumer), or drop remote_assignor.",
            )
        if self.assignors is not None:
            parse_assignors(",".join(self.assignors))
            if ASSIGNOR_TO_REBALANCE[self.assignors[0]] != self.rebalance:
                raise SettingsError(
                    f"rebalance={self.rebalance!r} disagrees with assignors={list(self.assignors)!r}, whose "
                    "first entry decides.",
                    hint="Drop rebalance or reorder assignors so that the first one matches it.",
                )
        if self.instance_id is not None:
            validate_instance_id(self.instance_id)
        return self

    # --- views -----------------------------------------------------------------------------------
    @property
    def protocol(self) -> Protocol:
        """The rebalance protocol, because it decides which assignment calls are legal in callbacks."""
        return REBALANCE_PROTOCOL[self.rebalance]

    @property
    def is_static(self) -> bool:
        return self.instance_id is not None

    @property
    def assignor_names(self) -> tuple[str, ...]:
        """The classic assignors in preference order; empty under KIP-848 (the broker assigns)."""
        if self.rebalance == "consumer":
            return ()
        return self.assignors or (REBALANCE_TO_ASSIGNOR[self.rebalance],)

    @property
    def warnings(self) -> list[str]:
        """Unknown keys, each with the nearest known one, for the caller to log once at start-up."""
        keys = sorted({*self.extra, *self.secrets} - KNOWN_CONSUMER_KEYS)
        return [_suggest(key) for key in keys]

    def render(self) -> dict[str, str]:
        """The exact librdkafka config, secrets revealed: the only place they leave their SecretStr."""
        return self._render(reveal=True)

    def redacted(self) -> dict[str, str]:
        """render() with every secret shown as `***`, for logs, tables and JSON output."""
        return self._render(reveal=False)

    def _render(self, *, reveal: bool) -> dict[str, str]:
        conf = {"bootstrap.servers": self.bootstrap_servers, "group.id": self.group_id}
        if self.client_id is not None:
            conf["client.id"] = self.client_id
        if self.rebalance == "consumer":
            conf["group.protocol"] = "consumer"
            if self.remote_assignor is not None:
                conf["group.remote.assignor"] = self.remote_assignor
        else:
            conf["partition.assignment.strategy"] = ",".join(self.assignor_names)
        if self.instance_id is not None:
            conf["group.instance.id"] = self.instance_id
        if self.session_timeout_ms is not None:
            conf["session.timeout.ms"] = str(self.session_timeout_ms)
        if self.max_poll_interval_ms is not None:
            conf["max.poll.interval.ms"] = str(self.max_poll_interval_ms)
        rest: dict[str, str] = dict(self.extra)
        for key, secret in self.secrets.items():
            rest[key] = secret.get_secret_value() if reveal else REDACTED
        conf.update(sorted(rest.items()))
        return conf


def _classic_key_error(key: str) -> NoReturn:
    raise SettingsError(
        f"{key} cannot be used with group.protocol=consumer: under KIP-848 the broker assigns partitions "
        "and owns the session, and librdkafka refuses the classic-only settings.",
        hint=f"Remove {key}; choose the broker-side assignor with remote_assignor / group.remote.assignor "
        "(uniform or range).",
    )


def _normalize_fields(data: dict[str, Any]) -> dict[str, Any]:
    """Check required fields and move secrets out of `extra`, before pydantic sees the data."""
    data = dict(data)
    for field, key, env in (
        ("bootstrap_servers", "bootstrap.servers", "BOOTSTRAP_SERVERS"),
        ("group_id", "group.id", "GROUP_ID"),
    ):
        value = data.get(field)
        if value is None or (isinstance(value, str) and not value.strip()):
            raise SettingsError(
                f"No {key} is set; a consumer needs it to join a group.",
                hint=f"Set {key} (or {DEFAULT_ENV_PREFIX}{env}).",
            )
    extra = data.get("extra")
    if isinstance(extra, Mapping):
        extra = {str(k): _scalar(str(k), v) for k, v in extra.items()}
        for key in extra:
            if key in TYPED_KEYS:
                raise SettingsError(
                    f"{key} has a typed field and cannot go in extra.",
                    hint=f"Pass it as {TYPED_KEYS[key]}=..., or build with ConsumerSettings.from_conf().",
                )
        secrets = dict(data.get("secrets") or {})
        for key in [k for k in extra if k in SECRET_KEYS]:
            secrets[key] = extra.pop(key)
        data["extra"] = extra
        data["secrets"] = secrets
    assignors = data.get("assignors")
    if assignors is not None and not isinstance(assignors, str):
        assignors = tuple(assignors)
        if "rebalance" not in data and assignors and assignors[0] in ASSIGNOR_TO_REBALANCE:
            data["rebalance"] = ASSIGNOR_TO_REBALANCE[assignors[0]]
        single = len(assignors) == 1 and ASSIGNOR_TO_REBALANCE.get(assignors[0]) == data.get("rebalance")
        data["assignors"] = None if single else assignors
    return data


def _fields_from_conf(conf: Mapping[str, Any]) -> dict[str, Any]:
    """Split a librdkafka dict into typed fields, extras and secrets, mapping the rebalance keys."""
    rest = {str(k): _scalar(str(k), v) for k, v in conf.items()}
    fields: dict[str, Any] = {}
    servers = rest.pop("bootstrap.servers", None)
    brokers = rest.pop("metadata.broker.list", None)
    fields["bootstrap_servers"] = servers if servers is not None else brokers
    fields["group_id"] = rest.pop("group.id", None)

    group_protocol = rest.pop("group.protocol", "classic").strip().lower()
    if group_protocol not in GROUP_PROTOCOLS:
        raise SettingsError(
            f"group.protocol={group_protocol!r} is not a group protocol.", hint="Use classic or consumer."
        )
    strategy = rest.pop("partition.assignment.strategy", None)
    remote = rest.pop("group.remote.assignor", None)
    if group_protocol == "consumer":
        for key in CLASSIC_ONLY_KEYS:
            if key in conf:
                _classic_key_error(key)
        fields["rebalance"] = "consumer"
    else:
        # Drop-in means librdkafka's meaning: no strategy is its default `range,roundrobin` (eager), so a
        # CoopConsumer replacing a plain Consumer in a running eager group can still join it.
        names = parse_assignors(strategy) if strategy is not None else LIBRDKAFKA_DEFAULT_ASSIGNORS
        fields["rebalance"] = ASSIGNOR_TO_REBALANCE[names[0]]
        if len(names) > 1:
            fields["assignors"] = names
    if remote is not None:
        if group_protocol != "consumer":
            raise SettingsError(
                f"group.remote.assignor={remote!r} needs group.protocol=consumer; under the classic protocol "
                "the client's partition.assignment.strategy decides.",
                hint="Add group.protocol=consumer, or drop group.remote.assignor.",
            )
        fields["remote_assignor"] = remote.strip()

    instance_id = rest.pop("group.instance.id", None)
    if instance_id is not None:
        fields["instance_id"] = validate_instance_id(instance_id)
    for key, field in (
        ("session.timeout.ms", "session_timeout_ms"),
        ("max.poll.interval.ms", "max_poll_interval_ms"),
    ):
        if key in rest:
            fields[field] = _int_setting(key, rest.pop(key))
    if "client.id" in rest:
        fields["client_id"] = rest.pop("client.id")
    fields["secrets"] = {k: rest.pop(k) for k in sorted(rest) if k in SECRET_KEYS}
    fields["extra"] = rest
    return fields

"""ConsumerSettings: the one validated source of a librdkafka consumer configuration.

A consumer that cannot work fails here, before a process joins a live group, with one sentence and a
hint, not later as an opaque `_INVALID_ARG` or a member that disturbs the group. Pure, so planners and
the CLI validate configs for members that run elsewhere; secrets stay `SecretStr` except in `render()`.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    SecretStr,
    ValidationError,
    model_validator,
)

from kafka_coop._vocab import (
    ASSIGNOR_REBALANCE_MODE,
    CLASSIC_ONLY_KEYS,
    COOPERATIVE_ASSIGNORS,
    LIBRDKAFKA_ASSIGNORS,
    LIBRDKAFKA_DEFAULT_ASSIGNORS,
    REBALANCE_MODE_ASSIGNOR,
    REBALANCE_MODE_PROTOCOL,
    GroupProtocol,
    RebalanceMode,
    RebalanceProtocol,
)
from kafka_coop.errors import SettingsError
from kafka_coop.identity import validate_instance_id
from kafka_coop.settings._env import DEFAULT_ENV_PREFIX, conf_from_env
from kafka_coop.settings._keys import CALLBACK_KEYS, KNOWN_CONSUMER_KEYS, SECRET_KEYS
from kafka_coop.settings._properties import parse_properties, read_properties

DEFAULT_REBALANCE: RebalanceMode = "cooperative-sticky"

# Facts these rules rest on (docs/protocols.md "Client capabilities"):
# - librdkafka refuses mixed eager + cooperative assignor lists, so the KIP-429 two-bounce does not
#   exist for confluent-kafka members;
# - under KIP-848 (`group.protocol=consumer`) the broker assigns, and librdkafka refuses the
#   classic-only keys;
# - `group.instance.id` must pass Kafka's valid-id rule, or the JoinGroup is rejected.
# Unknown keys only warn (a newer librdkafka may know them).

REDACTED = "***"
UPGRADE_PLAN_HINT = (
    "Run `kafka-coop upgrade-plan GROUP --to cooperative` for a path that works with librdkafka."
)
GROUP_PROTOCOLS: frozenset[GroupProtocol] = frozenset({"classic", "consumer"})
SUGGESTION_CUTOFF = 0.75
# librdkafka's defaults (CONFIGURATION.md); it refuses a classic consumer whose max.poll.interval.ms is
# below its session.timeout.ms ("`max.poll.interval.ms`must be >= `session.timeout.ms`", rdkafka_conf.c).
LIBRDKAFKA_SESSION_TIMEOUT_MS = 45000
LIBRDKAFKA_MAX_POLL_INTERVAL_MS = 300000


def parse_assignors(value: str) -> tuple[str, ...]:
    """Split a `partition.assignment.strategy` list and refuse what librdkafka would refuse at creation."""
    names = tuple(part.strip() for part in value.replace(" ", ",").split(",") if part.strip())
    if not names:
        raise SettingsError(
            "partition.assignment.strategy is empty.",
            hint="Set it to cooperative-sticky, range or roundrobin, or leave it out.",
        )
    for name in names:
        if name not in LIBRDKAFKA_ASSIGNORS:
            raise SettingsError(
                f"partition.assignment.strategy names {name!r}, which librdkafka does not support.",
                hint="Use cooperative-sticky, range or roundrobin (lower case; Java class names do not "
                "work).",
            )
    eager = [n for n in names if n not in COOPERATIVE_ASSIGNORS]
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


DEFAULT_TOPIC_CONFIG = "default.topic.config"


def _scalar(key: str, value: Any) -> str:
    """librdkafka takes strings; confluent-kafka also accepts bools and numbers, so normalize those."""
    if key in CALLBACK_KEYS or callable(value):
        raise SettingsError(
            f"Setting {key!r} is a Python callback; ConsumerSettings holds librdkafka settings only.",
            hint=f"Give it to the consumer instead: CoopConsumer({{..., {key!r}: ...}}) in the conf dict, or "
            f"CoopConsumer(settings, callbacks={{{key!r}: ...}}).",
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


def _flag(key: str, value: str) -> bool:
    # librdkafka's own parse (rdkafka_conf.c, checked against confluent_kafka.Consumer): true/t/1 and
    # false/f/0, any case, nothing else (no "yes"/"on", no blanks).
    if value.lower() in ("true", "t", "1"):
        return True
    if value.lower() in ("false", "f", "0"):
        return False
    raise SettingsError(f"{key}={value!r} is not a boolean.", hint=f"Set {key} to true or false.")


def _interval_ms(key: str, value: str) -> int:
    try:
        interval = int(value)
    except ValueError:
        interval = -1
    if interval <= 0:
        raise SettingsError(
            f"{key}={value!r} is not a positive number of milliseconds.",
            hint=f"Set {key} to e.g. 5000, or enable.auto.commit=false for no interval commits.",
        )
    return interval


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
    rebalance: RebalanceMode = DEFAULT_REBALANCE
    assignors: tuple[str, ...] | None = None
    remote_assignor: str | None = None
    instance_id: str | None = None
    session_timeout_ms: int | None = Field(default=None, gt=0)
    max_poll_interval_ms: int | None = Field(default=None, gt=0)
    client_id: str | None = None
    # The commit settings the consumer decides on; None: librdkafka's default (true, true, 5000 ms).
    auto_commit: bool | None = None  # enable.auto.commit
    auto_offset_store: bool | None = None  # enable.auto.offset.store (false: explicit marks)
    auto_commit_interval_ms: int | None = Field(default=None, gt=0)
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
        return cls.from_conf(conf_from_env(environ, prefix))

    @staticmethod
    def read_properties(path: str | Path | None = None, *, text: str | None = None) -> dict[str, str]:
        """The raw dict of a Java-style properties file (`path`) or of properties `text`.

        Exactly one of the two: a string is never guessed to be one or the other, since paths can hold
        `=` and text can be one line.
        """
        if text is not None and path is None:
            return parse_properties(text)
        if path is not None and text is None:
            return read_properties(path)
        raise TypeError("read_properties takes a path or text=..., exactly one of them")

    @classmethod
    def from_properties(cls, path: str | Path | None = None, *, text: str | None = None) -> ConsumerSettings:
        """Build from a Java-style properties file (`path`) or `text`, the format Kafka's own tools take."""
        return cls.from_conf(cls.read_properties(path, text=text))

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
            if ASSIGNOR_REBALANCE_MODE[self.assignors[0]] != self.rebalance:
                raise SettingsError(
                    f"rebalance={self.rebalance!r} disagrees with assignors={list(self.assignors)!r}, whose "
                    "first entry decides.",
                    hint="Drop rebalance or reorder assignors so that the first one matches it.",
                )
        if self.instance_id is not None:
            validate_instance_id(self.instance_id)
        if self.remote_assignor is not None:
            _check_remote_assignor(self.remote_assignor)
        if self.rebalance != "consumer":
            self._check_poll_interval()
        return self

    def _check_poll_interval(self) -> None:
        session = self.session_timeout_ms or LIBRDKAFKA_SESSION_TIMEOUT_MS
        max_poll = self.max_poll_interval_ms or LIBRDKAFKA_MAX_POLL_INTERVAL_MS
        if max_poll >= session:
            return
        default = " (librdkafka's default)"
        poll_text = f"max.poll.interval.ms={max_poll}{'' if self.max_poll_interval_ms else default}"
        session_text = f"session.timeout.ms={session}{'' if self.session_timeout_ms else default}"
        raise SettingsError(
            f"{poll_text} is shorter than {session_text}, and librdkafka refuses such a consumer.",
            hint="Set max.poll.interval.ms to at least session.timeout.ms: the poll limit is how long your "
            "processing may take, the session how long a dead process keeps its partitions.",
        )

    # --- views -----------------------------------------------------------------------------------
    @property
    def protocol(self) -> RebalanceProtocol:
        """The rebalance protocol, because it decides which assignment calls are legal in callbacks."""
        return REBALANCE_MODE_PROTOCOL[self.rebalance]

    @property
    def is_static(self) -> bool:
        return self.instance_id is not None

    @property
    def assignor_names(self) -> tuple[str, ...]:
        """The classic assignors in preference order; empty under KIP-848 (the broker assigns)."""
        if self.rebalance == "consumer":
            return ()
        return self.assignors or (REBALANCE_MODE_ASSIGNOR[self.rebalance],)

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
        conf = {row.key: value for row in TYPED_SETTINGS if (value := row.render(self)) is not None}
        rest: dict[str, str] = dict(self.extra)
        for key, secret in self.secrets.items():
            rest[key] = secret.get_secret_value() if reveal else REDACTED
        conf.update(sorted(rest.items()))
        return conf


def _check_remote_assignor(name: str) -> None:
    """Any name the broker lists in `group.consumer.assignors` (uniform, range, or a custom assignor)."""
    hint = (
        "Use uniform or range (Kafka's built-in assignors), or the name of an assignor the brokers list in "
        "group.consumer.assignors."
    )
    if not name.strip():
        raise SettingsError("group.remote.assignor is empty.", hint=hint)
    if any(ch.isspace() for ch in name):
        raise SettingsError(f"group.remote.assignor={name!r} is not an assignor name.", hint=hint)


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
            typed = TYPED_BY_KEY.get(key)
            if typed is not None:
                raise SettingsError(
                    f"{key} has a typed field and cannot go in extra.",
                    hint=f"Pass it as {typed.field}=..., or build with ConsumerSettings.from_conf().",
                )
        secrets = dict(data.get("secrets") or {})
        for key in [k for k in extra if k in SECRET_KEYS]:
            secrets[key] = extra.pop(key)
        data["extra"] = extra
        data["secrets"] = secrets
    assignors = data.get("assignors")
    if assignors is not None and not isinstance(assignors, str):
        assignors = tuple(assignors)
        if "rebalance" not in data and assignors and assignors[0] in ASSIGNOR_REBALANCE_MODE:
            data["rebalance"] = ASSIGNOR_REBALANCE_MODE[assignors[0]]
        single = len(assignors) == 1 and ASSIGNOR_REBALANCE_MODE.get(assignors[0]) == data.get("rebalance")
        data["assignors"] = None if single else assignors
    return data


def _flatten_topic_config(conf: Mapping[str, Any]) -> dict[str, Any]:
    """confluent-kafka takes `default.topic.config` as a dict of topic settings (the older way to write
    e.g. `auto.offset.reset`): its entries count as top-level settings, a top-level one winning."""
    topic_conf = conf.get(DEFAULT_TOPIC_CONFIG)
    if not isinstance(topic_conf, Mapping):
        return dict(conf)
    flat = {str(k): v for k, v in topic_conf.items()}
    flat.update((k, v) for k, v in conf.items() if k != DEFAULT_TOPIC_CONFIG)
    return flat


def _fields_from_conf(conf: Mapping[str, Any]) -> dict[str, Any]:
    """Split a librdkafka dict into typed fields (the table's), extras and secrets."""
    rest = {str(k): _scalar(str(k), v) for k, v in _flatten_topic_config(conf).items()}
    fields = _rebalance_fields(rest, conf)
    for row in TYPED_SETTINGS:
        if row.parse is not None and row.key in rest:
            # setdefault: of two keys for one field, the table's first wins (bootstrap.servers over
            # metadata.broker.list)
            fields.setdefault(row.field, row.parse(row.key, rest.pop(row.key)))
    fields["secrets"] = {k: rest.pop(k) for k in sorted(rest) if k in SECRET_KEYS}
    fields["extra"] = rest
    return fields


def _rebalance_fields(rest: dict[str, str], conf: Mapping[str, Any]) -> dict[str, Any]:
    """The rebalance keys, read together (each decides what the others may be): pops them from `rest`."""
    fields: dict[str, Any] = {}
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
        fields["rebalance"] = ASSIGNOR_REBALANCE_MODE[names[0]]
        if len(names) > 1:
            fields["assignors"] = names
    if remote is not None:
        if group_protocol != "consumer":
            raise SettingsError(
                f"group.remote.assignor={remote!r} needs group.protocol=consumer; under the classic protocol "
                "the client's partition.assignment.strategy decides.",
                hint="Add group.protocol=consumer, or drop group.remote.assignor.",
            )
        fields["remote_assignor"] = remote.strip() or remote
    return fields


class TypedKey(NamedTuple):
    """A librdkafka key with a typed field of `ConsumerSettings`: how `from_conf` reads it into the field
    (`parse(key, value)`; None: `_rebalance_fields` reads it, with the other rebalance keys) and how
    `render` writes it back (None: not in the conf)."""

    key: str
    field: str
    parse: Callable[[str, str], Any] | None
    render: Callable[[ConsumerSettings], str | None]


def _text(_key: str, value: str) -> str:
    return value


def _instance_id(_key: str, value: str) -> str:
    return validate_instance_id(value)


def _number(value: int | None) -> str | None:
    return None if value is None else str(value)


def _flag_text(value: bool | None) -> str | None:
    return None if value is None else "true" if value else "false"


def _strategy(settings: ConsumerSettings) -> str | None:
    return None if settings.rebalance == "consumer" else ",".join(settings.assignor_names)


# Every key with a typed field, in the order render() writes them; `extra` may carry none of them.
TYPED_SETTINGS: tuple[TypedKey, ...] = (
    TypedKey("bootstrap.servers", "bootstrap_servers", _text, lambda s: s.bootstrap_servers),
    TypedKey("metadata.broker.list", "bootstrap_servers", _text, lambda s: None),  # the older name
    TypedKey("group.id", "group_id", _text, lambda s: s.group_id),
    TypedKey("client.id", "client_id", _text, lambda s: s.client_id),
    TypedKey(
        "group.protocol", "rebalance", None, lambda s: "consumer" if s.rebalance == "consumer" else None
    ),
    TypedKey("group.remote.assignor", "remote_assignor", None, lambda s: s.remote_assignor),
    TypedKey("partition.assignment.strategy", "rebalance", None, _strategy),
    TypedKey("group.instance.id", "instance_id", _instance_id, lambda s: s.instance_id),
    TypedKey(
        "session.timeout.ms", "session_timeout_ms", _int_setting, lambda s: _number(s.session_timeout_ms)
    ),
    TypedKey(
        "max.poll.interval.ms",
        "max_poll_interval_ms",
        _int_setting,
        lambda s: _number(s.max_poll_interval_ms),
    ),
    TypedKey("enable.auto.commit", "auto_commit", _flag, lambda s: _flag_text(s.auto_commit)),
    TypedKey(
        "enable.auto.offset.store", "auto_offset_store", _flag, lambda s: _flag_text(s.auto_offset_store)
    ),
    TypedKey(
        "auto.commit.interval.ms",
        "auto_commit_interval_ms",
        _interval_ms,
        lambda s: _number(s.auto_commit_interval_ms),
    ),
)
TYPED_BY_KEY: dict[str, TypedKey] = {row.key: row for row in TYPED_SETTINGS}

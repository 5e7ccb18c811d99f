"""ConsumerSettings: what a consumer config may be, how it is read, and what it renders to librdkafka."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kafka_coop.errors import InvalidInput, SettingsError
from kafka_coop.settings import (
    KNOWN_CONSUMER_KEYS,
    SECRET_KEYS,
    ConsumerSettings,
    parse_properties,
    validate_instance_id,
)
from kafka_coop.settings._model import TYPED_BY_KEY, TYPED_SETTINGS

BASE = {"bootstrap.servers": "broker:9092", "group.id": "orders"}
SECRET = "hunter2-s3cr3t"


def conf(**extra: Any) -> dict[str, Any]:
    """BASE plus librdkafka keys written with `_` for `.` (keyword arguments cannot hold dots)."""
    return {**BASE, **{k.replace("_", "."): v for k, v in extra.items()}}


# --- validation table ----------------------------------------------------------------------------
INVALID: list[tuple[str, dict[str, Any], str]] = [
    # 1. mixed eager + cooperative assignors
    (
        "mixed range+cooperative",
        conf(partition_assignment_strategy="range,cooperative-sticky"),
        "online migration between assignors with different protocol types is not supported",
    ),
    (
        "mixed roundrobin+cooperative",
        conf(partition_assignment_strategy="cooperative-sticky, roundrobin"),
        "KIP-429 two-bounce does not exist",
    ),
    ("unsupported assignor", conf(partition_assignment_strategy="sticky"), "librdkafka does not support"),
    (
        "java class name as assignor",
        conf(partition_assignment_strategy="org.apache.kafka.clients.consumer.RangeAssignor"),
        "librdkafka does not support",
    ),
    (
        "empty assignor list",
        conf(partition_assignment_strategy=" , "),
        "partition.assignment.strategy is empty",
    ),
    # 2. KIP-848 with classic-only keys; remote assignor without KIP-848
    (
        "consumer + partition.assignment.strategy",
        conf(group_protocol="consumer", partition_assignment_strategy="range"),
        "partition.assignment.strategy cannot be used with group.protocol=consumer",
    ),
    (
        "consumer + session.timeout.ms",
        conf(group_protocol="consumer", session_timeout_ms="45000"),
        "session.timeout.ms cannot be used with group.protocol=consumer",
    ),
    (
        "consumer + heartbeat.interval.ms",
        conf(group_protocol="consumer", heartbeat_interval_ms="3000"),
        "heartbeat.interval.ms cannot be used with group.protocol=consumer",
    ),
    (
        "consumer + group.protocol.type",
        conf(group_protocol="consumer", group_protocol_type="consumer"),
        "group.protocol.type cannot be used",
    ),
    (
        "remote assignor on classic",
        conf(group_remote_assignor="uniform"),
        "group.remote.assignor='uniform' needs group.protocol=consumer",
    ),
    (
        "blank remote assignor",
        conf(group_protocol="consumer", group_remote_assignor=" "),
        "group.remote.assignor is empty",
    ),
    (
        "remote assignor with a space",
        conf(group_protocol="consumer", group_remote_assignor="my assignor"),
        "is not an assignor name",
    ),
    ("unknown group protocol", conf(group_protocol="modern"), "is not a group protocol"),
    # 3. group.instance.id
    ("empty instance id", conf(group_instance_id=""), "group.instance.id is empty"),
    ("instance id '.'", conf(group_instance_id="."), "cannot be '.'"),
    ("instance id '..'", conf(group_instance_id=".."), "cannot be '..'"),
    ("instance id too long", conf(group_instance_id="a" * 250), "250 characters long"),
    (
        "instance id with space",
        conf(group_instance_id="orders 1"),
        "contains characters Kafka does not allow",
    ),
    ("instance id with slash", conf(group_instance_id="ns/orders-1"), "'/'"),
    # 5. required keys
    ("missing bootstrap.servers", {"group.id": "orders"}, "No bootstrap.servers is set"),
    (
        "blank bootstrap.servers",
        {"bootstrap.servers": " ", "group.id": "orders"},
        "No bootstrap.servers is set",
    ),
    ("missing group.id", {"bootstrap.servers": "broker:9092"}, "No group.id is set"),
    # values librdkafka cannot take
    ("non-integer timeout", conf(session_timeout_ms="45s"), "is not a whole number of milliseconds"),
    ("non-positive timeout", conf(max_poll_interval_ms="0"), "'max_poll_interval_ms' is invalid"),
    ("python callback", conf(error_cb=print), "is a Python callback"),
    # librdkafka: "`max.poll.interval.ms`must be >= `session.timeout.ms`" (classic protocol only)
    (
        "max poll below session timeout",
        conf(session_timeout_ms="10000", max_poll_interval_ms="7000"),
        "max.poll.interval.ms=7000 is shorter than session.timeout.ms=10000",
    ),
    (
        "max poll below librdkafka's default session timeout",
        conf(max_poll_interval_ms="30000"),
        "max.poll.interval.ms=30000 is shorter than session.timeout.ms=45000 (librdkafka's default)",
    ),
    (
        "session timeout above librdkafka's default max poll",
        conf(session_timeout_ms="400000"),
        "max.poll.interval.ms=300000 (librdkafka's default) is shorter than session.timeout.ms=400000",
    ),
    ("list value", conf(debug=["cgrp", "fetch"]), "has a list value"),
]


@pytest.mark.parametrize(("raw", "fragment"), [(c, f) for _, c, f in INVALID], ids=[n for n, _, _ in INVALID])
def test_invalid_conf_raises_one_settings_error_with_message_and_hint(
    raw: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(SettingsError) as info:
        ConsumerSettings.from_conf(raw)
    assert fragment in info.value.message
    assert info.value.hint


def test_mixed_assignors_hint_points_to_the_upgrade_plan() -> None:
    with pytest.raises(SettingsError) as info:
        ConsumerSettings.from_conf(conf(partition_assignment_strategy="range,cooperative-sticky"))
    assert "kafka-coop upgrade-plan GROUP --to cooperative" in (info.value.hint or "")


def test_a_python_callback_in_settings_points_to_where_callbacks_go() -> None:
    with pytest.raises(SettingsError) as info:
        ConsumerSettings.from_conf(conf(oauth_cb=print))
    assert "CoopConsumer" in (info.value.hint or "") and "callbacks=" in (info.value.hint or "")


@pytest.mark.parametrize("name", ["uniform", "range", "com.example.RackAwareAssignor", "my-assignor"])
def test_any_remote_assignor_name_the_broker_may_know_is_accepted(name: str) -> None:
    settings = ConsumerSettings.from_conf(conf(group_protocol="consumer", group_remote_assignor=name))
    assert settings.render()["group.remote.assignor"] == name


def test_max_poll_below_session_timeout_is_fine_under_kip848_where_the_broker_owns_the_session() -> None:
    settings = ConsumerSettings.from_conf(conf(group_protocol="consumer", max_poll_interval_ms="7000"))
    assert settings.max_poll_interval_ms == 7000


def test_max_poll_equal_to_session_timeout_is_accepted() -> None:
    settings = ConsumerSettings.from_conf(conf(session_timeout_ms="6000", max_poll_interval_ms="6000"))
    assert (settings.session_timeout_ms, settings.max_poll_interval_ms) == (6000, 6000)


def test_classic_only_key_hint_points_to_the_remote_assignor() -> None:
    with pytest.raises(SettingsError) as info:
        ConsumerSettings.from_conf(conf(group_protocol="consumer", session_timeout_ms="45000"))
    assert "group.remote.assignor" in (info.value.hint or "")
    assert "KIP-848" in info.value.message


TYPED_INVALID: list[tuple[str, dict[str, Any], str]] = [
    ("remote assignor with cooperative", {"remote_assignor": "uniform"}, "needs group.protocol=consumer"),
    (
        "remote assignor with eager",
        {"rebalance": "eager-range", "remote_assignor": "range"},
        "needs group.protocol=consumer",
    ),
    (
        "consumer with session timeout",
        {"rebalance": "consumer", "session_timeout_ms": 45000},
        "session.timeout.ms cannot be used",
    ),
    (
        "consumer with classic key in extra",
        {"rebalance": "consumer", "extra": {"heartbeat.interval.ms": "3000"}},
        "heartbeat.interval.ms cannot be used",
    ),
    (
        "consumer with assignors",
        {"rebalance": "consumer", "assignors": ("range", "roundrobin")},
        "partition.assignment.strategy cannot be used",
    ),
    ("mixed assignors field", {"assignors": ("range", "cooperative-sticky")}, "mixes eager and cooperative"),
    (
        "assignors disagree with rebalance",
        {"rebalance": "eager-roundrobin", "assignors": ("range", "roundrobin")},
        "disagrees with assignors",
    ),
    ("invalid instance id", {"instance_id": "a:b"}, "contains characters Kafka does not allow"),
    ("unknown rebalance", {"rebalance": "sticky"}, "'rebalance' is invalid"),
    ("typed key in extra", {"extra": {"group.instance.id": "x"}}, "has a typed field"),
    ("empty group id", {"group_id": ""}, "No group.id is set"),
]


@pytest.mark.parametrize(
    ("fields", "fragment"), [(f, m) for _, f, m in TYPED_INVALID], ids=[n for n, _, _ in TYPED_INVALID]
)
def test_invalid_typed_fields_raise_settings_error(fields: dict[str, Any], fragment: str) -> None:
    with pytest.raises(SettingsError) as info:
        ConsumerSettings(**{"bootstrap_servers": "broker:9092", "group_id": "orders", **fields})
    assert fragment in info.value.message
    assert info.value.hint


def test_settings_error_is_invalid_input_with_exit_code_2() -> None:
    with pytest.raises(InvalidInput) as info:
        ConsumerSettings.from_conf({"group.id": "orders"})
    assert info.value.exit_code == 2


# --- mapping a librdkafka dict -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("strategy", "rebalance", "protocol"),
    [
        ("range", "eager-range", "eager"),
        ("roundrobin", "eager-roundrobin", "eager"),
        ("cooperative-sticky", "cooperative-sticky", "cooperative"),
    ],
)
def test_assignment_strategy_maps_to_rebalance(strategy: str, rebalance: str, protocol: str) -> None:
    settings = ConsumerSettings.from_conf(conf(partition_assignment_strategy=strategy))
    assert (settings.rebalance, settings.protocol, settings.assignors) == (rebalance, protocol, None)


def test_several_eager_assignors_are_kept_in_order() -> None:
    settings = ConsumerSettings.from_conf(conf(partition_assignment_strategy="roundrobin, range"))
    assert settings.rebalance == "eager-roundrobin"
    assert settings.assignors == ("roundrobin", "range")
    assert settings.render()["partition.assignment.strategy"] == "roundrobin,range"


def test_a_conf_dict_without_strategy_keeps_librdkafkas_eager_default_so_drop_in_joins_eager_groups() -> None:
    settings = ConsumerSettings.from_conf(BASE)
    assert settings.protocol == "eager"
    assert settings.render()["partition.assignment.strategy"] == "range,roundrobin"


def test_typed_settings_default_to_cooperative_sticky() -> None:
    settings = ConsumerSettings(bootstrap_servers="b:9092", group_id="g")
    assert settings.render()["partition.assignment.strategy"] == "cooperative-sticky"


def test_group_protocol_consumer_maps_to_consumer_rebalance_with_remote_assignor() -> None:
    settings = ConsumerSettings.from_conf(conf(group_protocol="Consumer", group_remote_assignor="uniform"))
    assert (settings.rebalance, settings.protocol, settings.remote_assignor) == (
        "consumer",
        "consumer",
        "uniform",
    )
    assert settings.assignor_names == ()


def test_group_protocol_classic_is_the_default_and_not_rendered() -> None:
    settings = ConsumerSettings.from_conf(
        conf(group_protocol="classic", partition_assignment_strategy="range")
    )
    assert settings.protocol == "eager"
    assert "group.protocol" not in settings.render()


def test_typed_keys_become_fields() -> None:
    settings = ConsumerSettings.from_conf(
        conf(
            group_instance_id="orders-0",
            session_timeout_ms=45000,
            max_poll_interval_ms="300000",
            client_id="svc",
        )
    )
    assert settings.instance_id == "orders-0"
    assert settings.is_static
    assert (settings.session_timeout_ms, settings.max_poll_interval_ms) == (45000, 300000)
    assert settings.client_id == "svc"
    assert settings.extra == {}


def test_metadata_broker_list_is_an_alias_for_bootstrap_servers() -> None:
    settings = ConsumerSettings.from_conf({"metadata.broker.list": "a:1,b:2", "group.id": "g"})
    assert settings.bootstrap_servers == "a:1,b:2"


def test_booleans_and_numbers_become_librdkafka_strings() -> None:
    settings = ConsumerSettings.from_conf(conf(enable_auto_commit=False, fetch_min_bytes=1024))
    assert settings.extra == {"fetch.min.bytes": "1024"}
    assert settings.auto_commit is False
    assert settings.render()["enable.auto.commit"] == "false"


def test_commit_keys_are_rendered_as_given_and_never_invented() -> None:
    assert "enable.auto.commit" not in ConsumerSettings.from_conf(BASE).render()
    rendered = ConsumerSettings.from_conf(conf(enable_auto_offset_store="false")).render()
    assert rendered["enable.auto.offset.store"] == "false"
    assert "enable.auto.commit" not in rendered


def test_dynamic_member_is_not_static() -> None:
    assert not ConsumerSettings.from_conf(BASE).is_static


# --- unknown keys ---------------------------------------------------------------------------------
def test_unknown_key_warns_with_the_nearest_known_key() -> None:
    settings = ConsumerSettings.from_conf(conf(**{"sesion.timeout.ms": "45000"}))
    assert settings.warnings == ["Unknown setting 'sesion.timeout.ms'; did you mean 'session.timeout.ms'?"]
    assert settings.render()["sesion.timeout.ms"] == "45000"


def test_unknown_key_without_a_near_match_still_warns() -> None:
    [warning] = ConsumerSettings.from_conf(conf(**{"zzz.qqq": "1"})).warnings
    assert warning.startswith("Unknown setting 'zzz.qqq'")
    assert "did you mean" not in warning


def test_known_keys_do_not_warn() -> None:
    keys = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "debug": "cgrp",
        "auto.offset.reset": "earliest",
        "statistics.interval.ms": "1000",
        "fetch.max.bytes": "1000000",
        "queued.min.messages": "1000",
    }
    assert ConsumerSettings.from_conf({**BASE, **keys}).warnings == []


def test_known_keys_cover_global_and_consumer_properties() -> None:
    for key in (
        "sasl.username",
        "ssl.ca.location",
        "security.protocol",
        "debug",
        "statistics.interval.ms",
        "fetch.wait.max.ms",
        "queued.max.messages.kbytes",
        "auto.offset.reset",
        "isolation.level",
        "group.remote.assignor",
        "enable.auto.offset.store",
        "client.rack",
    ):
        assert key in KNOWN_CONSUMER_KEYS


# --- secrets -------------------------------------------------------------------------------------
def test_secrets_are_hidden_everywhere_except_render() -> None:
    settings = ConsumerSettings.from_conf({**BASE, **dict.fromkeys(SECRET_KEYS, SECRET)})
    for shown in (
        repr(settings),
        str(settings),
        str(settings.model_dump()),
        settings.model_dump_json(),
        str(settings.redacted()),
        str(settings.warnings),
    ):
        assert SECRET not in shown
    assert all(settings.redacted()[key] == "***" for key in SECRET_KEYS)
    assert all(settings.render()[key] == SECRET for key in SECRET_KEYS)


def test_required_secret_keys_are_named() -> None:
    assert {
        "sasl.password",
        "ssl.key.password",
        "ssl.keystore.password",
        "sasl.oauthbearer.client.secret",
        "ssl.key.pem",
        "sasl.oauthbearer.config",
    } <= SECRET_KEYS


def test_secret_passed_in_extra_is_moved_to_secrets() -> None:
    settings = ConsumerSettings(bootstrap_servers="b:1", group_id="g", extra={"sasl.password": SECRET})
    assert "sasl.password" not in settings.extra
    assert SECRET not in repr(settings)
    assert settings.render()["sasl.password"] == SECRET


def test_typed_secrets_accept_plain_strings() -> None:
    settings = ConsumerSettings.model_validate(
        {"bootstrap_servers": "b:1", "group_id": "g", "secrets": {"ssl.key.password": SECRET}}
    )
    assert SECRET not in settings.model_dump_json()
    assert settings.render()["ssl.key.password"] == SECRET


# --- render ----------------------------------------------------------------------------------------
def test_render_classic_has_a_deterministic_key_order() -> None:
    settings = ConsumerSettings.from_conf(
        {
            "sasl.password": SECRET,
            "fetch.min.bytes": "1",
            "max.poll.interval.ms": "300000",
            "group.instance.id": "o-1",
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "range",
            "client.id": "svc",
            "session.timeout.ms": "45000",
            **BASE,
        }
    )
    assert list(settings.render()) == [
        "bootstrap.servers",
        "group.id",
        "client.id",
        "partition.assignment.strategy",
        "group.instance.id",
        "session.timeout.ms",
        "max.poll.interval.ms",
        "auto.offset.reset",
        "fetch.min.bytes",
        "sasl.password",
    ]


def test_render_consumer_protocol_sets_group_protocol_and_no_strategy() -> None:
    rendered = ConsumerSettings(
        bootstrap_servers="b:1", group_id="g", rebalance="consumer", remote_assignor="range"
    ).render()
    assert rendered == {
        "bootstrap.servers": "b:1",
        "group.id": "g",
        "group.protocol": "consumer",
        "group.remote.assignor": "range",
    }


def test_render_then_from_conf_round_trips() -> None:
    settings = ConsumerSettings.from_conf(
        conf(
            partition_assignment_strategy="range,roundrobin",
            group_instance_id="o-2",
            sasl_password=SECRET,
            debug="cgrp",
        )
    )
    assert ConsumerSettings.from_conf(settings.render()) == settings


def test_typed_and_dict_construction_agree() -> None:
    typed = ConsumerSettings(
        bootstrap_servers="broker:9092",
        group_id="orders",
        rebalance="eager-range",
        instance_id="o-1",
        extra={"auto.offset.reset": "earliest"},
    )
    raw = ConsumerSettings.from_conf(
        conf(partition_assignment_strategy="range", group_instance_id="o-1", auto_offset_reset="earliest")
    )
    assert typed == raw


def test_typed_assignors_imply_rebalance() -> None:
    settings = ConsumerSettings(bootstrap_servers="b:1", group_id="g", assignors=("range", "roundrobin"))
    assert settings.rebalance == "eager-range"
    assert settings.assignor_names == ("range", "roundrobin")


def test_settings_are_immutable() -> None:
    settings = ConsumerSettings.from_conf(BASE)
    with pytest.raises(ValidationError, match="frozen"):
        setattr(settings, "group_id", "other")  # noqa: B010 - mypy's pydantic plugin rejects the plain form


# --- instance id rule ----------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["orders-0", "a", "A.b_c-9", "x" * 249, "..."])
def test_valid_instance_ids_pass(value: str) -> None:
    assert validate_instance_id(value) == value


# --- from_env ------------------------------------------------------------------------------------
def test_from_env_reads_named_variables_and_conf_keys() -> None:
    env = {
        "KAFKA_COOP_BOOTSTRAP_SERVERS": "broker:9092",
        "KAFKA_COOP_GROUP_ID": "orders",
        "KAFKA_COOP_REBALANCE": "eager-roundrobin",
        "KAFKA_COOP_INSTANCE_ID": "orders-1",
        "KAFKA_COOP_CONF_AUTO_OFFSET_RESET": "earliest",
        "KAFKA_COOP_CONF_SASL_PASSWORD": SECRET,
        "KAFKA_COOP_CONF_LOG__LEVEL": "7",
        "UNRELATED": "x",
    }
    settings = ConsumerSettings.from_env(env)
    assert settings.rebalance == "eager-roundrobin"
    assert settings.instance_id == "orders-1"
    assert settings.extra == {"auto.offset.reset": "earliest", "log_level": "7"}
    assert settings.render()["sasl.password"] == SECRET


def test_from_env_round_trips_with_render() -> None:
    original = ConsumerSettings.from_conf(conf(partition_assignment_strategy="range", fetch_min_bytes="10"))
    env = {"KAFKA_COOP_CONF_" + k.upper().replace(".", "_"): v for k, v in original.render().items()}
    assert ConsumerSettings.from_env(env) == original


def test_from_env_named_variables_win_over_conf_ones() -> None:
    env = {
        "KAFKA_COOP_CONF_BOOTSTRAP_SERVERS": "old:1",
        "KAFKA_COOP_BOOTSTRAP_SERVERS": "new:1",
        "KAFKA_COOP_GROUP_ID": "g",
        "KAFKA_COOP_CONF_PARTITION_ASSIGNMENT_STRATEGY": "range",
        "KAFKA_COOP_REBALANCE": "consumer",
        "KAFKA_COOP_REMOTE_ASSIGNOR": "uniform",
    }
    settings = ConsumerSettings.from_env(env)
    assert settings.bootstrap_servers == "new:1"
    assert (settings.rebalance, settings.remote_assignor) == ("consumer", "uniform")


def test_from_env_honours_a_custom_prefix() -> None:
    settings = ConsumerSettings.from_env({"APP_BOOTSTRAP_SERVERS": "b:1", "APP_GROUP_ID": "g"}, prefix="APP_")
    assert settings.group_id == "g"


def test_from_env_resolves_an_instance_id_template() -> None:
    env = {
        "KAFKA_COOP_BOOTSTRAP_SERVERS": "b:1",
        "KAFKA_COOP_GROUP_ID": "orders",
        "KAFKA_COOP_INSTANCE_ID": "{group}-{ordinal}",
        "POD_NAME": "orders-svc-4",
    }
    assert ConsumerSettings.from_env(env).instance_id == "orders-4"


def test_from_env_rejects_an_unknown_rebalance() -> None:
    env = {
        "KAFKA_COOP_BOOTSTRAP_SERVERS": "b:1",
        "KAFKA_COOP_GROUP_ID": "g",
        "KAFKA_COOP_REBALANCE": "sticky",
    }
    with pytest.raises(SettingsError, match="is not a rebalance mode"):
        ConsumerSettings.from_env(env)


def test_from_env_without_bootstrap_servers_names_the_variable() -> None:
    with pytest.raises(SettingsError) as info:
        ConsumerSettings.from_env({"KAFKA_COOP_GROUP_ID": "g"})
    assert "KAFKA_COOP_BOOTSTRAP_SERVERS" in (info.value.hint or "")


# --- from_properties -----------------------------------------------------------------------------
PROPERTIES = """\
# Java-style client config
! also a comment
bootstrap.servers=broker:9092
group.id : orders
partition.assignment.strategy   range,\\
    roundrobin
sasl.password=p\\=w\\u0021
security.protocol=SASL_SSL
"""


def test_from_properties_reads_text() -> None:
    settings = ConsumerSettings.from_properties(text=PROPERTIES)
    assert (settings.bootstrap_servers, settings.group_id) == ("broker:9092", "orders")
    assert settings.assignors == ("range", "roundrobin")
    assert settings.render()["sasl.password"] == "p=w!"
    assert settings.extra == {"security.protocol": "SASL_SSL"}


def test_from_properties_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(PROPERTIES, encoding="utf-8")
    assert ConsumerSettings.from_properties(path) == ConsumerSettings.from_properties(str(path))
    assert ConsumerSettings.from_properties(path) == ConsumerSettings.from_properties(text=PROPERTIES)


def test_from_properties_round_trips_with_render() -> None:
    original = ConsumerSettings.from_properties(text=PROPERTIES)
    text = "\n".join(f"{k}={v}" for k, v in original.render().items())
    assert ConsumerSettings.from_properties(text=text) == original


def test_missing_properties_file_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.properties"
    with pytest.raises(SettingsError, match=r"nope\.properties"):
        ConsumerSettings.from_properties(missing)


def test_unreadable_properties_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="cannot be read") as info:
        ConsumerSettings.from_properties(tmp_path)  # a directory
    assert str(tmp_path) in info.value.message


def test_read_properties_returns_the_raw_dict(tmp_path: Path) -> None:
    path = tmp_path / "security.properties"
    path.write_text("security.protocol=SSL\nssl.ca.location=/ca.pem\n", encoding="utf-8")
    assert ConsumerSettings.read_properties(path) == {
        "security.protocol": "SSL",
        "ssl.ca.location": "/ca.pem",
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=1", {"a": "1"}),
        ("a:1", {"a": "1"}),
        ("a 1", {"a": "1"}),
        ("a = 1", {"a": "1"}),
        ("  a=1  ", {"a": "1  "}),
        ("a", {"a": ""}),
        ("a=", {"a": ""}),
        ("a=b=c", {"a": "b=c"}),
        ("a\\=b=c", {"a=b": "c"}),
        ("a\\ b=c", {"a b": "c"}),
        ("# a=1\n! b=2\n\n   \nc=3", {"c": "3"}),
        ("a=1\\\n   2\\\n3", {"a": "123"}),
        ("a=1\\\\\nb=2", {"a": "1\\", "b": "2"}),
        ("a=x\\ty\\u00e9", {"a": "x\tyé"}),
        ("a=1\na=2", {"a": "2"}),
        ("a=1\\\n# not a comment", {"a": "1# not a comment"}),
        ("a=1\\", {"a": "1"}),
    ],
)
def test_parse_properties_follows_java_rules(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text) == expected


def test_a_properties_path_with_an_equals_sign_is_read_as_a_file(tmp_path: Path) -> None:
    """A directory like `env=prod/` is common; the path must not be mistaken for properties text."""
    folder = tmp_path / "env=prod"
    folder.mkdir()
    path = folder / "client.properties"
    path.write_text("bootstrap.servers=broker:9092\ngroup.id=orders\n", encoding="utf-8")
    assert ConsumerSettings.read_properties(str(path)) == {
        "bootstrap.servers": "broker:9092",
        "group.id": "orders",
    }


def test_read_properties_takes_a_path_or_text_never_both() -> None:
    with pytest.raises(TypeError):
        ConsumerSettings.read_properties()
    with pytest.raises(TypeError):
        ConsumerSettings.read_properties("a.properties", text="a=1")


# --- one key<->field table ------------------------------------------------------------------------
TABLE_SAMPLES = {
    "bootstrap.servers": "b:9092",
    "metadata.broker.list": "b:9092",
    "group.id": "g",
    "partition.assignment.strategy": "roundrobin",
    "group.protocol": "consumer",
    "group.remote.assignor": "uniform",
    "group.instance.id": "svc-0",
    "session.timeout.ms": "10000",
    "max.poll.interval.ms": "300000",
    "client.id": "c",
    "enable.auto.commit": "false",
    "enable.auto.offset.store": "false",
    "auto.commit.interval.ms": "1000",
}
NOT_A_CONF_KEY = {"extra", "secrets", "assignors"}  # the rest of the conf, and a refinement of `rebalance`


def test_every_typed_field_has_a_key_in_the_table_and_every_key_there_is_parsed_into_its_field() -> None:
    """A typed field or key left out of `TYPED_SETTINGS` fails here: the table is what parses, renders
    and names the field in the error hint for a typed key put in `extra`."""
    assert set(TABLE_SAMPLES) == set(TYPED_BY_KEY), "a sample for every key of the table"
    assert len(TYPED_BY_KEY) == len(TYPED_SETTINGS), "one row per key"
    assert set(ConsumerSettings.model_fields) - NOT_A_CONF_KEY == {row.field for row in TYPED_SETTINGS}
    for key, row in TYPED_BY_KEY.items():
        conf = {"bootstrap.servers": "x:1", "group.id": "x", key: TABLE_SAMPLES[key]}
        if key == "group.remote.assignor":
            conf["group.protocol"] = "consumer"
        if key == "metadata.broker.list":
            del conf["bootstrap.servers"]
        settings = ConsumerSettings.from_conf(conf)
        assert key not in settings.extra, key
        assert getattr(settings, row.field) != ConsumerSettings.model_fields[row.field].default, (key, row)
        rendered_key = "bootstrap.servers" if key == "metadata.broker.list" else key
        assert rendered_key in settings.render(), key
        with pytest.raises(SettingsError, match="typed field") as refused:
            ConsumerSettings(bootstrap_servers="x:1", group_id="x", extra={key: TABLE_SAMPLES[key]})
        assert f"Pass it as {row.field}=" in (refused.value.hint or ""), key


# librdkafka's accepted spellings of each typed key's value: a boolean is true/t/1 or false/f/0 in any
# case (rdkafka_conf.c); group.protocol any case; a strategy list with or without blanks.
SPELLINGS: dict[str, tuple[str, ...]] = {
    "bootstrap.servers": ("b:9092", "b1:9092,b2:9092"),
    "metadata.broker.list": ("b:9092",),
    "group.id": ("g",),
    "client.id": ("c",),
    "group.protocol": ("classic", "consumer", "CONSUMER"),
    "group.remote.assignor": ("uniform", "range"),
    "partition.assignment.strategy": ("range", "roundrobin", "cooperative-sticky", "range, roundrobin"),
    "group.instance.id": ("svc-0",),
    "session.timeout.ms": ("10000",),
    "max.poll.interval.ms": ("300000",),
    "enable.auto.commit": ("true", "t", "1", "TRUE", "false", "f", "0", "False"),
    "enable.auto.offset.store": ("T", "F"),
    "auto.commit.interval.ms": ("1000",),
}


@pytest.mark.parametrize(
    ("key", "value"), [(key, value) for key, values in SPELLINGS.items() for value in values]
)
def test_each_typed_key_round_trips_from_conf_through_settings_and_render_to_the_same_values(
    key: str, value: str
) -> None:
    """conf -> settings -> render -> settings: the rendered conf means what the given one did, in
    librdkafka's own words (a boolean renders as true/false, whichever spelling it came in)."""
    conf = {"bootstrap.servers": "x:1", "group.id": "x", key: value}
    if key == "group.remote.assignor":
        conf["group.protocol"] = "consumer"
    if key == "metadata.broker.list":
        del conf["bootstrap.servers"]
    settings = ConsumerSettings.from_conf(conf)
    rendered = settings.render()
    again = ConsumerSettings.from_conf(rendered)
    assert again == settings
    assert again.render() == rendered
    field = TYPED_BY_KEY[key].field
    assert getattr(again, field) == getattr(settings, field)
    if field in ("auto_commit", "auto_offset_store"):
        assert rendered[key] == ("true" if value.lower() in ("true", "t", "1") else "false")
    elif key == "metadata.broker.list":
        assert rendered["bootstrap.servers"] == value
    elif key not in ("group.protocol", "partition.assignment.strategy"):
        assert rendered[key] == value

"""ConsumerSettings: the one validated source of a librdkafka consumer configuration.

The model and its rules are in `_model`; the librdkafka key lists in `_keys`; the Java `.properties`
reader in `_properties`; the environment loader in `_env`. Import from here.
"""

from kafka_coop._vocab import CLASSIC_ONLY_KEYS, LIBRDKAFKA_DEFAULT_ASSIGNORS, RemoteAssignor
from kafka_coop.identity import validate_instance_id
from kafka_coop.settings._env import DEFAULT_ENV_PREFIX, ENV_CONF_INFIX, conf_from_env
from kafka_coop.settings._keys import CALLBACK_KEYS, KNOWN_CONSUMER_KEYS, SECRET_KEYS, TYPED_KEYS
from kafka_coop.settings._model import (
    DEFAULT_REBALANCE,
    GROUP_PROTOCOLS,
    REDACTED,
    UPGRADE_PLAN_HINT,
    ConsumerSettings,
    Rebalance,
    parse_assignors,
)
from kafka_coop.settings._properties import parse_properties, read_properties

__all__ = [
    "CALLBACK_KEYS",
    "CLASSIC_ONLY_KEYS",
    "DEFAULT_ENV_PREFIX",
    "DEFAULT_REBALANCE",
    "ENV_CONF_INFIX",
    "GROUP_PROTOCOLS",
    "KNOWN_CONSUMER_KEYS",
    "LIBRDKAFKA_DEFAULT_ASSIGNORS",
    "REDACTED",
    "SECRET_KEYS",
    "TYPED_KEYS",
    "UPGRADE_PLAN_HINT",
    "ConsumerSettings",
    "Rebalance",
    "RemoteAssignor",
    "conf_from_env",
    "parse_assignors",
    "parse_properties",
    "read_properties",
    "validate_instance_id",
]

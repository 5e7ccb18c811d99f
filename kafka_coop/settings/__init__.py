"""ConsumerSettings: the one validated source of a librdkafka consumer configuration.

The model and its rules are in `_model`; the librdkafka key lists in `_keys`; the Java `.properties`
reader in `_properties`; the Java-only keys librdkafka refuses in `_java_keys`; the environment loader
in `_env`. Import from here: the face exports what callers use.
"""

from kafka_coop.identity import validate_instance_id
from kafka_coop.settings._java_keys import refuse_java_only
from kafka_coop.settings._keys import CALLBACK_KEYS, KNOWN_CONSUMER_KEYS, SECRET_KEYS
from kafka_coop.settings._model import ConsumerSettings
from kafka_coop.settings._properties import parse_properties, read_properties

__all__ = [
    "CALLBACK_KEYS",
    "KNOWN_CONSUMER_KEYS",
    "SECRET_KEYS",
    "ConsumerSettings",
    "parse_properties",
    "read_properties",
    "refuse_java_only",
    "validate_instance_id",
]

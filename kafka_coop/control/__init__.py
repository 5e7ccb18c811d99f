"""Live reconfiguration: the control topic the rollout runner writes and kafka-coop members follow.

The record and its rules are pure (`_record`); publishing a record and reading the members' answers
(their manifests' `control` field) talk to Kafka and load on first use. docs/consumer.md "Live
reconfiguration" states the design.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_coop._lazy import lazy_attributes
from kafka_coop.control._record import (
    CONTROL_TOPIC,
    CONTROL_TOPIC_ACLS,
    CONTROL_TOPIC_CONFIG,
    CONTROL_TOPIC_PARTITIONS,
    RECONFIGURABLE_KEYS,
    REMOVE,
    ControlKind,
    ControlOptions,
    ControlRecord,
    Judgement,
    apply_settings,
    judge,
    member_conf,
    parse_control,
)
from kafka_coop.manifest import ControlOutcome

if TYPE_CHECKING:
    from kafka_coop.control._kafka import ControlFeed, ControlFollower, publish_control, read_outcomes

# name -> the module that defines it, imported on first use (it needs confluent_kafka)
_LAZY: dict[str, str] = {
    "ControlFeed": "kafka_coop.control._kafka",
    "ControlFollower": "kafka_coop.control._kafka",
    "publish_control": "kafka_coop.control._kafka",
    "read_outcomes": "kafka_coop.control._kafka",
}

__getattr__ = lazy_attributes(__name__, _LAZY)

__all__ = [
    "CONTROL_TOPIC",
    "CONTROL_TOPIC_ACLS",
    "CONTROL_TOPIC_CONFIG",
    "CONTROL_TOPIC_PARTITIONS",
    "RECONFIGURABLE_KEYS",
    "REMOVE",
    "ControlFeed",
    "ControlFollower",
    "ControlKind",
    "ControlOptions",
    "ControlOutcome",
    "ControlRecord",
    "Judgement",
    "apply_settings",
    "judge",
    "member_conf",
    "parse_control",
    "publish_control",
    "read_outcomes",
]

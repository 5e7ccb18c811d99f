"""Membership tooling: removing static members that stopped (KIP-345's admin action) and watching the
manifest topic for the moment they close.

Which members to remove, and when to refuse, is pure and loads with the package; the LeaveGroup client
(kafka-python) and the manifest watch (confluent_kafka) load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_coop._lazy import lazy_attributes
from kafka_coop.membership._removal import (
    RUNNING_WITHIN_S,
    choose_members,
    refuse_unobservable,
    still_running,
)

if TYPE_CHECKING:
    from kafka_coop._kafka_python import kafka_python_conf
    from kafka_coop.membership._hold import GroupHold, hold_across, hold_instance_id
    from kafka_coop.membership._leave import LeaveGroupClient
    from kafka_coop.membership._watch import ManifestWatch

# name -> the shell module that defines it, imported on first use
_LAZY: dict[str, str] = {
    "LeaveGroupClient": "kafka_coop.membership._leave",
    "GroupHold": "kafka_coop.membership._hold",
    "hold_across": "kafka_coop.membership._hold",
    "hold_instance_id": "kafka_coop.membership._hold",
    "kafka_python_conf": "kafka_coop._kafka_python",
    "ManifestWatch": "kafka_coop.membership._watch",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "RUNNING_WITHIN_S",
    "GroupHold",
    "LeaveGroupClient",
    "ManifestWatch",
    "choose_members",
    "hold_across",
    "hold_instance_id",
    "kafka_python_conf",
    "refuse_unobservable",
    "still_running",
]

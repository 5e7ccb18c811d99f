"""The control record: one instruction from the rollout runner to the kafka-coop members of a group."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kafka_coop.manifest import TopicAcl

CONTROL_VERSION: Final = 1
CONTROL_TOPIC: Final = "_kafka_coop_control"
# Compacted and keyed by group: the latest instruction per group survives. One partition: a few records
# per rollout step, and every member reads the whole topic (it filters by group), so nothing is gained
# by more. Tombstones are kept a day, like the manifest topic's.
CONTROL_TOPIC_PARTITIONS: Final = 1
CONTROL_TOPIC_CONFIG: Final = {
    "cleanup.policy": "compact",
    "segment.ms": "3600000",
    "min.cleanable.dirty.ratio": "0.1",
    "delete.retention.ms": "86400000",
}

# Only the operator's principal writes; every member reads. A member's own principal has no WRITE, so a
# compromised or buggy service cannot reconfigure its peers (the broker refuses the produce).
CONTROL_TOPIC_ACLS: Final = (
    TopicAcl(
        who="the operator's principal (kafka-coop rollout run, and nothing else)",
        operations=("DESCRIBE", "WRITE"),
        why="write one instruction per group and step",
    ),
    TopicAcl(
        who="members (CoopConsumer(control=True) / CoopAIOConsumer(control=True)); never WRITE",
        operations=("DESCRIBE", "READ"),
        why="follow the instructions for their group (assigned partitions: no group, no commits)",
    ),
)

# The librdkafka settings a migration path in migrations/ sets or removes (a phase's `config`:
# group_protocol, assignors, remote_assignor, and its `remove` lists); tests/unit/control checks this
# against the data. Nothing else may change live: a record naming any other key is refused.
RECONFIGURABLE_KEYS: Final = frozenset(
    {
        "group.protocol",
        "partition.assignment.strategy",
        "group.remote.assignor",
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "group.protocol.type",
    }
)
# A setting whose value is this is removed from the member's conf (librdkafka's default applies), as a
# phase's `remove` list says: e.g. partition.assignment.strategy under group.protocol=consumer.
REMOVE: Final = ""

ControlKind = Literal["reconfigure", "cutover-close", "cutover-rejoin"]


class ControlRecord(BaseModel):
    """One step of a plan for one group, as the runner writes it and every member reads it.

    `step` is the position in the walk, strictly increasing within a plan: a member applies a record
    only if its step is above the last it applied for that plan. `members` selects by group.instance.id
    or client.id; None means every kafka-coop member of the group. `settings` maps librdkafka keys to
    values (REMOVE drops the key); a key outside RECONFIGURABLE_KEYS is parsed, then refused by the member.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    v: Literal[1] = CONTROL_VERSION
    plan_id: str = Field(min_length=1)
    group: str = Field(min_length=1)
    step: int = Field(ge=0)
    phase: str
    kind: ControlKind
    members: list[str] | None = None
    settings: dict[str, str] = Field(default_factory=dict)
    issued_at_ms: int

    @property
    def key(self) -> bytes:
        return self.group.encode()

    def addresses(self, instance_id: str | None, client_id: str | None) -> bool:
        """Whether this record is for the member with these ids."""
        if self.members is None:
            return True
        return any(selector in (instance_id, client_id) for selector in self.members if selector)

    def refused_keys(self) -> list[str]:
        """The settings this record names that may not change live, sorted."""
        return sorted(set(self.settings) - RECONFIGURABLE_KEYS)


def parse_control(value: bytes | None) -> ControlRecord | None:
    """None for a tombstone and for anything that is not a version-1 control record."""
    if value is None:
        return None
    try:
        return ControlRecord.model_validate(json.loads(value))
    except (ValueError, ValidationError, UnicodeDecodeError):
        return None


def apply_settings(conf: Mapping[str, object], settings: Mapping[str, str]) -> dict[str, object]:
    """`conf` with `settings` applied: a REMOVE value drops the key, any other value sets it."""
    updated = dict(conf)
    for key, value in settings.items():
        if value == REMOVE:
            updated.pop(key, None)
        else:
            updated[key] = value
    return updated

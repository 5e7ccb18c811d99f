"""The control record: one instruction from the rollout runner to the kafka-coop members of a group."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kafka_coop._vocab import CLASSIC_ONLY_KEYS
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


def member_conf(conf: Mapping[str, str], settings: Mapping[str, str]) -> dict[str, str]:
    """The conf a member rebuilds its client with: `settings` applied (`apply_settings`), and the keys the
    new protocol refuses dropped unless the record set them itself: the classic-only keys under
    group.protocol=consumer (a classic member's conf always names its strategy), group.remote.assignor
    under classic. librdkafka would refuse either, so a record that means "switch protocol" need not
    list what every member happens to carry."""
    updated = {k: str(v) for k, v in apply_settings(conf, settings).items()}
    if updated.get("group.protocol", "classic").strip().lower() == "consumer":
        drop: tuple[str, ...] = CLASSIC_ONLY_KEYS
    else:
        drop = ("group.remote.assignor",)
    for key in drop:
        if key not in settings:
            updated.pop(key, None)
    return updated


class ControlOptions(BaseModel):
    """How a member follows the control topic (`CoopConsumer(conf, control=ControlOptions(...))`;
    `control=True` takes these defaults)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    topic: str = CONTROL_TOPIC
    # Explicit marks: how long a reconfiguration waits for the records in flight to be marked done
    # before it commits what is finished and closes the client (the rest is fetched again: never lost).
    drain_s: float = Field(default=10.0, ge=0)
    # How long the rebuilt client may take to its first assignment before the member goes back to its
    # old settings and answers `refused` (a refused KIP-848 conversion fails the client at once).
    rejoin_s: float = Field(default=60.0, gt=0)
    # How long a member closed for a cutover waits for its `cutover-rejoin` before it rejoins on its old
    # settings and answers `refused`: a runner that died never leaves the fleet down longer than this.
    cutover_wait_s: float = Field(default=120.0, gt=0)


Verdict = Literal["apply", "refuse", "ignore"]


class Judgement(BaseModel):
    """What a member does with one record: apply it, refuse it (answered on its manifest), or ignore it
    (stale, replayed, not for it: logged once, answered nowhere)."""

    model_config = ConfigDict(frozen=True)

    verdict: Verdict
    reason: str | None = None


def judge(
    record: ControlRecord,
    *,
    group: str,
    instance_id: str | None,
    client_id: str | None,
    answered: Mapping[str, int],
    waiting: tuple[str, int] | None,
) -> Judgement:
    """The rules, in order. `answered`: plan id -> the last step this member answered (applied or
    refused); `waiting`: the (plan id, step) of the cutover-close this member is closed for, if any."""
    if record.group != group:
        return Judgement(verdict="ignore", reason=f"the record is for group {record.group!r}")
    if not record.addresses(instance_id, client_id):
        return Judgement(verdict="ignore", reason="the record is not addressed to this member")
    last = answered.get(record.plan_id)
    if last is not None and record.step <= last:
        return Judgement(
            verdict="ignore",
            reason=f"stale or replayed: step {record.step} of plan {record.plan_id!r}, answered {last}",
        )
    if waiting is not None:
        plan, step = waiting
        if record.kind != "cutover-rejoin" or record.plan_id != plan or record.step != step + 1:
            return Judgement(
                verdict="ignore",
                reason=f"closed for the cutover of plan {plan!r}: only its rejoin, step {step + 1}, counts",
            )
    elif record.kind == "cutover-rejoin":
        return Judgement(
            verdict="ignore", reason="a cutover-rejoin, but this member is not closed for a cutover"
        )
    refused = record.refused_keys()
    if refused:
        allowed = ", ".join(sorted(RECONFIGURABLE_KEYS))
        return Judgement(
            verdict="refuse", reason=f"{', '.join(refused)} may not change live (only {allowed})"
        )
    return Judgement(verdict="apply")

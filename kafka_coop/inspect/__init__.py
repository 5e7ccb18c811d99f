"""Group inspection: one look at a live group (GroupSnapshot) with the source of every inferred fact.

The model and the inference are pure and load with the package; the gathering shell (`take_snapshot`
and friends, which talk to the cluster through confluent_kafka) loads on first use, so the pure core
(planner, gate) can import this face without importing confluent_kafka.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kafka_coop.inspect._infer import (
    MemberInput,
    broker_facts,
    infer_generation,
    infer_members,
    match_manifests,
    version_at_least,
)
from kafka_coop.inspect._model import (
    BrokerFacts,
    Fact,
    GroupSnapshot,
    MemberSnapshot,
    PartitionLag,
    Source,
)

if TYPE_CHECKING:
    from kafka_coop.inspect._gather import (
        ReadToEnd,
        lag_sample,
        list_groups,
        read_manifest_keys,
        read_manifests,
        snapshot_with_lag_trend,
        take_snapshot,
    )

_SHELL = frozenset(
    {
        "ReadToEnd",
        "lag_sample",
        "list_groups",
        "read_manifest_keys",
        "read_manifests",
        "snapshot_with_lag_trend",
        "take_snapshot",
    }
)


def __getattr__(name: str) -> Any:
    if name in _SHELL:
        value = getattr(importlib.import_module("kafka_coop.inspect._gather"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BrokerFacts",
    "Fact",
    "GroupSnapshot",
    "MemberInput",
    "MemberSnapshot",
    "PartitionLag",
    "ReadToEnd",
    "Source",
    "broker_facts",
    "infer_generation",
    "infer_members",
    "lag_sample",
    "list_groups",
    "match_manifests",
    "read_manifest_keys",
    "read_manifests",
    "snapshot_with_lag_trend",
    "take_snapshot",
    "version_at_least",
]

"""Group inspection: one look at a live group (GroupSnapshot), with the source of every inferred fact,
and Burrow's lag evaluation over several looks.

The model, the inference and the lag rules are pure and load with the package; the reading shell
(`take_snapshot` and friends, which talk to the cluster through confluent_kafka) loads on first use, so
the planner and the gate can import this face without loading a client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_coop._lazy import lazy_attributes
from kafka_coop.inspection._infer import (
    MemberAnswers,
    broker_facts,
    group_kind,
    infer_generation,
    infer_members,
    version_at_least,
)
from kafka_coop.inspection._lag import (
    LAG_RANK,
    GroupLagStatus,
    OffsetSample,
    evaluate_group,
    evaluate_partition,
    lag_series,
)
from kafka_coop.inspection._model import (
    BrokerFacts,
    CoordinatorView,
    Fact,
    GroupSnapshot,
    MemberSnapshot,
    PartitionLag,
)

if TYPE_CHECKING:
    from kafka_coop.inspection._gather import lag_sample, list_groups, snapshot_with_lag_trend, take_snapshot
    from kafka_coop.inspection._manifests import ReadToEnd, read_manifest_keys

# name -> the shell module that defines it, imported on first use
_LAZY: dict[str, str] = {
    "lag_sample": "kafka_coop.inspection._gather",
    "list_groups": "kafka_coop.inspection._gather",
    "snapshot_with_lag_trend": "kafka_coop.inspection._gather",
    "take_snapshot": "kafka_coop.inspection._gather",
    "ReadToEnd": "kafka_coop.inspection._manifests",
    "read_manifest_keys": "kafka_coop.inspection._manifests",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "LAG_RANK",
    "BrokerFacts",
    "CoordinatorView",
    "Fact",
    "GroupLagStatus",
    "GroupSnapshot",
    "MemberAnswers",
    "MemberSnapshot",
    "OffsetSample",
    "PartitionLag",
    "ReadToEnd",
    "broker_facts",
    "evaluate_group",
    "evaluate_partition",
    "group_kind",
    "infer_generation",
    "infer_members",
    "lag_sample",
    "lag_series",
    "list_groups",
    "read_manifest_keys",
    "snapshot_with_lag_trend",
    "take_snapshot",
    "version_at_least",
]

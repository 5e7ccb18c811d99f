"""Group inspection: one look at a live group (GroupSnapshot) with the source of every inferred fact."""

from kafka_coop.inspect._gather import (
    ReadToEnd,
    lag_sample,
    list_groups,
    read_manifests,
    snapshot_with_lag_trend,
    take_snapshot,
)
from kafka_coop.inspect._infer import (
    COOPERATIVE_ASSIGNORS,
    EAGER_ONLY_ASSIGNORS,
    MemberInput,
    broker_facts,
    infer_generation,
    infer_members,
    match_manifests,
    version_at_least,
)
from kafka_coop.inspect._model import (
    BrokerFacts,
    ClientFamily,
    Fact,
    GroupSnapshot,
    MemberSnapshot,
    MemberType,
    PartitionLag,
    RebalanceProtocol,
    Source,
)

__all__ = [
    "COOPERATIVE_ASSIGNORS",
    "EAGER_ONLY_ASSIGNORS",
    "BrokerFacts",
    "ClientFamily",
    "Fact",
    "GroupSnapshot",
    "MemberInput",
    "MemberSnapshot",
    "MemberType",
    "PartitionLag",
    "ReadToEnd",
    "RebalanceProtocol",
    "Source",
    "broker_facts",
    "infer_generation",
    "infer_members",
    "lag_sample",
    "list_groups",
    "match_manifests",
    "read_manifests",
    "snapshot_with_lag_trend",
    "take_snapshot",
    "version_at_least",
]

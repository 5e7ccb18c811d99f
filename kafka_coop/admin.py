"""Admin reads and small admin writes against a live cluster (shell; owns confluent_kafka.admin).

Everything returned is a kafka-coop model, so callers above this module never see confluent-kafka
types. Connection trouble becomes `ClusterUnavailable` (exit 3) with one sentence and a hint.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any, Literal

from confluent_kafka import ConsumerGroupState, ConsumerGroupType, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from pydantic import BaseModel, ConfigDict

from kafka_coop._vocab import SeenMemberType
from kafka_coop.errors import ClusterUnavailable, InvalidInput

DEFAULT_ADMIN_TIMEOUT_S = 10.0

GroupState = Literal["stable", "preparing_rebalance", "completing_rebalance", "empty", "dead", "unknown"]
GroupType = SeenMemberType

_STATES: dict[Any, GroupState] = {
    ConsumerGroupState.STABLE: "stable",
    ConsumerGroupState.PREPARING_REBALANCING: "preparing_rebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "completing_rebalance",
    ConsumerGroupState.EMPTY: "empty",
    ConsumerGroupState.DEAD: "dead",
}
_TYPES: dict[Any, GroupType] = {ConsumerGroupType.CLASSIC: "classic", ConsumerGroupType.CONSUMER: "consumer"}

TopicPartitionKey = tuple[str, int]

_AUTH_ERRORS = frozenset({KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED})
_TOPIC_AUTH_ERRORS = frozenset({KafkaError.TOPIC_AUTHORIZATION_FAILED})
_REFUSED_TOPIC_ERRORS = frozenset(
    {
        KafkaError.INVALID_REPLICATION_FACTOR,
        KafkaError.INVALID_PARTITIONS,
        KafkaError.INVALID_CONFIG,
        KafkaError.POLICY_VIOLATION,
        KafkaError.TOPIC_EXCEPTION,
    }
)
_TRANSIENT_ERRORS = frozenset(
    {
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
    }
)


class LiveMember(BaseModel):
    model_config = ConfigDict(frozen=True)

    member_id: str
    client_id: str
    host: str
    instance_id: str | None
    assignment: tuple[TopicPartitionKey, ...]
    target_assignment: tuple[TopicPartitionKey, ...] | None = None


class LiveGroup(BaseModel):
    """One DescribeConsumerGroups answer, in our own types."""

    model_config = ConfigDict(frozen=True)

    group_id: str
    state: GroupState
    type: GroupType
    assignor: str
    coordinator: int | None
    members: tuple[LiveMember, ...]

    @property
    def instance_ids(self) -> list[str]:
        return [m.instance_id for m in self.members if m.instance_id]


class RawMember(BaseModel):
    """One member as DescribeGroups v0 (the deprecated list_groups) returns it: with its protocol bytes."""

    model_config = ConfigDict(frozen=True)

    member_id: str
    client_id: str
    host: str
    subscription: bytes
    assignment: bytes


class RawGroup(BaseModel):
    """The classic-protocol view of a group; KIP-848 and converted groups come back `Dead` and empty."""

    model_config = ConfigDict(frozen=True)

    state: str
    protocol_type: str
    protocol: str
    members: tuple[RawMember, ...]


class ListedGroup(BaseModel):
    model_config = ConfigDict(frozen=True)

    group_id: str
    type: GroupType
    state: GroupState
    is_simple: bool


class PartitionOffsets(BaseModel):
    model_config = ConfigDict(frozen=True)

    topic: str
    partition: int
    committed: int | None
    end: int | None


def _quiet_logger() -> logging.Logger:
    logger = logging.getLogger("kafka_coop.admin.librdkafka")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


def _partitions(assignment: Any) -> tuple[TopicPartitionKey, ...]:
    if assignment is None:
        return ()
    return tuple(sorted((tp.topic, tp.partition) for tp in assignment.topic_partitions))


def _unreachable(bootstrap: str, error: object) -> ClusterUnavailable:
    return ClusterUnavailable(
        f"Could not reach the Kafka cluster at {bootstrap}: {error}.",
        hint="Check --bootstrap-server and that the broker is running (`kafka-coop sandbox status`).",
    )


class ClusterAdmin:
    """The admin connection of one command or test: reads groups, creates topics."""

    def __init__(self, bootstrap: str, conf: Mapping[str, str] | None = None) -> None:
        settings: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": _quiet_logger()}
        settings.update(conf or {})
        self.bootstrap = bootstrap
        self.client = AdminClient(settings)

    def describe_group(self, group: str, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S) -> LiveGroup:
        """Describe one group; an unknown group comes back as state `dead` with no members."""
        return _describe_group(self, group, timeout_s)

    def describe_groups(
        self, groups: list[str], *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S
    ) -> dict[str, LiveGroup]:
        """Many groups in one request batch (describe --all); unknown ones come back `dead`."""
        if not groups:
            return {}
        futures = self.client.describe_consumer_groups(groups, request_timeout=timeout_s)
        out: dict[str, LiveGroup] = {}
        for group, future in futures.items():
            try:
                out[group] = _live_group(future.result())
            except KafkaException:
                out[group] = _describe_group(self, group, timeout_s)  # retries transient errors itself
        return out

    def list_groups(self, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S) -> list[ListedGroup]:
        """Every group the principal may see, both protocols (ListGroups v5)."""
        try:
            result = self.client.list_consumer_groups(request_timeout=timeout_s).result()
        except KafkaException as exc:
            raise _unreachable(self.bootstrap, exc.args[0] if exc.args else exc) from None
        return sorted(
            (
                ListedGroup(
                    group_id=g.group_id,
                    type=_TYPES.get(g.type, "unknown"),
                    state=_STATES.get(g.state, "unknown"),
                    is_simple=bool(g.is_simple_consumer_group),
                )
                for g in result.valid
            ),
            key=lambda g: g.group_id,
        )

    def raw_group(self, group: str, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S) -> RawGroup | None:
        """Member protocol bytes, which describe_consumer_groups drops; None if not classic.

        (docs/protocols.md "What can be seen of a live group")
        """
        import warnings

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                listed = self.client.list_groups(group=group, timeout=timeout_s)
        except KafkaException as exc:
            raise _unreachable(self.bootstrap, exc.args[0] if exc.args else exc) from None
        for g in listed:
            if g.id == group and g.error is None and g.state not in ("Dead", ""):
                return RawGroup(
                    state=g.state,
                    protocol_type=g.protocol_type or "",
                    protocol=g.protocol or "",
                    members=tuple(
                        RawMember(
                            member_id=m.id,
                            client_id=m.client_id,
                            host=m.client_host,
                            subscription=bytes(m.metadata or b""),
                            assignment=bytes(m.assignment or b""),
                        )
                        for m in g.members
                    ),
                )
        return None

    def broker_configs(self, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S) -> tuple[int, dict[str, str]]:
        """(broker id, its configs) of one broker of the cluster: what the KIP-848 gates read."""
        from confluent_kafka.admin import ConfigResource, ResourceType  # type: ignore[attr-defined]

        try:
            cluster = self.client.describe_cluster(request_timeout=timeout_s).result()
            broker = cluster.controller.id if cluster.controller is not None else cluster.nodes[0].id
            resource = ConfigResource(ResourceType.BROKER, str(broker))
            entries = self.client.describe_configs([resource], request_timeout=timeout_s)[resource].result()
        except KafkaException as exc:
            raise _unreachable(self.bootstrap, exc.args[0] if exc.args else exc) from None
        return broker, {name: entry.value for name, entry in entries.items() if entry.value is not None}

    def offsets(self, group: str, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S) -> list[PartitionOffsets]:
        """Committed offset and log end offset of every partition the group has committed."""
        try:
            return self._offsets(group, timeout_s)
        except KafkaException as exc:
            raise _unreachable(self.bootstrap, exc.args[0] if exc.args else exc) from None

    def offsets_if_allowed(
        self, group: str, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S
    ) -> list[PartitionOffsets] | None:
        """Like `offsets`, but None when the principal may not read them (the caller says why its own
        way, e.g. with describe_group's "not authorized" sentence); unreachable is still an error."""
        try:
            return self._offsets(group, timeout_s)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else exc
            if isinstance(err, KafkaError) and err.code() in _AUTH_ERRORS | _TOPIC_AUTH_ERRORS:
                return None
            raise _unreachable(self.bootstrap, err) from None

    def _offsets(self, group: str, timeout_s: float) -> list[PartitionOffsets]:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

        request = [ConsumerGroupTopicPartitions(group)]
        futures = self.client.list_consumer_group_offsets(request, request_timeout=timeout_s)
        committed = futures[group].result()
        parts = [tp for tp in committed.topic_partitions if tp.error is None]
        if not parts:
            return []
        specs = {TopicPartition(tp.topic, tp.partition): OffsetSpec.latest() for tp in parts}  # type: ignore[no-untyped-call]
        ends = self.client.list_offsets(specs, request_timeout=timeout_s)
        end_of = {(tp.topic, tp.partition): f.result().offset for tp, f in ends.items()}
        return sorted(
            (
                PartitionOffsets(
                    topic=tp.topic,
                    partition=tp.partition,
                    committed=tp.offset if tp.offset >= 0 else None,
                    end=end_of.get((tp.topic, tp.partition)),
                )
                for tp in parts
            ),
            key=lambda p: (p.topic, p.partition),
        )

    def ensure_topic(
        self, topic: str, partitions: int, *, config: Mapping[str, str] | None = None, timeout_s: float = 30.0
    ) -> None:
        """Create `topic` with `partitions` partitions (and topic `config`) unless it exists already."""
        _ensure_topic(self, topic, partitions, dict(config or {}), timeout_s)

    def create_topic(
        self,
        topic: str,
        partitions: int,
        *,
        replication_factor: int = -1,
        config: Mapping[str, str] | None = None,
        timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S,
    ) -> bool:
        """Create `topic`; False if it existed already. -1 replicas: the broker's default.replication.factor.

        Refusals are one sentence: not authorized (exit 3), a replication factor or config the cluster
        refuses (exit 2).
        """
        futures = self.client.create_topics(
            [
                NewTopic(
                    topic,
                    num_partitions=partitions,
                    replication_factor=replication_factor,
                    config=dict(config or {}),
                )
            ],
            request_timeout=timeout_s,
        )
        try:
            futures[topic].result()
        except KafkaException as exc:
            err = exc.args[0] if exc.args else exc
            code = err.code() if isinstance(err, KafkaError) else None
            if code == KafkaError.TOPIC_ALREADY_EXISTS:
                return False
            if code in _AUTH_ERRORS | _TOPIC_AUTH_ERRORS:
                raise ClusterUnavailable(
                    f"Not authorized to create topic {topic!r}.",
                    hint="Grant CREATE on the topic or the cluster, or have an administrator run it.",
                ) from None
            if code in _REFUSED_TOPIC_ERRORS:
                why = str(err.str() if isinstance(err, KafkaError) else err).rstrip(".")
                raise InvalidInput(f"The cluster refused topic {topic!r}: {why}.") from None
            raise _unreachable(self.bootstrap, err) from None
        return True

    def topic_config(
        self, topic: str, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S
    ) -> dict[str, str] | None:
        """The topic's effective configs, or None if it does not exist (or may not be described)."""
        from confluent_kafka.admin import ConfigResource, ResourceType  # type: ignore[attr-defined]

        resource = ConfigResource(ResourceType.TOPIC, topic)
        try:
            entries = self.client.describe_configs([resource], request_timeout=timeout_s)[resource].result()
        except KafkaException as exc:
            err = exc.args[0] if exc.args else exc
            code = err.code() if isinstance(err, KafkaError) else None
            if code in _TOPIC_AUTH_ERRORS | {KafkaError.UNKNOWN_TOPIC_OR_PART}:
                return None
            raise _unreachable(self.bootstrap, err) from None
        return {name: entry.value for name, entry in entries.items() if entry.value is not None}

    def topic_layout(
        self, topic: str, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S
    ) -> tuple[int, int] | None:
        """(partitions, replicas of partition 0) of an existing topic; None if it is not there."""
        try:
            md = self.client.list_topics(topic, timeout=timeout_s)
        except KafkaException as exc:
            raise _unreachable(self.bootstrap, exc.args[0] if exc.args else exc) from None
        info = md.topics.get(topic)
        if info is None or info.error is not None or not info.partitions:
            return None
        first = info.partitions[min(info.partitions)]
        return len(info.partitions), len(first.replicas)


def _describe_group(admin: ClusterAdmin, group: str, timeout_s: float) -> LiveGroup:
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = max(1.0, deadline - time.monotonic())
        futures = admin.client.describe_consumer_groups([group], request_timeout=remaining)
        try:
            desc = futures[group].result()
            break
        except KafkaException as exc:
            err = exc.args[0] if exc.args else exc
            code = err.code() if isinstance(err, KafkaError) else None
            if code == KafkaError.GROUP_ID_NOT_FOUND:
                return LiveGroup(
                    group_id=group, state="dead", type="unknown", assignor="", coordinator=None, members=()
                )
            if code in _AUTH_ERRORS:
                raise ClusterUnavailable(
                    f"Not authorized to describe group {group!r}.",
                    hint="Grant DESCRIBE on the group to the principal in --command-config.",
                ) from None
            if code in _TRANSIENT_ERRORS and time.monotonic() < deadline:
                time.sleep(0.2)  # the coordinator is loading or moving: Kafka says retry
                continue
            raise _unreachable(admin.bootstrap, err) from None
    return _live_group(desc)


def _live_group(desc: Any) -> LiveGroup:
    members = tuple(
        LiveMember(
            member_id=m.member_id,
            client_id=m.client_id,
            host=m.host,
            instance_id=m.group_instance_id or None,
            assignment=_partitions(m.assignment),
            target_assignment=_partitions(m.target_assignment) if m.target_assignment else None,
        )
        for m in desc.members
    )
    return LiveGroup(
        group_id=desc.group_id,
        state=_STATES.get(desc.state, "unknown"),
        type=_TYPES.get(desc.type, "unknown"),
        assignor=desc.partition_assignor or "",
        coordinator=desc.coordinator.id if desc.coordinator is not None else None,
        members=members,
    )


def _ensure_topic(
    admin: ClusterAdmin, topic: str, partitions: int, config: dict[str, str], timeout_s: float
) -> None:
    if partitions < 1:
        raise InvalidInput(f"A topic needs at least one partition, got {partitions}.")
    futures = admin.client.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=1, config=config)],
        request_timeout=timeout_s,
    )
    try:
        futures[topic].result()
    except KafkaException as exc:
        err = exc.args[0] if exc.args else exc
        if not (isinstance(err, KafkaError) and err.code() == KafkaError.TOPIC_ALREADY_EXISTS):
            raise _unreachable(admin.bootstrap, err) from None
    # Metadata propagation is asynchronous even on one broker: wait until the leader is known.
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        md = admin.client.list_topics(topic, timeout=timeout_s)
        info = md.topics.get(topic)
        if info is not None and info.error is None and len(info.partitions) >= partitions:
            return
        time.sleep(0.1)
    raise _unreachable(admin.bootstrap, f"topic {topic} did not become available")

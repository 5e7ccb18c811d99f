"""Admin reads and small admin writes against a live cluster (shell; owns confluent_kafka.admin).

Everything returned is a kafka-coop model, so callers above this module never see confluent-kafka
types. Connection trouble becomes `ClusterUnavailable` (exit 3) with one sentence and a hint.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

from confluent_kafka import ConsumerGroupState, ConsumerGroupType, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from pydantic import BaseModel, ConfigDict, Field

from kafka_coop._vocab import SeenGroupProtocol
from kafka_coop.errors import ClusterUnavailable, InvalidInput
from kafka_coop.events import PartitionKey

DEFAULT_ADMIN_TIMEOUT_S = 10.0
# One attempt of a coordinator request: long enough for a loaded broker, short enough that a frozen
# coordinator is given up on and looked up again well inside a command's --timeout.
ATTEMPT_TIMEOUT_S = 10.0
PROBE_TIMEOUT_S = 2.0
# How often a wait serves the client's callbacks: a refused connection or login reaches error_cb within
# a few hundred ms (librdkafka 2.16: ~0 ms for "connection refused", ~0.3 s for a SCRAM login).
FAIL_FAST_SLICE_S = 0.05
# librdkafka is given this much longer than we wait for a group-coordinator answer, so that its own
# timeout never fires in a client that is still alive (`_coordinator_answer`)
LIBRDKAFKA_TIMEOUT_SLACK_S = 60.0
T = TypeVar("T")

GroupState = Literal[
    "stable",
    "preparing_rebalance",
    "completing_rebalance",
    "assigning",  # consumer groups: librdkafka reads these two as unknown, the coordinator names them
    "reconciling",
    "empty",
    "dead",
    "unknown",
]

_STATES: dict[Any, GroupState] = {
    ConsumerGroupState.STABLE: "stable",
    ConsumerGroupState.PREPARING_REBALANCING: "preparing_rebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "completing_rebalance",
    ConsumerGroupState.EMPTY: "empty",
    ConsumerGroupState.DEAD: "dead",
}
_TYPES: dict[Any, SeenGroupProtocol] = {
    ConsumerGroupType.CLASSIC: "classic",
    ConsumerGroupType.CONSUMER: "consumer",
}

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
_AUTHENTICATION_ERRORS = frozenset({KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED})
_TRANSIENT_ERRORS = frozenset(
    {
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        # a partition leader moved (list_offsets after a broker failure)
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
    }
)


class MemberDescription(BaseModel):
    model_config = ConfigDict(frozen=True)

    member_id: str
    client_id: str
    host: str
    instance_id: str | None
    assignment: tuple[PartitionKey, ...]
    target_assignment: tuple[PartitionKey, ...] | None = None


class GroupDescription(BaseModel):
    """One DescribeConsumerGroups answer, in our own types."""

    model_config = ConfigDict(frozen=True)

    group: str
    state: GroupState
    group_type: SeenGroupProtocol
    selected_assignor: str
    coordinator: int | None
    members: tuple[MemberDescription, ...]
    protocol_type: str | None = None  # set where the group is not a consumer group (Connect: connect)

    @property
    def instance_ids(self) -> list[str]:
        return [m.instance_id for m in self.members if m.instance_id]


class MemberMetadata(BaseModel):
    """One member as DescribeGroups v0 (the deprecated list_groups) returns it: with its protocol bytes."""

    model_config = ConfigDict(frozen=True)

    member_id: str
    client_id: str
    host: str
    subscription: bytes
    assignment: bytes


class GroupMetadata(BaseModel):
    """The classic-protocol view of a group; KIP-848 and converted groups come back `Dead` and empty."""

    model_config = ConfigDict(frozen=True)

    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberMetadata, ...]


class ListedGroup(BaseModel):
    """Its JSON (`describe --all --output json`, schema v1) keeps `group_id` and `type`; the code says
    `group` and `group_type`, as every other model does."""

    model_config = ConfigDict(frozen=True, validate_by_name=True, validate_by_alias=True)

    group: str = Field(alias="group_id")
    group_type: SeenGroupProtocol = Field(alias="type")
    state: GroupState
    is_simple: bool
    # what ListGroups v5 says beside (kafka-python; None where not read): the group's kind as Kafka's
    # tools name it (classic, consumer, share, streams, or a classic group's own protocol: connect, ...)
    kind: str | None = None
    protocol_type: str | None = None


class PartitionOffsets(BaseModel):
    model_config = ConfigDict(frozen=True)

    topic: str
    partition: int
    committed: int | None
    end: int | None


def _partitions(assignment: Any) -> tuple[PartitionKey, ...]:
    if assignment is None:
        return ()
    return tuple(sorted((tp.topic, tp.partition) for tp in assignment.topic_partitions))


def _unreachable(bootstrap: str, error: object) -> ClusterUnavailable:
    return ClusterUnavailable(
        f"Could not reach the Kafka cluster at {bootstrap} ({_error_text(error)}).",
        hint="Check --bootstrap-server and that the broker is running (`kafka-coop sandbox status`).",
    )


class _ConnectionLog:
    """librdkafka's log (it calls `log(level, format, *args)`), kept quiet: only the last connection
    failure is remembered, the cause error_cb does not give when a broker closes the connection (a
    listener of another security.protocol) and `_ALL_BROKERS_DOWN` is all it says."""

    def __init__(self) -> None:
        self.last_failure: str | None = None

    def log(self, level: int, fmt: str, *args: Any) -> None:
        del level
        text = fmt % args if args else fmt
        if "FAIL" in text.split("]", 1)[0] or "Disconnected" in text or "failed" in text:
            self.last_failure = text


class ClusterAdmin:
    """The admin connection of one command or test: reads groups, creates topics.

    Until the cluster has answered once, a wait gives up at once when librdkafka says the login was
    refused or every broker is down with a cause (connection refused, a closed connection): retrying
    cannot help a wrong address, password or security.protocol, and --timeout would only delay the
    sentence. Once it has answered, all brokers down is a restart or a failover, retried as before.
    `wait_for_brokers=True` (the sandbox and its test bed, which start and restart brokers) waits for
    brokers not up yet within the request's time, as before; a refused login still ends it at once.
    """

    def __init__(
        self, bootstrap: str, conf: Mapping[str, str] | None = None, *, wait_for_brokers: bool = False
    ) -> None:
        self._log = _ConnectionLog()
        settings: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": self._log}
        settings.update(conf or {})
        settings["error_cb"] = self._on_error
        self.bootstrap = bootstrap
        self._settings = settings
        self.authentication_error: KafkaError | None = None
        self.all_brokers_down_at: float | None = None
        self.transport_error: KafkaError | None = None
        self.answered = False
        self.wait_for_brokers = wait_for_brokers
        self.client = AdminClient(settings)
        self._by_thread = threading.local()

    def _on_error(self, err: KafkaError) -> None:
        """librdkafka reports a refused login and an unreachable cluster here, not on the request (the
        request just times out), so the sentence we print comes from what was seen here."""
        if err.code() in _AUTHENTICATION_ERRORS:
            self.authentication_error = err
        elif err.code() == KafkaError._ALL_BROKERS_DOWN:
            self.all_brokers_down_at = time.monotonic()
        elif err.code() in (KafkaError._TRANSPORT, KafkaError._SSL):
            self.transport_error = err

    def unreachable(self, error: object) -> ClusterUnavailable:
        """The one sentence for a failed request: a refused login if that is what happened."""
        self.client.poll(0)
        if self.authentication_error is not None:
            return _authentication_failed(self.bootstrap, self.authentication_error)
        return self.hopeless() or _unreachable(self.bootstrap, error)

    def hopeless(self) -> ClusterUnavailable | None:
        """The sentence to stop waiting with now, or None: a refused login, or (before the cluster ever
        answered) every broker down with a cause librdkafka gave."""
        if self.authentication_error is not None:
            return _authentication_failed(self.bootstrap, self.authentication_error)
        if self.answered or self.wait_for_brokers or self.all_brokers_down_at is None:
            return None
        return _never_connected(self.bootstrap, self._settings, self.transport_error, self._log.last_failure)

    def answer(self, client: Any, future: Any, timeout_s: float | None) -> Any:
        """`future`'s result within `timeout_s` (None: until librdkafka ends it), waited in short slices
        that serve `client`'s callbacks, so a refused connection or login ends the wait at once
        (`hopeless`). A wait that runs out raises concurrent.futures.TimeoutError."""
        deadline = None if timeout_s is None else time.monotonic() + max(0.0, timeout_s)
        while True:
            left = FAIL_FAST_SLICE_S if deadline is None else deadline - time.monotonic()
            try:
                result = future.result(timeout=max(0.0, min(FAIL_FAST_SLICE_S, left)))
            except concurrent.futures.TimeoutError:
                if deadline is not None and time.monotonic() >= deadline:
                    raise
                with contextlib.suppress(RuntimeError):  # closed meanwhile by another thread
                    client.poll(0)
                failure = self.hopeless()
                if failure is not None:
                    raise failure from None
                continue
            except KafkaException:
                with contextlib.suppress(RuntimeError):
                    client.poll(0)
                failure = self.hopeless()
                if failure is not None:
                    raise failure from None
                raise
            self.answered = True
            return result

    def blocking(self, client: Any, call: Callable[[], T]) -> T:
        """A blocking call of `client` (list_topics) run on a thread of its own and waited for like a
        request (`answer`): interruptible, and ended at once by a refused connection or login."""
        from kafka_coop._waiting import started

        return self.answer(client, started(call, "kafka-coop-admin"), None)  # type: ignore[no-any-return]

    def metadata(self, topic: str | None = None, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S) -> Any:
        """The cluster's metadata (of `topic` only, when given), waited for like a request (`answer`):
        a refused connection or login is one sentence at once, an unanswered one after `timeout_s`."""
        client = self.client
        try:
            return self.blocking(client, lambda: client.list_topics(topic, timeout=timeout_s))
        except KafkaException as exc:
            raise self.unreachable(exc.args[0] if exc.args else exc) from None

    def may_not_describe_topic(self, topic: str, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S) -> bool:
        """True when Kafka refuses this principal DESCRIBE on `topic` (all-topics metadata just leaves
        such a topic out, as if it did not exist). Asked without creating it."""
        from confluent_kafka import TopicCollection

        future = self.client.describe_topics(TopicCollection([topic]), request_timeout=timeout_s)[topic]
        try:
            future.result()
        except KafkaException as exc:
            err = exc.args[0] if exc.args else exc
            return isinstance(err, KafkaError) and err.code() in _TOPIC_AUTH_ERRORS
        return False

    def fresh_client(self) -> Any:
        """A new librdkafka client with the same settings: no cached coordinator, no pending requests."""
        return AdminClient(self._settings)

    def coordinator_client(self) -> Any:
        """This thread's client for group-coordinator requests. Only this thread asks it, so when one of
        its answers is given up on it can be closed at once (`_coordinator_answer`) while other threads
        (the inspection's fan-out) go on with theirs; the next request gets a fresh one."""
        client = self._own_client()
        if client is None:
            client = self._by_thread.client = self.fresh_client()
        return client

    def _own_client(self) -> Any:
        """This thread's coordinator client, None when it has none (never made, or retired)."""
        return getattr(self._by_thread, "client", None)

    def retire(self, client: Any = None) -> None:
        """Close `client` now (by default this thread's coordinator client, if it has one): it is never
        asked again, and a client with a request given up on must not even live on
        (`_coordinator_answer`)."""
        mine = self._own_client()
        client = mine if client is None else client
        if client is None:
            return
        if client is mine:
            self._by_thread.client = None
        with contextlib.suppress(RuntimeError):  # already closed
            client.poll(0)  # serves error_cb first: a refused login is what the sentence will say
        client.__exit__(None, None, None)

    def describe_group(self, group: str, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S) -> GroupDescription:
        """Describe one group; an unknown group comes back as state `dead` with no members."""
        return _describe_group(self, group, timeout_s)

    def describe_groups(
        self, groups: list[str], *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S
    ) -> dict[str, GroupDescription]:
        """Many groups in one request batch (describe --all); unknown ones come back `dead`."""
        if not groups:
            return {}
        client = self.coordinator_client()
        futures = client.describe_consumer_groups(groups, request_timeout=_librdkafka_timeout(timeout_s))
        deadline = time.monotonic() + timeout_s
        out: dict[str, GroupDescription] = {}
        for group, future in futures.items():
            try:
                if client is not self._own_client():  # an earlier answer timed out: it was closed
                    raise KafkaException(KafkaError(KafkaError._TIMED_OUT))
                out[group] = _live_group(
                    _coordinator_answer(self, client, future, deadline - time.monotonic())
                )
            except KafkaException:
                out[group] = _describe_group(self, group, timeout_s)  # retries transient errors itself
        return out

    def list_groups(self, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S) -> list[ListedGroup]:
        """Every group the principal may see, both protocols (ListGroups v5)."""
        result = _with_retry(
            self,
            None,
            timeout_s,
            lambda client, left: _complete(
                admin_answer(self, client, client.list_consumer_groups(request_timeout=left))
            ),
        )
        return sorted(
            (
                ListedGroup(
                    group=g.group_id,
                    group_type=_TYPES.get(g.type, "unknown"),
                    state=_STATES.get(g.state, "unknown"),
                    is_simple=bool(g.is_simple_consumer_group),
                )
                for g in result.valid
            ),
            key=lambda g: g.group,
        )

    def raw_group(self, group: str, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S) -> GroupMetadata | None:
        """Member protocol bytes, which describe_consumer_groups drops; None if not classic.

        (docs/protocols.md "What can be seen of a live group")
        """
        import warnings

        def call(client: Any, remaining: float) -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                return client.list_groups(group=group, timeout=remaining)

        listed = _with_retry(self, group, timeout_s, call)
        for g in listed:
            if g.id == group and g.error is None and g.state not in ("Dead", ""):
                return GroupMetadata(
                    state=g.state,
                    protocol_type=g.protocol_type or "",
                    protocol=g.protocol or "",
                    members=tuple(
                        MemberMetadata(
                            member_id=m.id,
                            client_id=m.client_id,
                            host=client_host(m.client_host),
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

        def call(client: Any, left: float) -> tuple[int, Any]:
            cluster = admin_answer(self, client, client.describe_cluster(request_timeout=left))
            broker = cluster.controller.id if cluster.controller is not None else cluster.nodes[0].id
            resource = ConfigResource(ResourceType.BROKER, str(broker))
            return broker, client.describe_configs([resource], request_timeout=left)[resource].result()

        broker, entries = _with_retry(self, None, timeout_s, call)
        return broker, {name: entry.value for name, entry in entries.items() if entry.value is not None}

    def offsets(self, group: str, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S) -> list[PartitionOffsets]:
        """Committed offset and log end offset of every partition the group has committed (none for a
        group of another protocol type, e.g. Connect workers)."""
        try:
            return _with_retry(
                self, group, timeout_s, lambda client, left: self._offsets(group, left, client)
            )
        except _NotConsumerGroup:
            return []

    def offsets_if_allowed(
        self, group: str, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S
    ) -> list[PartitionOffsets] | None:
        """Like `offsets`, but None when the principal may not read them (the caller says why its own
        way, e.g. with describe_group's "not authorized" sentence); unreachable is still an error."""
        try:
            return self.offsets(group, timeout_s=timeout_s)
        except _NotAuthorized:
            return None

    def _offsets(self, group: str, timeout_s: float, client: Any = None) -> list[PartitionOffsets]:
        # A fresh client whose coordinator for the group was confirmed a moment ago by a describe: an
        # OffsetFetch answered NOT_COORDINATOR on an *admin* client makes librdkafka (2.16, and master
        # as of 2026-07) re-query the coordinator through the consumer group handle an admin client
        # does not have, a NULL dereference that kills the process (seen in the chaos run right after
        # a coordinator restart; rd_kafka_handle_OffsetFetch -> rd_kafka_cgrp_op(rk->rk_cgrp = NULL)).
        # A stale cached coordinator is how that answer comes; this leaves only a moment's window.
        del client
        client = self.fresh_client()
        try:
            return self._offsets_on(client, group, timeout_s)
        finally:
            self.retire(client)  # a client of its own, closed either way: nothing asked on it lives on

    def _offsets_on(self, client: Any, group: str, timeout_s: float) -> list[PartitionOffsets]:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

        deadline = time.monotonic() + timeout_s
        librdkafka_s = _librdkafka_timeout(timeout_s)
        future = client.describe_consumer_groups([group], request_timeout=librdkafka_s)[group]
        described = _coordinator_answer(self, client, future, timeout_s)
        _require_topic_describe(client, group, described, timeout_s)
        request = [ConsumerGroupTopicPartitions(group)]
        futures = client.list_consumer_group_offsets(request, request_timeout=librdkafka_s)
        committed = _coordinator_answer(self, client, futures[group], deadline - time.monotonic())
        parts = [tp for tp in committed.topic_partitions if tp.error is None]
        if not parts:
            return []
        specs = {TopicPartition(tp.topic, tp.partition): OffsetSpec.latest() for tp in parts}  # type: ignore[no-untyped-call]
        ends = client.list_offsets(specs, request_timeout=timeout_s)
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
            admin_answer(self, self.client, futures[topic])
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

    def delete_group(self, group: str, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S) -> str | None:
        """Delete a consumer group (its committed offsets too); None when done or already gone, else
        Kafka's reason (a group with members is not deleted: NON_EMPTY_GROUP)."""
        client = self.coordinator_client()
        future = client.delete_consumer_groups([group], request_timeout=_librdkafka_timeout(timeout_s))[group]
        try:
            return _outcome(
                lambda: _coordinator_answer(self, client, future, timeout_s), {KafkaError.GROUP_ID_NOT_FOUND}
            )
        except ClusterUnavailable as exc:  # a refused connection or login: the reason, like any other
            return exc.message

    def delete_topic(self, topic: str, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S) -> str | None:
        """Delete a topic; None when done or already gone, else Kafka's reason."""
        future = self.client.delete_topics([topic], operation_timeout=timeout_s, request_timeout=timeout_s)
        return _outcome(future[topic].result, {KafkaError.UNKNOWN_TOPIC_OR_PART})

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
            # all topics: naming one may auto-create it; the wait is interruptible (Ctrl-C at once)
            client = self.client
            md = self.blocking(client, lambda: client.list_topics(timeout=timeout_s))
        except KafkaException as exc:
            raise _unreachable(self.bootstrap, exc.args[0] if exc.args else exc) from None
        info = md.topics.get(topic)
        if info is None or info.error is not None or not info.partitions:
            return None
        first = info.partitions[min(info.partitions)]
        return len(info.partitions), len(first.replicas)

    def settled_topic(
        self, topic: str, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S, every_s: float = 0.2
    ) -> tuple[tuple[int, int], dict[str, str]] | None:
        """(layout, configs) of a topic that was just created, once the broker asked shows both; None if
        it still did not after `timeout_s`. CreateTopics returns when the controller has the topic: the
        metadata and DescribeConfigs answers of a broker under load can lag it by seconds (a describe
        right after a create, read as "may not describe", failed CI twice)."""
        deadline = time.monotonic() + timeout_s
        while True:
            layout = self.topic_layout(topic)
            config = self.topic_config(topic) if layout is not None else None
            if layout is not None and config is not None:
                return layout, config
            if time.monotonic() >= deadline:
                return None
            time.sleep(every_s)


def _complete(listing: Any) -> Any:
    """A ListGroups answer with no errors: librdkafka answers an unreachable cluster or a refused login
    with an empty `valid` list and the reason in `errors`, which read as "0 groups" (exit 0)."""
    if listing.errors:
        raise KafkaException(listing.errors[0])
    return listing


def _outcome(answer: Callable[[], Any], gone: set[int]) -> str | None:
    """None when a delete succeeded or there was nothing to delete, else Kafka's error text."""
    try:
        answer()
    except KafkaException as exc:
        err = exc.args[0] if exc.args else exc
        if isinstance(err, KafkaError) and err.code() in gone:
            return None
        return _error_text(err)
    return None


def _librdkafka_timeout(timeout_s: float) -> float:
    """The request_timeout librdkafka is given for a wait of `timeout_s` (`_coordinator_answer`)."""
    return timeout_s + LIBRDKAFKA_TIMEOUT_SLACK_S


def _coordinator_answer(admin: ClusterAdmin, client: Any, future: Any, timeout_s: float) -> Any:
    """The group coordinator's answer to one request of `client` (one only this thread asks:
    `coordinator_client`, or a private one), waited for at most `timeout_s`.

    librdkafka (2.16) frees a coordinator request twice, and aborts the process, when its own timeout
    fired while the coordinator was unreachable and the coordinator comes back while the client lives
    (docs/protocols.md). So librdkafka is given a minute more than we wait (`_librdkafka_timeout`), and
    a client we stop waiting for is closed at once: its own timeout never fires. The wait is a lock
    wait, which Ctrl-C interrupts at once.
    """
    try:
        return admin.answer(client, future, timeout_s)
    except ClusterUnavailable:  # given up on at once (`hopeless`): closed like a timed-out one
        admin.retire(client)
        raise
    except concurrent.futures.TimeoutError:
        admin.retire(client)
        raise KafkaException(
            KafkaError(KafkaError._TIMED_OUT, f"no answer from the group coordinator within {timeout_s:.3g}s")
        ) from None


def _describe_group(admin: ClusterAdmin, group: str, timeout_s: float) -> GroupDescription:
    def call(_shared: Any, remaining: float) -> Any:
        client = admin.coordinator_client()
        future = client.describe_consumer_groups([group], request_timeout=_librdkafka_timeout(remaining))
        return _coordinator_answer(admin, client, future[group], remaining)

    try:
        desc = _with_retry(admin, group, timeout_s, call)
    except _GroupNotFound:
        return _dead(group)
    except _NotConsumerGroup:
        return _classic_group(admin, group, timeout_s)
    return _live_group(desc)


def _dead(group: str) -> GroupDescription:
    """What a group no one answers for is: dead, with no members."""
    return GroupDescription(
        group=group, state="dead", group_type="unknown", selected_assignor="", coordinator=None, members=()
    )


def _classic_group(admin: ClusterAdmin, group: str, timeout_s: float) -> GroupDescription:
    """A classic group of another protocol type (a Connect cluster's workers): librdkafka refuses to
    describe it (_INVALID_ARG 'not a consumer group'), the classic describe answers it."""
    raw = admin.raw_group(group, timeout_s=timeout_s)
    if raw is None:
        return _dead(group)
    states: dict[str, GroupState] = {
        "Stable": "stable",
        "PreparingRebalance": "preparing_rebalance",
        "CompletingRebalance": "completing_rebalance",
        "Empty": "empty",
    }
    return GroupDescription(
        group=group,
        state=states.get(raw.state, "unknown"),
        group_type="classic",
        selected_assignor=raw.protocol,
        coordinator=None,
        members=tuple(
            MemberDescription(
                member_id=m.member_id, client_id=m.client_id, host=m.host, instance_id=None, assignment=()
            )
            for m in raw.members
        ),
        protocol_type=raw.protocol_type,
    )


class _NotAuthorized(ClusterUnavailable):
    """The principal lacks an ACL (exit 3, like any cluster refusal); callers may catch it to go on."""


class _GroupNotFound(Exception):
    pass


class _NotConsumerGroup(Exception):
    """librdkafka's describe_consumer_groups refuses groups of other protocol types (_INVALID_ARG)."""


def _with_retry(
    admin: ClusterAdmin, group: str | None, timeout_s: float, call: Callable[[Any, float], T]
) -> T:
    """Run one group-coordinator request, retrying what Kafka calls retriable until `timeout_s` is up.

    While a group's coordinator moves (its broker died or froze, the offsets partition's new leader is
    loading it) requests fail with NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS
    or time out; each retry uses fresh clients (this thread's coordinator client and the shared one), so
    it finds the new coordinator.
    When the time is up the answer is one sentence (exit 3), never a verdict made on missing data.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        client = admin.client
        attempt_began = time.monotonic()
        attempt_s = max(1.0, min(ATTEMPT_TIMEOUT_S, deadline - attempt_began))
        try:
            return call(client, attempt_s)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else exc
            code = err.code() if isinstance(err, KafkaError) else None
            if code == KafkaError.GROUP_ID_NOT_FOUND:
                raise _GroupNotFound(group) from None
            if code == KafkaError._INVALID_ARG and "not a consumer group" in _error_text(err):
                raise _NotConsumerGroup(group) from None
            if code in _AUTH_ERRORS:
                raise _NotAuthorized(
                    f"Not authorized to DESCRIBE group {group!r} (Kafka says {_error_text(err)}).",
                    hint="Grant DESCRIBE on the group to the principal in --command-config.",
                ) from None
            if code in _TOPIC_AUTH_ERRORS:
                raise _NotAuthorized(
                    f"Not authorized to DESCRIBE the topics of group {group!r} "
                    f"(Kafka says {_error_text(err)}).",
                    hint="Grant DESCRIBE on the group's topics to the principal in --command-config.",
                ) from None
            if code in _AUTHENTICATION_ERRORS:
                raise _authentication_failed(admin.bootstrap, err) from None
            if code not in _TRANSIENT_ERRORS or _nothing_answers(admin, attempt_began):
                raise admin.unreachable(err) from None
            if time.monotonic() + 0.2 >= deadline:
                who = "The Kafka cluster" if group is None else f"The coordinator of group {group!r}"
                raise ClusterUnavailable(
                    f"{who} did not answer within {timeout_s:.3g}s (last error: {_error_text(err)}).",
                    hint="It may be moving to another broker after a broker failure: "
                    "retry, or raise --timeout.",
                ) from None
            time.sleep(0.2)  # the coordinator is loading or moving: Kafka says retry
            admin.retire()  # this thread's next coordinator client is fresh: it finds the new coordinator
            if client is admin.client:  # other threads may be asking it: replaced, not closed
                admin.client = admin.fresh_client()


def _require_topic_describe(client: Any, group: str, described: Any, timeout_s: float) -> None:
    """OffsetFetch silently drops the partitions of topics the principal may not DESCRIBE, which would
    read as "nothing committed there": ask for the metadata of the topics the members are assigned, and
    a refused one is the one sentence (exit 3) instead of a lag or a verdict made without it."""
    topics = sorted(
        {tp.topic for m in described.members or () if m.assignment for tp in m.assignment.topic_partitions}
    )
    if not topics:
        return
    from confluent_kafka import TopicCollection

    futures = client.describe_topics(TopicCollection(topics), request_timeout=timeout_s)  # one request
    for topic, future in sorted(futures.items()):
        try:
            future.result()
            continue
        except KafkaException as exc:
            err = exc.args[0] if exc.args else exc
            if not (isinstance(err, KafkaError) and err.code() in _TOPIC_AUTH_ERRORS):
                continue  # anything else (a topic deleted meanwhile): the offsets say what they can
            raise _NotAuthorized(
                f"Not authorized to DESCRIBE topic {topic!r} of group {group!r} (Kafka says "
                f"{_error_text(err)}): its committed offsets and lag cannot be read.",
                hint="Grant DESCRIBE on the group's topics to the principal in --command-config.",
            ) from None


def _nothing_answers(admin: ClusterAdmin, attempt_began: float) -> bool:
    """After a timeout: was it the whole cluster (or the login), not one coordinator? Then retrying
    cannot help. librdkafka says "all brokers down" (via error_cb, served by poll) once per transition,
    possibly before this attempt began; a quick metadata request settles it otherwise."""
    client = admin.client
    client.poll(0)
    if admin.authentication_error is not None:
        return True
    seen = admin.all_brokers_down_at
    if seen is not None and seen >= attempt_began - ATTEMPT_TIMEOUT_S:
        return True
    try:
        return not client.list_topics(timeout=PROBE_TIMEOUT_S).brokers
    except KafkaException:
        client.poll(0)
        return True


def _error_text(err: object) -> str:
    if isinstance(err, KafkaError):
        return f"{err.name()}{': ' + err.str() if err.str() else ''}"
    return str(err)


def admin_answer(admin: ClusterAdmin, client: Any, future: Any) -> Any:
    """`future`'s result, for as long as librdkafka's own request timeout lets it wait (`answer`)."""
    return admin.answer(client, future, None)


def _never_connected(
    bootstrap: str, settings: Mapping[str, Any], transport: KafkaError | None, logged: str | None
) -> ClusterUnavailable | None:
    """The sentence for a cluster no connection ever reached, from what librdkafka said; None when it
    gave no cause (a silent address: the request's own timeout says it)."""
    protocol = str(settings.get("security.protocol", "plaintext")).upper()
    text = transport.str() if transport is not None else (logged or "")
    if "Connection refused" in text:
        return ClusterUnavailable(
            f"Nothing is listening at {bootstrap}: the connection was refused.",
            hint="Check --bootstrap-server and that the broker is running (`kafka-coop sandbox status`).",
        )
    if "SSL handshake failed" in text or "wrong version number" in text or "SSL connection closed" in text:
        return ClusterUnavailable(
            f"The TLS handshake with {bootstrap} failed (security.protocol={protocol}): "
            f"{_connection_cause(text)}.",
            hint="Check security.protocol and ssl.ca.location in --command-config against the listener's "
            "protocol (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL).",
        )
    if "closed by peer" in text and "APIVERSION_QUERY" in text:
        return ClusterUnavailable(
            f"The broker at {bootstrap} closed the connection before answering a {protocol} client: "
            "its listener speaks another security.protocol.",
            hint="Set security.protocol (and the sasl.* / ssl.* settings) in --command-config to the "
            "listener's: SASL_SSL for the sandbox's --security sasl_ssl.",
        )
    if text:
        return ClusterUnavailable(
            f"Could not connect to the Kafka cluster at {bootstrap}: {_connection_cause(text)}.",
            hint="Check --bootstrap-server, security.protocol in --command-config and that the broker "
            "is running.",
        )
    return None


def _connection_cause(text: str) -> str:
    """librdkafka's connection error without its thread prefix and its state suffix."""
    text = re.sub(r"^.*?\]: ", "", text)  # the log line's "[thrd:...]: "
    text = re.sub(r"^\S+/(bootstrap|\d+): ", "", text)  # "host:port/bootstrap: "
    return re.sub(r"\s*\(after \d+ms in state \w+\)\s*$", "", text).rstrip(".")


def _authentication_failed(bootstrap: str, err: object) -> ClusterUnavailable:
    return ClusterUnavailable(
        f"Authentication to the Kafka cluster at {bootstrap} failed ({_error_text(err)}).",
        hint="Check sasl.username, sasl.password and sasl.mechanism in --command-config.",
    )


def client_host(host: str) -> str:
    """A member's host as a person writes it: Kafka answers Java's `InetAddress.toString()`, which is
    `name/address`, or `/address` when the broker did not look the name up ("/127.0.0.1")."""
    return host.removeprefix("/")


def _live_group(desc: Any) -> GroupDescription:
    members = tuple(
        MemberDescription(
            member_id=m.member_id,
            client_id=m.client_id,
            host=client_host(m.host),
            instance_id=m.group_instance_id or None,
            assignment=_partitions(m.assignment),
            target_assignment=_partitions(m.target_assignment) if m.target_assignment else None,
        )
        for m in desc.members
    )
    return GroupDescription(
        group=desc.group_id,
        state=_STATES.get(desc.state, "unknown"),
        group_type=_TYPES.get(desc.type, "unknown"),
        selected_assignor=desc.partition_assignor or "",
        coordinator=desc.coordinator.id if desc.coordinator is not None else None,
        members=members,
    )


def _ensure_topic(
    admin: ClusterAdmin, topic: str, partitions: int, config: dict[str, str], timeout_s: float
) -> None:
    if partitions < 1:
        raise InvalidInput(f"A topic needs at least one partition, got {partitions}.")
    # replication factor -1: the cluster's default.replication.factor (3 on a sandbox cluster, 1 alone)
    futures = admin.client.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=-1, config=config)],
        request_timeout=timeout_s,
    )
    try:
        admin_answer(admin, admin.client, futures[topic])
    except KafkaException as exc:
        err = exc.args[0] if exc.args else exc
        if not (isinstance(err, KafkaError) and err.code() == KafkaError.TOPIC_ALREADY_EXISTS):
            raise admin.unreachable(err) from None
    # Metadata propagation is asynchronous even on one broker: wait until the leader is known.
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        md = admin.client.list_topics(topic, timeout=timeout_s)
        info = md.topics.get(topic)
        if info is not None and info.error is None and len(info.partitions) >= partitions:
            return
        time.sleep(0.1)
    raise admin.unreachable(f"topic {topic} did not become available")

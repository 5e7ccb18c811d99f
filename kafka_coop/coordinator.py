"""The group coordinator's own view (shell): ConsumerGroupDescribe, ApiVersions features, ListGroups types.

confluent-kafka asks ConsumerGroupDescribe v0 and drops the epochs and the member type; kafka-python
3.x has no schema for it. So the request and response bytes are ours (`kafka_coop.protocol`, fuzzed
and held equal to Kafka's own schema files) and everything around them is kafka-python's: bootstrap,
SASL/SSL, finding the coordinator, version negotiation, the v2 request header, framing, correlation.
Our bytes travel through its connection as a request object of the duck type kafka-python's own
SaslBytesRequest uses (docs/inspection.md "The coordinator's view" has the choice and its reasons).

The version is negotiated per coordinator: v1 (member types, KIP-1099) where its ApiVersions lists it,
v0 otherwise (epochs and target assignments, no member type), and none where the broker offers no
ConsumerGroupDescribe (Kafka 3.x without KIP-848, or `group.version` 0): the caller then reads the
classic describe and every answer says which one it came from. A group the coordinator does not run as
a consumer group (classic, or unknown) is GROUP_ID_NOT_FOUND, kept as `not_consumer_group`.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from kafka_coop._kafka_python import admin_client, kafka_python_conf
from kafka_coop.errors import ClusterUnavailable, KafkaCoopError
from kafka_coop.protocol import (
    CONSUMER_GROUP_DESCRIBE_KEY,
    MAX_CONSUMER_GROUP_DESCRIBE_VERSION,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedGroup,
    ProtocolDecodeError,
    decode_response,
    encode_request,
)

DEFAULT_TIMEOUT_S: Final = 10.0
READ: Final = "the coordinator's view (ConsumerGroupDescribe)"
DescribeApi = Literal["ConsumerGroupDescribe v1", "ConsumerGroupDescribe v0"]

# DescribedGroup error codes (ConsumerGroupDescribeResponse.json "Supported errors")
_LOAD_IN_PROGRESS, _NOT_AVAILABLE, _NOT_COORDINATOR = 14, 15, 16
_MOVING: Final = frozenset({_LOAD_IN_PROGRESS, _NOT_AVAILABLE, _NOT_COORDINATOR})
_TOPIC_AUTHORIZATION_FAILED, _GROUP_AUTHORIZATION_FAILED, _UNSUPPORTED_VERSION, _GROUP_ID_NOT_FOUND = (
    29,
    30,
    35,
    69,
)


AnswerStatus = Literal["described", "not-a-consumer-group", "not-served", "unreadable"]
"""described: the coordinator runs the group as a consumer group and said so in ConsumerGroupDescribe;
not-a-consumer-group: GROUP_ID_NOT_FOUND (a classic group, or none); not-served: the broker offers no
ConsumerGroupDescribe, or answers UNSUPPORTED_VERSION (Kafka 3.7-3.9 without the new coordinator);
unreadable: an answer we could not decode or an error it documents no meaning for."""


class CoordinatorAnswer(BaseModel):
    """What one group's coordinator said; `described` only when `status` is `described`."""

    model_config = ConfigDict(frozen=True)

    group: str
    status: AnswerStatus
    reason: str = ""  # the broker's own words where it gave some
    coordinator: int | None = None
    offered: tuple[int, int] | None = None  # the coordinator's ConsumerGroupDescribe versions; None: none
    version: int | None = None  # the version the request went out at
    described: DescribedGroup | None = None
    features: dict[str, int] = {}  # finalized feature levels from ApiVersions v3+ (group.version, ...)
    kafka_version: str | None = None  # major.minor, read by kafka-python off the APIs the broker serves

    @property
    def api(self) -> DescribeApi | None:
        """Which request the description came from (v0 has no member types)."""
        if self.described is None or self.version is None:
            return None
        return "ConsumerGroupDescribe v1" if self.version >= 1 else "ConsumerGroupDescribe v0"


class ListedGroupType(BaseModel):
    """One group as ListGroups (v5, KIP-848/KIP-1043) lists it: its type and its protocol type."""

    model_config = ConfigDict(frozen=True)

    group: str
    group_type: str  # classic | consumer | share | streams; "" when the broker predates ListGroups v5
    protocol_type: str  # consumer | connect | ... ("" for groups that only commit offsets)
    state: str


def describe_version(offered: tuple[int, int] | None) -> int | None:
    """The newest version both sides have, or None (the broker offers none we can read)."""
    if offered is None:
        return None
    low, high = offered
    version = min(high, MAX_CONSUMER_GROUP_DESCRIBE_VERSION)
    return version if version >= max(low, 0) else None


class _EncodedRequest:
    """Our request body in the shape kafka-python's connection sends: it asks for a header (`with_header`),
    frames `encode()` and later hands the response to `header.get_response_class()`. kafka-python's own
    SaslBytesRequest is the same duck type."""

    API_KEY = CONSUMER_GROUP_DESCRIBE_KEY

    def __init__(self, version: int, body: bytes) -> None:
        self.API_VERSION = version
        self._body = body
        self._request_header: Any = None
        self.header: _PendingResponse | None = None

    def with_header(self, correlation_id: int = 0, client_id: str = "kafka-coop", **_: Any) -> None:
        from kafka.protocol.api_header import RequestHeader

        self._request_header = RequestHeader(
            request_api_key=self.API_KEY,
            request_api_version=self.API_VERSION,
            correlation_id=correlation_id,
            client_id=client_id,
        )
        self.header = _PendingResponse(correlation_id, self.API_VERSION)

    def encode(self, framed: bool = True, header: bool = True) -> bytes:
        payload = (self._request_header.encode(flexible=True) if header else b"") + self._body
        return struct.pack(">i", len(payload)) + payload if framed else payload

    def expect_response(self) -> bool:
        return True

    def __str__(self) -> str:
        return f"ConsumerGroupDescribeRequest v{self.API_VERSION} (kafka-coop's encoding)"


class _PendingResponse:
    """The in-flight side: reads the v1 response header with kafka-python, the body with our codec."""

    def __init__(self, correlation_id: int, version: int) -> None:
        self.correlation_id = correlation_id
        self.version = version
        self.decode_error: str | None = None

    def get_response_class(self) -> _PendingResponse:
        return self

    def parse_header(self, read_buffer: Any) -> Any:
        from kafka.protocol.api_header import ResponseHeader

        return ResponseHeader.decode(read_buffer, flexible=True)

    def decode(self, read_buffer: Any) -> ConsumerGroupDescribeResponse:
        try:
            return decode_response(read_buffer.read(), self.version)
        except ProtocolDecodeError as exc:
            self.decode_error = str(exc)
            raise  # kafka-python turns it into KafkaProtocolError and closes the connection


def _error_name(code: int) -> str:
    from kafka.errors import for_code

    return str(getattr(for_code(code), "message", code))


class CoordinatorClient:
    """One kafka-python admin connection for the coordinator reads of a command.

    Connection settings are `--command-config`'s librdkafka keys; one kafka-python cannot take is
    refused with one sentence (InvalidInput) before connecting.
    """

    def __init__(
        self, bootstrap: str, conf: Mapping[str, str] | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.bootstrap = bootstrap
        self._settings = kafka_python_conf(bootstrap, conf or {}, what=READ)
        self._timeout_s = timeout_s
        self._admin = admin_client(bootstrap, self._settings, timeout_s, READ)

    def close(self) -> None:
        self._admin.close()

    def __enter__(self) -> CoordinatorClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def list_groups(self) -> list[ListedGroupType]:
        """Every group of every type the principal may see (ListGroups at the newest version each
        broker has; v5 says the group type)."""
        from kafka.errors import KafkaError

        try:
            listed = self._admin.list_groups()
        except KafkaError as exc:
            raise self._unreachable(exc) from None
        groups = {
            g["group_id"]: ListedGroupType(
                group=g["group_id"],
                group_type=str(g.get("group_type") or ""),
                protocol_type=str(g.get("protocol_type") or ""),
                state=str(g.get("group_state") or ""),
            )
            for g in listed
        }
        return [groups[name] for name in sorted(groups)]

    def describe(self, group: str) -> CoordinatorAnswer:
        return self.describe_groups([group])[group]

    def group_configs(self, group: str) -> dict[str, str]:
        """The group's own config overrides (KIP-848 group configs: consumer.session.timeout.ms, ...);
        empty where none is set or the broker has no group configs (before 4.0)."""
        from kafka.admin import ConfigResource, ConfigResourceType
        from kafka.errors import KafkaError

        try:
            answer = self._admin.describe_configs([ConfigResource(ConfigResourceType.GROUP, group)])
        except KafkaError:
            return {}
        groups: dict[str, Any] = answer.get("group", {}) if isinstance(answer, dict) else {}
        entries: dict[str, Any] = next(iter(groups.values()), {})
        return {
            key: str(entry.get("value")) for key, entry in entries.items() if entry.get("value") is not None
        }

    def describe_groups(self, groups: Sequence[str]) -> dict[str, CoordinatorAnswer]:
        """Each group's coordinator, asked once per coordinator; moving coordinators are retried on a
        fresh connection until the timeout, then ClusterUnavailable (exit 3)."""
        deadline = time.monotonic() + self._timeout_s
        answers: dict[str, CoordinatorAnswer] = {}
        pending = list(dict.fromkeys(groups))
        while pending:
            moving = self._attempt(pending, answers, deadline)
            if not moving:
                break
            if time.monotonic() + 0.2 >= deadline:
                raise ClusterUnavailable(
                    f"The coordinator of group {moving[0]!r} did not answer within {self._timeout_s:.3g}s.",
                    hint="It may be moving to another broker after a broker failure: "
                    "retry, or raise --timeout.",
                )
            time.sleep(0.2)  # the coordinator is loading or moving: Kafka says retry
            self._admin.close()  # a fresh connection looks the coordinator up again
            self._admin = admin_client(self.bootstrap, self._settings, self._timeout_s, READ)
            pending = moving
        return answers

    def _attempt(
        self, groups: list[str], answers: dict[str, CoordinatorAnswer], deadline: float
    ) -> list[str]:
        """Ask every coordinator of `groups` once; the groups whose coordinator is moving are returned."""
        from kafka.errors import GroupAuthorizationFailedError, KafkaError, KafkaProtocolError

        timeout_ms = max(1000, int((deadline - time.monotonic()) * 1000))
        try:
            coordinators: dict[str, Any] = self._admin._manager.run(self._admin._find_coordinator_ids, groups)
        except GroupAuthorizationFailedError:
            raise _not_authorized(groups[0]) from None
        except KafkaError as exc:
            if getattr(exc, "retriable", False):
                return groups
            raise self._unreachable(exc) from None
        by_node: dict[Any, list[str]] = {}
        for group in groups:
            by_node.setdefault(coordinators[group], []).append(group)
        moving: list[str] = []
        for node, members in by_node.items():
            sent: list[_EncodedRequest] = []
            try:
                offered, features, release = self._manager_run(self._api_versions, node, timeout_ms)
                version = describe_version(offered)
                if version is None:
                    for group in members:
                        answers[group] = CoordinatorAnswer(
                            group=group,
                            status="not-served",
                            reason="the broker's ApiVersions lists no ConsumerGroupDescribe version we read",
                            coordinator=_node_id(node),
                            offered=offered,
                            features=features,
                            kafka_version=release,
                        )
                    continue
                request = _EncodedRequest(
                    version,
                    encode_request(ConsumerGroupDescribeRequest(version=version, group_ids=tuple(members))),
                )
                sent.append(request)
                response: ConsumerGroupDescribeResponse = self._manager_run(
                    self._send, node, request, timeout_ms
                )
            except KafkaProtocolError:
                why = next(
                    (r.header.decode_error for r in sent if r.header and r.header.decode_error),
                    "undecodable answer",
                )
                for group in members:
                    answers[group] = CoordinatorAnswer(
                        group=group,
                        status="unreadable",
                        reason=f"the coordinator's ConsumerGroupDescribe answer could not be read: {why}",
                        coordinator=_node_id(node),
                    )
                continue
            except KafkaError as exc:
                if getattr(exc, "retriable", False):
                    moving += members
                    continue
                raise self._unreachable(exc) from None
            for described in response.groups:
                answer = self._answer(described, node, offered, version, features, release)
                if answer is None:
                    moving.append(described.group_id)
                else:
                    answers[described.group_id] = answer
        return moving

    def _answer(
        self,
        described: DescribedGroup,
        node: Any,
        offered: tuple[int, int] | None,
        version: int,
        features: dict[str, int],
        release: str | None,
    ) -> CoordinatorAnswer | None:
        code = described.error_code
        if code in _MOVING:
            return None
        if code == _GROUP_AUTHORIZATION_FAILED:
            raise _not_authorized(described.group_id)
        if code == _TOPIC_AUTHORIZATION_FAILED:
            raise ClusterUnavailable(
                f"Not authorized to DESCRIBE the topics of group {described.group_id!r} "
                "(Kafka says TOPIC_AUTHORIZATION_FAILED).",
                hint="Grant DESCRIBE on the group's topics to the principal in --command-config.",
            )
        status: AnswerStatus = "described"
        reason = (described.error_message or _error_name(code)) if code else ""
        if code == _GROUP_ID_NOT_FOUND:
            status = "not-a-consumer-group"
        elif code == _UNSUPPORTED_VERSION:
            status = "not-served"
            reason = "UNSUPPORTED_VERSION" + (
                f": {described.error_message}" if described.error_message else ""
            )
        elif code != 0:
            status = "unreadable"
            reason = f"the coordinator answered {_error_name(code)}" + (
                f": {described.error_message}" if described.error_message else ""
            )
        return CoordinatorAnswer(
            group=described.group_id,
            status=status,
            reason=reason,
            coordinator=_node_id(node),
            offered=offered,
            version=version,
            described=described if status == "described" else None,
            features=features,
            kafka_version=release,
        )

    def _manager_run(self, coro: Any, *args: Any) -> Any:
        return self._admin._manager.run(coro, *args)

    async def _api_versions(
        self, node: Any, timeout_ms: int
    ) -> tuple[tuple[int, int] | None, dict[str, int], str | None]:
        """The coordinator's ConsumerGroupDescribe versions, finalized features (ApiVersions, at the version
        kafka-python negotiates with that broker; features from v3) and its Kafka release, which
        kafka-python reads off the APIs it serves (BrokerVersionData)."""
        from kafka.protocol.broker_version_data import BrokerVersionData
        from kafka.protocol.metadata import ApiVersionsRequest

        request = ApiVersionsRequest(client_software_name="kafka-coop", client_software_version=_version())
        response = await self._admin._manager.send(request, node_id=node, request_timeout_ms=timeout_ms)
        offered = next(
            (
                (k.min_version, k.max_version)
                for k in response.api_keys
                if k.api_key == CONSUMER_GROUP_DESCRIBE_KEY
            ),
            None,
        )
        features: dict[str, int] = {}
        if getattr(response, "finalized_features_epoch", -1) >= 0:
            features = {
                f.name: f.max_version_level for f in getattr(response, "finalized_features", None) or ()
            }
        apis = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        try:
            inferred = BrokerVersionData(api_versions=apis).broker_version[:2]
        except Exception:  # an API table kafka-python's inference does not know: no release, no guess
            return offered, features, None
        return offered, features, _past_known(inferred, apis)

    async def _send(
        self, node: Any, request: _EncodedRequest, timeout_ms: int
    ) -> ConsumerGroupDescribeResponse:
        response: ConsumerGroupDescribeResponse = await self._admin._manager.send(
            request, node_id=node, request_timeout_ms=timeout_ms
        )
        return response

    def _unreachable(self, exc: Exception) -> ClusterUnavailable:
        return ClusterUnavailable(
            f"Could not read the coordinator's view from the Kafka cluster at {self.bootstrap} "
            f"({type(exc).__name__}: {exc}).",
            hint="Check --bootstrap-server and --command-config.",
        )


def _version() -> str:
    """kafka-coop's version for the broker's client metrics (the package face is a layer above)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kafka-coop")
    except PackageNotFoundError:
        return "unknown"


def _not_authorized(group: str) -> ClusterUnavailable:
    return ClusterUnavailable(
        f"Not authorized to DESCRIBE group {group!r} (Kafka says GROUP_AUTHORIZATION_FAILED).",
        hint="Grant DESCRIBE on the group to the principal in --command-config.",
    )


def _node_id(node: Any) -> int | None:
    """kafka-python names a coordinator's connection by its broker id (or 'coordinator-<id>')."""
    text = str(node).rsplit("-", 1)[-1]
    return int(text) if text.lstrip("-").isdigit() else None


def open_client(
    bootstrap: str, conf: Mapping[str, str] | None, *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> CoordinatorClient | None:
    """A connection for the looks of one command (a look that opens its own pays ~0.1 s for it), or
    None when it cannot be had; each look then says why in its note."""
    try:
        return CoordinatorClient(bootstrap, conf, timeout_s=timeout_s)
    except KafkaCoopError:
        return None


def coordinator_view(
    bootstrap: str,
    conf: Mapping[str, str] | None,
    group: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    client: CoordinatorClient | None = None,
) -> tuple[CoordinatorAnswer | None, dict[str, str], str]:
    """(the coordinator's answer, the group's config overrides, a note) for one look at `group`.

    Never raises: the look goes on with the classic view, and the note says why the coordinator's is
    missing (kafka-python not installed, a --command-config key it cannot take, no answer)."""
    try:
        own = client is None
        reader = client or CoordinatorClient(bootstrap, conf, timeout_s=timeout_s)
        try:
            return reader.describe(group), reader.group_configs(group), ""
        finally:
            if own:
                reader.close()
    except KafkaCoopError as exc:
        return None, {}, f"the coordinator's view was not read: {exc.message}"


def _past_known(inferred: tuple[int, ...], apis: dict[int, tuple[int, int]]) -> str:
    """kafka-python's inference stops at the newest release it knows: a broker serving more than that
    release's API table (a newer API, or a newer version of one) is newer, so "4.4+" for a 4.4 broker
    where kafka-python knows up to 4.3, never "4.3"."""
    from kafka.protocol.broker_version_data import BROKER_API_VERSIONS

    release = ".".join(str(n) for n in inferred)
    newest = max(BROKER_API_VERSIONS)
    if tuple(inferred) != newest[:2]:
        return release
    known = BROKER_API_VERSIONS[newest]
    if any(key not in known or span[1] > known[key][1] for key, span in apis.items()):
        return f"{newest[0]}.{newest[1] + 1}+"
    return release

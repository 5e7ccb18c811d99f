"""Our ConsumerGroupDescribe codec against Kafka's own schema files, read by a second implementation.

The broker jar the sandbox runs (kafka-clients) carries ConsumerGroupDescribeRequest/Response.json,
the files Kafka generates its own message classes from. kafka-python's message layer generates a
codec from such a file at run time, so these tests hold our hand-written codec equal to one generated
from Kafka's schema, in both directions, over generated messages. (The real broker's answers are
checked in tests/integration/inspection.)
"""

from __future__ import annotations

import importlib
import sys
import uuid
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_coop.protocol import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    MemberAssignment,
    decode_response,
    encode_request,
    encode_response,
)
from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION, resolve_kafka_jars
from tests.unit.protocol.strategies import NO_TAGS, responses

SCHEMAS = ("ConsumerGroupDescribeRequest", "ConsumerGroupDescribeResponse")
# kafka-python reads schema files with importlib.resources' legacy read_text/open_text
pytestmark = pytest.mark.filterwarnings(
    "ignore:read_text is deprecated:DeprecationWarning", "ignore:open_text is deprecated:DeprecationWarning"
)


@pytest.fixture(scope="module")
def kafka_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """kafka-python message classes generated from the schema files in the broker's kafka-clients jar."""
    lib = resolve_kafka_jars(DEFAULT_KAFKA_VERSION)
    (jar,) = lib.glob("kafka-clients-*.jar")
    root = tmp_path_factory.mktemp("schema")
    package = root / "kafka_schema_files"
    package.mkdir()
    (package / "__init__.py").write_text("")
    with zipfile.ZipFile(jar) as archive:
        for name in SCHEMAS:
            (package / f"{name}.json").write_bytes(archive.read(f"common/message/{name}.json"))
    sys.path.insert(0, str(root))
    try:
        files = importlib.import_module("kafka_schema_files")
        from kafka.protocol.api_message import ApiMessage

        request = type(SCHEMAS[0], (ApiMessage,), {}, load_json=files)
        response = type(SCHEMAS[1], (ApiMessage,), {}, load_json=files)
        yield request, response
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("kafka_schema_files", None)


def test_the_schema_has_the_versions_we_encode(kafka_schema: Any) -> None:
    request, response = kafka_schema
    assert request.max_version == response.max_version == 1


def _theirs(response_class: Any, ours: ConsumerGroupDescribeResponse) -> Any:
    group_class = response_class.DescribedGroup
    member_class = group_class.Member
    assignment_class = member_class.Assignment
    topic_class = assignment_class.TopicPartitions

    def assignment(a: MemberAssignment) -> Any:
        return assignment_class(
            topic_partitions=[
                topic_class(topic_id=t.topic_id, topic_name=t.topic_name, partitions=list(t.partitions))
                for t in a.topic_partitions
            ]
        )

    return response_class(
        version=ours.version,
        throttle_time_ms=ours.throttle_time_ms,
        groups=[
            group_class(
                **g.model_dump(exclude={"members", "unknown_tagged_fields"}),
                members=[
                    member_class(
                        **m.model_dump(exclude={"assignment", "target_assignment", "unknown_tagged_fields"}),
                        assignment=assignment(m.assignment),
                        target_assignment=assignment(m.target_assignment),
                    )
                    for m in g.members
                ],
            )
            for g in ours.groups
        ],
    )


def _normal(value: Any) -> Any:
    """Both sides as plain data: lists for sequences, UUIDs as strings."""
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items() if k != "unknown_tagged_fields"}
    if isinstance(value, list | tuple):
        return [_normal(v) for v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


@pytest.mark.parametrize("version", [0, 1])
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_kafka_schema_reads_what_we_write(kafka_schema: Any, version: int, data: st.DataObject) -> None:
    _, response_class = kafka_schema
    ours = data.draw(responses(version, NO_TAGS))
    decoded = response_class.decode(encode_response(ours), version=version)
    expected = _normal(ours.model_dump(exclude={"version"}))
    if version == 0:
        for group in expected["groups"]:
            for member in group["members"]:
                member.pop("member_type")
    assert _normal(decoded.to_dict()) == expected


@pytest.mark.parametrize("version", [0, 1])
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_we_read_what_the_kafka_schema_writes(kafka_schema: Any, version: int, data: st.DataObject) -> None:
    _, response_class = kafka_schema
    ours = data.draw(responses(version, NO_TAGS))
    assert decode_response(_theirs(response_class, ours).encode(version=version), version) == ours


@pytest.mark.parametrize("version", [0, 1])
def test_request_bytes_equal_the_kafka_schema_encoding(kafka_schema: Any, version: int) -> None:
    request_class, _ = kafka_schema
    theirs = request_class(group_ids=["orders", "payments"], include_authorized_operations=True)
    ours = ConsumerGroupDescribeRequest(
        version=version, group_ids=("orders", "payments"), include_authorized_operations=True
    )
    assert encode_request(ours) == theirs.encode(version=version)

"""Generated ConsumerGroupDescribe messages for the codec's round trips (tests/unit/protocol) and its
comparison with Kafka's own schema files (tests/integration/protocol)."""

from __future__ import annotations

from hypothesis import strategies as st

from kafka_coop.protocol import (
    AssignedTopic,
    ConsumerGroupDescribeResponse,
    DescribedGroup,
    DescribedMember,
    MemberAssignment,
)

TaggedFields = tuple[tuple[int, bytes], ...]

int32s = st.integers(min_value=-(2**31), max_value=2**31 - 1)
names = st.text(max_size=6)
tags: st.SearchStrategy[TaggedFields] = st.dictionaries(
    st.integers(0, 2**32 - 1), st.binary(max_size=6), max_size=2
).map(lambda d: tuple(sorted(d.items())))
NO_TAGS: st.SearchStrategy[TaggedFields] = st.just(())


def assignments(tagged: st.SearchStrategy[TaggedFields] = tags) -> st.SearchStrategy[MemberAssignment]:
    topics = st.builds(
        AssignedTopic,
        topic_id=st.uuids(),
        topic_name=names,
        partitions=st.lists(int32s, max_size=4).map(tuple),
        unknown_tagged_fields=tagged,
    )
    return st.builds(
        MemberAssignment,
        topic_partitions=st.lists(topics, max_size=2).map(tuple),
        unknown_tagged_fields=tagged,
    )


def members(
    version: int, tagged: st.SearchStrategy[TaggedFields] = tags
) -> st.SearchStrategy[DescribedMember]:
    return st.builds(
        DescribedMember,
        member_id=names,
        instance_id=st.none() | names,
        rack_id=st.none() | names,
        member_epoch=int32s,
        client_id=names,
        client_host=names,
        subscribed_topic_names=st.lists(names, max_size=3).map(tuple),
        subscribed_topic_regex=st.none() | names,
        assignment=assignments(tagged),
        target_assignment=assignments(tagged),
        member_type=st.integers(-128, 127) if version >= 1 else st.just(-1),
        unknown_tagged_fields=tagged,
    )


def responses(
    version: int, tagged: st.SearchStrategy[TaggedFields] = tags
) -> st.SearchStrategy[ConsumerGroupDescribeResponse]:
    """`tagged=NO_TAGS` where the other side keeps no unknown tagged fields (Kafka's generated classes)."""
    groups = st.builds(
        DescribedGroup,
        error_code=st.integers(-(2**15), 2**15 - 1),
        error_message=st.none() | names,
        group_id=names,
        group_state=names,
        group_epoch=int32s,
        assignment_epoch=int32s,
        assignor_name=names,
        members=st.lists(members(version, tagged), max_size=2).map(tuple),
        authorized_operations=int32s,
        unknown_tagged_fields=tagged,
    )
    return st.builds(
        ConsumerGroupDescribeResponse,
        version=st.just(version),
        throttle_time_ms=int32s,
        groups=st.lists(groups, max_size=2).map(tuple),
        unknown_tagged_fields=tagged,
    )

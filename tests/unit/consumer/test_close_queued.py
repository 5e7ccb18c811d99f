"""`close()` never leaves a queued rebalance to the client's close.

The client's close terminates the group handler first; a classic member's terminate makes a queued
rebalance stale, and serving it afterwards never returns (librdkafka issue 4041, seen in CI). The fake
raises `WouldHang` where the real client would stop the process.
"""

from __future__ import annotations

import pytest

from kafka_coop.testing import FakeGroup, WouldHang
from tests.unit.consumer.helpers import PROTOCOLS, T, hand_out, kinds, make, mark, parts


def test_the_fake_client_hangs_when_its_close_finds_a_queued_rebalance() -> None:
    """The model the other tests rely on: what the real close does with a rebalance still queued."""
    group = FakeGroup()
    inner = group.client({"group.id": "g", "partition.assignment.strategy": "range"})
    inner.subscribe([T], on_assign=lambda consumer, partitions: None)
    group.assign(parts(0))
    with pytest.raises(WouldHang):
        inner.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_close_serves_an_assignment_queued_before_it(protocol: str) -> None:
    consumer, inner, sink = make(protocol)
    inner.group.assign(parts(0, 1))
    consumer.close()
    assert inner.closed
    assert "closed" in kinds(sink)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_close_serves_a_revoke_queued_before_it_and_commits_what_was_done(protocol: str) -> None:
    consumer, inner, _ = make(protocol)
    inner.rebalance("assign", parts(0))
    mark(consumer, inner, 0, 4)
    inner.group.revoke(parts(0))
    consumer.close()
    assert inner.group.committed() == {(T, 0): 5}


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
@pytest.mark.parametrize("rebalancing", [False, True])
def test_a_static_member_that_overran_its_poll_limit_closes_without_hanging_or_committing(
    protocol: str, rebalancing: bool
) -> None:
    """The CI case: the loss librdkafka queued at the overrun is served before the client closes."""
    consumer, inner, _ = make(protocol, instance_id="svc-0")
    inner.rebalance("assign", parts(0))
    mark(consumer, inner, 0, 4)
    inner.group.overrun_poll_limit(rebalancing=rebalancing)
    consumer.close()
    assert inner.closed
    assert consumer.failure is None
    assert inner.group.committed() == {}, "a commit with the reset member id would be fenced"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_dynamic_member_unsubscribes_before_its_client_closes(protocol: str) -> None:
    """Once unsubscribed, the group queues no new rebalance for it, so none can be left to the close."""
    consumer, inner, _ = make(protocol)
    inner.rebalance("assign", parts(0))
    consumer.close()
    assert inner.calls.index("unsubscribe") < inner.calls.index("close")


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_a_classic_static_member_with_its_member_id_does_not_unsubscribe_before_close(protocol: str) -> None:
    """An unsubscribe outside close sends the LeaveGroup that static membership exists to avoid."""
    consumer, inner, _ = make(protocol, instance_id="svc-0")
    inner.rebalance("assign", parts(0))
    consumer.close()
    assert "unsubscribe" not in inner.calls


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_records_fetched_while_close_serves_rebalances_are_not_committed(protocol: str) -> None:
    """Drop-in: the records the application got are done at a clean close; those the close's own serving
    took from the client are not."""
    consumer, inner, _ = make(protocol, marks=False)
    inner.rebalance("assign", parts(0))
    hand_out(consumer, inner, 0, 4)
    inner.group.produce(T, 0, b"5", b"6", b"7")
    inner.group.revoke(parts(0))
    consumer.close()
    assert inner.group.committed() == {(T, 0): 5}


def test_a_revoke_served_before_the_client_closes_reads_the_member_id_librdkafka_reset() -> None:
    """Seen on the broker (cooperative, static): the poll limit ran out during a rebalance, close served
    the queued revoke, the assign after it, and then its unsubscribe's revoke. Judged by a member id
    remembered from before, that last revoke committed with the reset one: FENCED_INSTANCE_ID, fatal."""
    consumer, inner, _ = make("cooperative", instance_id="svc-0")
    inner.rebalance("assign", parts(0, 1))
    mark(consumer, inner, 0, 4)
    mark(consumer, inner, 1, 4)
    inner.group.revoke(parts(0))  # a rebalance under way ...
    inner.member_id = ""  # ... when max.poll.interval.ms ran out (librdkafka queues no second revoke)
    inner.group.assign([])  # cooperative: the assign after the revoke
    consumer.close()
    assert consumer.failure is None
    assert inner.group.commits == []

"""A classic group held open across a coordinated cutover (shell; kafka-python's raw JoinGroup).

A cutover closes every member and removes the static ones, so the group empties; the members then rejoin
on the new strategy. A classic group's first rebalance out of Empty is an initial one: the coordinator
waits `group.initial.rebalance.delay.ms` (broker default 3 s), and with the delay at 0 it completes with
the members that have joined at that instant; each later joiner starts another rebalance, which the
members already in learn of only on their next heartbeat (`heartbeat.interval.ms`, librdkafka's default
3 s). Either way the pause is over 3 s (GroupMetadataManager: prepareRebalance, maybeCompleteJoinPhase).

The hold is one more member of the group, the runner's own: it joins (static, no topics, both the old
and the new assignor, so the old members and the new ones each share a protocol with it) while the
closed members are still in the group, so removing them leaves the group with the hold, never Empty.
Each member that rejoins then joins a rebalance that waits for the hold, which never rejoins; once every
member has joined, the hold leaves, and the coordinator completes the join at once with all of them
(removeMemberAndUpdateClassicGroup: all members joined) in one generation. The hold owns no partition,
sends no heartbeat and never syncs: its session timeout bounds it if the runner dies.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kafka_coop._kafka_python import admin_client, kafka_python_conf
from kafka_coop.errors import ClusterUnavailable
from kafka_coop.protocol import ConsumerProtocolSubscription, encode_subscription

HOLD_SESSION_TIMEOUT_MS: Final = 10_000  # a dead runner's hold is gone within this
HOLD_REBALANCE_TIMEOUT_MS: Final = 10_000
HOLD_REASON: Final = "kafka-coop rollout: holding the group open across a coordinated cutover"
HOLD_JOIN_S: Final = 10.0  # the hold's own join: seen in the group, then answered once the closed are gone
HOLD_SETTLE_S: Final = 10.0  # how long the held rebalance waits for every member before it goes on


def hold_instance_id(plan_id: str, step: int) -> str:
    return f"kafka-coop-hold-{plan_id}-{step}"


def hold_protocols(assignors: Sequence[str]) -> list[tuple[str, bytes]]:
    """The hold's JoinGroup protocols: each assignor, with a subscription to no topic."""
    metadata = encode_subscription(ConsumerProtocolSubscription(version=0, topics=()))
    return [(name, metadata) for name in dict.fromkeys(assignors)]


class GroupHold:
    """The hold of one cutover: `join()` before the closed members are removed, `release()` once every
    member rejoined. Its JoinGroup is parked by the coordinator until the old members are gone, so it
    goes on its own thread and its own connection."""

    def __init__(
        self,
        bootstrap: str,
        conf: Mapping[str, str],
        group: str,
        instance_id: str,
        assignors: Sequence[str],
        *,
        timeout_s: float = 30.0,
    ) -> None:
        self.group = group
        self.instance_id = instance_id
        self._protocols = hold_protocols(assignors)
        self._client = admin_client(bootstrap, kafka_python_conf(bootstrap, conf), timeout_s, "rollout run")
        self._thread: threading.Thread | None = None
        self.error: str | None = None  # the JoinGroup's error name, or why it failed
        self.joined = threading.Event()  # its JoinGroup answered

    def join(self) -> None:
        """Send the hold's JoinGroup (answered once the closed members are removed)."""
        self._thread = threading.Thread(target=self._join, name="kafka-coop-hold", daemon=True)
        self._thread.start()

    def _join(self) -> None:
        from kafka.errors import KafkaError, for_code
        from kafka.protocol.consumer.group import JoinGroupRequest

        manager: Any = self._client._manager
        version = manager.broker_version_data.api_version(JoinGroupRequest)
        request = JoinGroupRequest(
            group_id=self.group,
            session_timeout_ms=HOLD_SESSION_TIMEOUT_MS,
            rebalance_timeout_ms=HOLD_REBALANCE_TIMEOUT_MS,
            member_id="",
            group_instance_id=self.instance_id,
            protocol_type="consumer",
            protocols=[
                JoinGroupRequest.JoinGroupRequestProtocol(name=name, metadata=metadata)
                for name, metadata in self._protocols
            ],
            reason=HOLD_REASON,
            min_version=5,
            max_version=version,
        )

        async def send() -> Any:
            node = await self._client._find_coordinator_id(self.group)
            return await manager.send(request, node_id=node)

        try:
            response = manager.run(send)
            error = for_code(response.error_code)
            self.error = None if error.errno == 0 else str(error.message)
        except KafkaError as exc:
            self.error = type(exc).__name__
        finally:
            self.joined.set()

    def close(self) -> None:
        self._client.close()


def release(leave: Any, hold: GroupHold) -> str | None:
    """The hold leaves (LeaveGroup by its instance id): the rebalance waiting for it completes now. None,
    or why it could not (the coordinator then drops it after its session timeout)."""
    try:
        outcomes = leave.remove(hold.group, [hold.instance_id])
    except ClusterUnavailable as exc:
        return exc.message
    bad = [o.error for o in outcomes if o.error not in (None, "UNKNOWN_MEMBER_ID")]
    return bad[0] if bad else None


def hold_across(
    admin: Any,
    leave: Any,
    hold: GroupHold,
    closed: Sequence[str],
    rejoin: Callable[[], None],
    expect: Sequence[str],
    *,
    settle_s: float = HOLD_SETTLE_S,
    step_s: float = 0.02,
) -> bool:
    """The cutover's middle, held: the hold joins, the `closed` static members are removed (the group
    keeps the hold), `rejoin()` sends the members back, and once DescribeGroups lists every instance id
    of `expect` the hold leaves, so their rebalance completes with all of them. `admin`: a ClusterAdmin;
    `leave`: a LeaveGroupClient (its errors are raised, as a plain removal's are).

    Fallbacks: a hold that is not in the group within HOLD_JOIN_S (refused, or slow) is passed over,
    the members removed and sent back as without it; one whose members are not all back within
    `settle_s` (a member that refused the new settings rejoins on the old ones, which the group no longer
    shares) leaves anyway, the late ones joining as they would without it: the members that came back
    waited `settle_s` for them. True when every member came back held."""
    import time

    def wait(done: Callable[[], bool], bound_s: float) -> bool:
        end = time.monotonic() + bound_s
        while not done():
            if time.monotonic() > end:
                return False
            time.sleep(step_s)
        return True

    def listed() -> set[str]:
        return set(admin.describe_group(hold.group).instance_ids)

    hold.join()
    held = wait(lambda: hold.joined.is_set() or hold.instance_id in listed(), HOLD_JOIN_S)
    leave.remove(hold.group, list(closed))
    held = held and wait(hold.joined.is_set, HOLD_JOIN_S) and hold.error is None
    rejoin()
    back = held and wait(lambda: set(expect) <= listed(), settle_s)
    return release(leave, hold) is None and back

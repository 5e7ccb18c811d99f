"""Which coordinated cutovers `rollout run` holds open with its own member, and what the hold joins with.

The hold (kafka_coop.membership._hold) keeps a classic group from going Empty between the members' close
and their rejoin, so they all come back in one rebalance; it needs every member closed by a control
record and static (removed by instance id), and a classic target sharing an assignor with it.
"""

from __future__ import annotations

from kafka_coop.membership import hold_instance_id
from kafka_coop.membership._hold import hold_protocols
from kafka_coop.protocol import decode_subscription
from kafka_coop.rollout import Step
from kafka_coop.rollout._spec import MemberConfig
from kafka_coop.rollout._walk import MemberChange, StepGate
from kafka_coop.rollout.live._run import held_assignors

COOPERATIVE = {"partition.assignment.strategy": "cooperative-sticky", "group.protocol": "classic"}


def _step(*changes: MemberChange, kind: str = "cutover") -> Step:
    return Step(
        n=1, phase=2, phase_title="t", kind=kind, changes=changes, gate=StepGate(expect_members=len(changes))
    )  # type: ignore[arg-type]


def _change(name: str, *, via: str = "live", instance_id: str | None = "", **settings: str) -> MemberChange:
    return MemberChange.model_validate(
        {
            "member": name,
            "instance_id": name if instance_id == "" else instance_id,
            "family": "librdkafka",
            "via": via,
            "settings": settings or COOPERATIVE,
            "config": MemberConfig(),
        }
    )


def test_a_cutover_of_static_live_members_onto_a_classic_assignor_is_held_with_the_old_and_new_one() -> None:
    assert held_assignors("range", _step(_change("a"), _change("b"))) == ("range", "cooperative-sticky")


def test_a_cutover_onto_the_consumer_protocol_is_not_held() -> None:
    change = _change("a", **{"group.protocol": "consumer", "group.remote.assignor": "uniform"})
    assert held_assignors("cooperative-sticky", _step(change)) is None


def test_a_cutover_with_a_member_the_hook_restarts_or_a_dynamic_member_is_not_held() -> None:
    assert held_assignors("range", _step(_change("a"), _change("b", via="hook"))) is None
    assert held_assignors("range", _step(_change("a"), _change("b", instance_id=None))) is None


def test_a_rolling_step_or_an_empty_group_is_not_held() -> None:
    assert held_assignors("range", _step(_change("a"), kind="member")) is None
    assert held_assignors("", _step(_change("a"))) is None


def test_the_hold_joins_with_each_assignor_once_subscribed_to_no_topic() -> None:
    protocols = hold_protocols(["range", "cooperative-sticky", "range"])
    assert [name for name, _ in protocols] == ["range", "cooperative-sticky"]
    assert all(decode_subscription(metadata).topics == () for _, metadata in protocols)


def test_each_cutover_step_has_its_own_hold_id() -> None:
    assert hold_instance_id("plan-1", 4) != hold_instance_id("plan-1", 6)

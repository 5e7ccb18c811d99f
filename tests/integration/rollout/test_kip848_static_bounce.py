"""KIP-848 static bounces as the broker runs them: a static member killed without a clean close holds its
group.instance.id until its session ends, so its replacement is refused (UNRELEASED_INSTANCE_ID, fatal
for librdkafka); remove-members frees the id at once and the replacement joins, as the plan advises
(the advice itself: tests/unit/rollout/test_static_bounce.py)."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError

from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec
from tests.conftest import CliResult
from tests.integration.members import consumer_protocol_refusal


def test_a_killed_static_members_replacement_is_refused_until_remove_members_frees_the_id(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    topic, group = topic_factory(2), unique("static-bounce")
    spec = MemberSpec(name="s0", kind="python", group=group, topics=(topic,), instance_id="s0")
    processes.add(spec.replace(group_protocol="consumer"))
    processes.wait_stable(group, members=1)
    processes.kill("s0")  # no clean close: the broker still holds s0 for the member's session
    refused = consumer_protocol_refusal(bootstrap, group, topic, **{"group.instance.id": "s0"})
    assert refused is not None and refused.code() == KafkaError._FATAL, refused
    assert "UNRELEASED_INSTANCE_ID" in refused.str() or "instance id" in refused.str().lower(), refused.str()

    # --force: a killed member's manifest heartbeat can be seconds old, and remove-members cannot tell it
    # from a running one then (it refuses and says to use --force)
    removed = run_cli(
        "remove-members", group, "--bootstrap-server", bootstrap, "--instance-id", "s0", "--force"
    )
    assert removed.code == 0, removed.stdout + removed.stderr
    replacement = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "group.instance.id": "s0",
        }
    )
    replacement.subscribe([topic])
    try:
        deadline = time.monotonic() + 20
        while not replacement.assignment() and time.monotonic() < deadline:
            msg = replacement.poll(0.2)
            assert msg is None or msg.error() is None, msg.error()
        assert len(replacement.assignment()) == 2, "the freed id joins at once, no session to wait out"
    finally:
        replacement.close()

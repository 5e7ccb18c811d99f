"""The KIP-848 anchor's code path on the real sandbox, reduced: two consumer-protocol members, partitions
added under them (bench/partition_add.py runs 10 members and 900 partitions). Behaviour only, no timing."""

from __future__ import annotations

from pathlib import Path

from bench.partition_add import BY_NAME, run_case
from kafka_coop.sandbox import Sandbox

PARAMS = {
    "members": 2,
    "old": 2,
    "added": 4,
    "rate": 50.0,
    "process_ms": 2,
    "warmup_s": 1.0,
    "cooldown_s": 0.5,
    "settle_timeout_s": 120.0,
    "own_timeout_s": 120.0,
    "drain_timeout_s": 60.0,
}


def test_added_partitions_reach_consumer_protocol_members_without_them_rejoining(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    run_ = run_case(BY_NAME["consumer"], sandbox.bootstrap, sandbox.log_path, tmp_path, PARAMS)
    assert run_["all_owned_ms"] is not None  # every one of the 6 partitions owned exactly once
    assert run_["time_to_first_new_owned_s"] is not None
    # the coordinator saw the new partitions itself: a group-epoch bump, no member rejoined
    assert run_["broker_first_reaction"]["kind"] == "group epoch bump"
    assert run_["records"]["lost"] == 0

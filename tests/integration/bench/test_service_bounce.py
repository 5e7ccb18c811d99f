"""The service-shaped bounce's code path on the real sandbox, reduced: two members, four partitions.

What `make bench` runs at full size (bench/service_bounce.py): service-shaped members (2 ms per record,
a synchronous commit after each batch) bounced one at a time, and each step checked against the group
coordinator's own log lines. Here only the behaviour is asserted, never a timing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.harness.rolling import run_scenario
from bench.service_bounce import BY_NAME, clock_check
from kafka_coop.sandbox import Sandbox

PARAMS: dict[str, Any] = {
    "members": 2,
    "partitions": 4,
    "rate": 100.0,
    "process_ms": 2,
    "downtime_s": 0.0,
    "warmup_s": 1.0,
    "cooldown_s": 0.5,
    "gate_timeout_s": 180.0,
    "drain_timeout_s": 90.0,
}


def test_an_eager_dynamic_service_bounce_pauses_everyone_inside_the_coordinators_rebalances(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    run_ = run_scenario(BY_NAME["svc-py-eager-dynamic"], sandbox.bootstrap, tmp_path, PARAMS)
    clock = clock_check(run_, sandbox.log_path)
    assert run_["records"]["lost"] == 0
    assert run_["records"]["processed"] == run_["records"]["produced"] > 0
    # every step: the leave and the rejoin start coordinator rebalances (one, when the rejoin arrives
    # before the first completed), and the member nobody touched paused (eager revokes everything)
    assert all(step["broker_rebalances"] >= 1 for step in clock["steps"])
    assert run_["collateral_pause_ms"] > 0
    assert clock["summary"]["collateral_inside_broker_ms"] > 0


def test_a_static_java_service_bounce_has_no_rebalance_on_either_clock(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    run_ = run_scenario(BY_NAME["svc-java-coop-static"], sandbox.bootstrap, tmp_path, PARAMS)
    clock = clock_check(run_, sandbox.log_path)
    assert run_["records"]["lost"] == 0
    assert run_["collateral_pause_ms"] == 0
    assert clock["summary"]["broker_rebalances"] == 0
    assert clock["summary"]["static_rejoins_without_rebalance"] == PARAMS["members"]

"""The rolling-bounce benchmark's scenarios and parameters (what runs, in which order)."""

from __future__ import annotations

from collections.abc import Sequence

from bench.harness.frame import select_named
from bench.harness.rolling import Scenario

NAME = "rolling-bounce"
TITLE = "Rolling bounce, idle members: pause and unavailability by rebalance protocol and membership"
EVENTS_ARCHIVE = f"{NAME}.events.jsonl.gz"

TARGET_COOP_STATIC_REDUCTION = 20.0  # eager dynamic pause / cooperative static pause
TARGET_KIP848_VS_COOP = 1.0  # KIP-848 static pause / cooperative static pause
# Both sit at the restart floor, ~10x below everything else: one run each is within noise of the other,
# so they run `floor_repeats` times, interleaved, and the figures use each one's median total pause.
FLOOR_PAIR = ("py-coop-static", "py-consumer-static")
DEFAULT_HEARTBEAT_MS = 3000  # librdkafka's and the Java client's heartbeat.interval.ms

DEFAULTS: dict[str, int | float | str] = {
    "members": 10,
    "partitions": 60,
    "rate": 200.0,  # records/s, round-robin over the partitions
    "downtime_s": 0.0,  # between a member's stop and its restart, in the bounce scenarios
    "warmup_s": 3.0,  # produce with a settled group before the bounce starts
    "cooldown_s": 2.0,  # keep producing after the last gate
    "scale_out": 2,
    "slow_session_ms": 6000,
    "slow_heartbeat_ms": 2000,
    "slow_downtime_s": 8.0,
    "slow_members": 3,  # members restarted slowly, one at a time (not all 10: time budget)
    "floor_repeats": 3,
    "gate_timeout_s": 240.0,
    "drain_timeout_s": 60.0,
    "scenarios": "all",
}
QUICK: dict[str, int | float | str] = {
    "members": 3,
    "partitions": 12,
    "rate": 100.0,
    "warmup_s": 2.0,
    "cooldown_s": 1.0,
    "slow_members": 1,
    "floor_repeats": 1,
    "scenarios": "py-eager-dynamic,py-coop-static,py-consumer-static,java-coop-static,scaleout-consumer,"
    "slow-coop",
}


SCENARIOS: tuple[Scenario, ...] = (  # run order: each target pair back to back, so load drift hits both
    Scenario("py-eager-dynamic", "python", "eager", False),
    Scenario("py-coop-static", "python", "cooperative", True),
    Scenario("py-consumer-static", "python", "consumer", True),
    Scenario("py-eager-static", "python", "eager", True),
    # the heartbeat model's check (decomposition notes): eager dynamic with a 1 s heartbeat
    Scenario("py-eager-dynamic-hb1s", "python", "eager", False, heartbeat_ms=1000),
    Scenario("py-coop-dynamic", "python", "cooperative", False),
    Scenario("java-eager-dynamic", "java", "eager", False),
    Scenario("java-coop-static", "java", "cooperative", True),
    Scenario("java-eager-static", "java", "eager", True),
    Scenario("java-coop-dynamic", "java", "cooperative", False),
    Scenario("scaleout-eager", "python", "eager", True, "scale_out"),
    Scenario("scaleout-coop", "python", "cooperative", True, "scale_out"),
    Scenario("scaleout-consumer", "python", "consumer", True, "scale_out"),
    Scenario("slow-eager", "python", "eager", True, "slow_restart"),
    Scenario("slow-coop", "python", "cooperative", True, "slow_restart"),
    Scenario("slow-consumer", "python", "consumer", True, "slow_restart"),
)
BY_NAME = {s.name: s for s in SCENARIOS}


def schedule(scenarios: Sequence[Scenario], floor_repeats: int) -> list[tuple[Scenario, int]]:
    """Run order with repeat numbers: the floor pair's extra repeats follow its first run, interleaved
    (coop, KIP-848, coop, KIP-848, ...), so drifting load hits both alike."""
    names = {s.name for s in scenarios}
    out: list[tuple[Scenario, int]] = []
    for scn in scenarios:
        out.append((scn, 0))
        if scn.name == FLOOR_PAIR[-1] and set(FLOOR_PAIR) <= names:
            for repeat in range(1, floor_repeats):
                out.extend((BY_NAME[name], repeat) for name in FLOOR_PAIR)
    return out


def selected_scenarios(spec: str) -> list[Scenario]:
    return select_named(spec, BY_NAME, SCENARIOS, "scenario")

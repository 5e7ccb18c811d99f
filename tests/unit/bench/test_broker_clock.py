"""The broker-clock check of the service-shaped bounce (bench/harness/broker_clock.py): the coordinator's log
lines, its rebalance windows, and the per-step comparison with the members' pauses."""

from __future__ import annotations

from bench.harness.broker_clock import (
    LOGGER,
    BrokerWindow,
    broker_windows,
    check_step,
    parse_broker_log,
    parse_ts,
    summarize_clock,
)

PREFIX = "[GroupCoordinator id=1 topic=__consumer_offsets partition=0]"


def line(ts: str, message: str, logger: str = LOGGER, level: str = "INFO") -> str:
    return (
        f"2026-11-24T03:00:{ts} [group-coordinator-event-processor-1] {level} {logger} - {PREFIX} {message}\n"
    )


CLASSIC = [
    line(
        "01.000",
        "Preparing to rebalance group g in state PreparingRebalance with old generation 4 "
        "(reason: Adding new member m1-abc with group instance id null; client reason: not provided).",
    ),
    line("03.500", "Stabilized group g generation 5 with 3 members."),
    line(
        "03.520",
        "Assignment received from leader m0-def for group g for generation 5. The group has 3 "
        "members, 0 of which are static.",
    ),
    line(
        "04.000",
        "Preparing to rebalance group other in state PreparingRebalance with old generation 1 (reason: x).",
    ),
    line(
        "05.000",
        "Static member with groupInstanceId=m2 and unknown member id joins group g in Stable state. "
        "Replacing previously mapped member m2-1 with this groupInstanceId.",
    ),
    "2026-11-24T03:00:06.000 [main] INFO kafka.server.BrokerServer - Preparing to rebalance group g in state "
    "PreparingRebalance with old generation 9 (reason: not the coordinator's logger).\n",
]


def test_parse_keeps_only_the_coordinators_lines_about_the_wanted_groups() -> None:
    lines = parse_broker_log(CLASSIC, groups=["g"])
    assert [ln.kind for ln in lines] == ["prepare", "stabilized", "synced", "static_rejoin"]
    assert lines[0].generation == 4 and lines[0].detail.startswith("Adding new member m1-abc")
    assert lines[0].ts_ms == parse_ts("2026-11-24T03:00:01.000")
    assert lines[3].member == "m2" and lines[3].detail == "Stable"


def test_a_classic_window_runs_from_prepare_to_the_leaders_assignment() -> None:
    lines = parse_broker_log(CLASSIC)
    start = parse_ts("2026-11-24T03:00:01.000")
    assert broker_windows(lines, "g") == [BrokerWindow(start, start + 2520, 5, lines[0].detail)]


def test_a_kip848_window_runs_from_the_epoch_bump_to_the_last_member_state_of_that_epoch() -> None:
    text = [
        line(
            "01.000",
            "[GroupId k] Member AAAAAAAAAAAAAAAAAAAAAA joins the consumer group using the consumer protocol.",
        ),
        line("01.001", "[GroupId k] Bumped group epoch to 7 with metadata hash 12."),
        line(
            "01.002",
            "[GroupId k] Computed a new target assignment for epoch 7 with 'uniform' assignor in 0ms.",
        ),
        line(
            "01.010",
            "[GroupId k] Member BBBBBBBBBBBBBBBBBBBBBB new assignment state: epoch=7, previousEpoch=6, "
            "state=UNREVOKED_PARTITIONS, assignedPartitions=[t-0] and revokedPartitions=[t-1, t-2].",
            level="DEBUG",
        ),
        line(
            "04.900",
            "[GroupId k] Member BBBBBBBBBBBBBBBBBBBBBB new assignment state: epoch=7, previousEpoch=6, "
            "state=STABLE, assignedPartitions=[t-0] and revokedPartitions=[].",
            level="DEBUG",
        ),
        line(
            "05.100",
            "[GroupId k] Member AAAAAAAAAAAAAAAAAAAAAA new assignment state: epoch=7, previousEpoch=0, "
            "state=STABLE, assignedPartitions=[t-1, t-2] and revokedPartitions=[].",
            level="DEBUG",
        ),
    ]
    lines = parse_broker_log(text)
    assert [ln.kind for ln in lines] == [
        "joined",
        "epoch_bump",
        "member_state",
        "member_state",
        "member_state",
    ]
    assert (lines[2].assigned, lines[2].revoking, lines[2].detail) == (1, 2, "UNREVOKED_PARTITIONS")
    bump = parse_ts("2026-11-24T03:00:01.001")
    assert broker_windows(lines, "k") == [BrokerWindow(bump, bump + 4099, 7, "group epoch bump")]


def test_collateral_pause_inside_a_broker_window_agrees_and_outside_it_is_counted() -> None:
    window = BrokerWindow(1000, 3000, 5, "join")
    pauses = [
        ("m0", 500, 3600),  # the restarted member: own, wherever it falls
        ("m1", 1500, 3010),  # collateral: 1,500 ms inside, 10 ms after the window closed
        ("m2", 3500, 3700),  # collateral with no broker rebalance under it
        ("m3", 9000, 9100),  # outside the step
    ]
    step = check_step(["m0"], (400, 4000), pauses, [window])
    assert step["own_pause_ms"] == 3100
    assert step["collateral_pause_ms"]["sum"] == 1710
    assert step["collateral_inside_broker_ms"] == 1500
    assert step["collateral_outside_broker_ms"] == 210
    assert step["collateral_after_broker_ms"] == 10  # m1 ran past the window
    assert step["collateral_without_broker_window_ms"] == 200  # m2: no coordinator rebalance under it
    assert step["collateral_before_broker_ms"] == 0
    assert step["collateral_end_after_broker_ms"]["median"] == 10
    assert step["broker_rebalances"] == 1 and step["broker_rebalance_ms"] == [2000]


def test_the_summary_flags_collateral_in_steps_the_broker_saw_no_rebalance_in() -> None:
    quiet = check_step(["m0"], (0, 1000), [("m0", 100, 400), ("m1", 200, 250)], [])
    busy = check_step(["m1"], (2000, 5000), [("m2", 2500, 2600)], [BrokerWindow(2400, 2700, 3, "x")])
    summary = summarize_clock([quiet, busy])
    assert summary["steps_without_broker_rebalance"] == 1
    assert summary["collateral_in_steps_without_broker_rebalance_ms"] == 50
    assert summary["collateral_inside_broker_ms"] == 100
    assert summary["collateral_outside_broker_ms"] == 50


def test_a_kip848_static_rejoin_is_no_part_of_the_epoch_before_it_and_counts_as_a_rejoin() -> None:
    text = [
        line("01.000", "[GroupId k] Bumped group epoch to 3 with metadata hash 1."),
        line(
            "01.500",
            "[GroupId k] Member AAAAAAAAAAAAAAAAAAAAAA new assignment state: epoch=3, previousEpoch=2, "
            "state=STABLE, assignedPartitions=[t-0] and revokedPartitions=[].",
            level="DEBUG",
        ),
        line(
            "09.000",
            "[GroupId k] Static member with instance id m0 re-joins the consumer group using the consumer "
            "protocol. Created a new member CCCCCCCCCCCCCCCCCCCCCC to replace the existing member "
            "AAAAAAAAAAAAAAAAAAAAAA.",
        ),
        line(
            "09.001",
            "[GroupId k] Member CCCCCCCCCCCCCCCCCCCCCC new assignment state: epoch=3, previousEpoch=0, "
            "state=STABLE, assignedPartitions=[t-0] and revokedPartitions=[].",
            level="DEBUG",
        ),
    ]
    lines = parse_broker_log(text)
    assert [ln.kind for ln in lines] == ["epoch_bump", "member_state", "static_rejoin_848", "member_state"]
    bump = parse_ts("2026-11-24T03:00:01.000")
    assert broker_windows(lines, "k") == [BrokerWindow(bump, bump + 500, 3, "group epoch bump")]
    rejoin = parse_ts("2026-11-24T03:00:09.000")
    step = check_step(["m0"], (rejoin - 100, rejoin + 100), [], broker_windows(lines, "k"), lines)
    assert step["broker_rebalances"] == 0 and step["broker_static_rejoins_without_rebalance"] == 1

"""The service-shaped bounce's scenarios, member commands and restart segments (no broker)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.harness.figures import restart_segments, restart_split
from bench.harness.service_members import SERVICE_MEMBER, python_command
from bench.service_bounce import BY_NAME, SCENARIOS, schedule, selected
from kafka_coop.sandbox.testing import MemberSpec
from testbed.service_member import consumer_conf, parse_args


def test_every_family_runs_every_protocol_static_and_dynamic_against_its_own_eager_dynamic() -> None:
    combos = {(s.family, s.protocol, s.static) for s in SCENARIOS}
    assert len(combos) == len(SCENARIOS) == 12
    assert ("python", "consumer", False) in combos and ("java", "consumer", False) in combos
    assert all(s.shape == "service" for s in SCENARIOS)
    assert BY_NAME["svc-java-coop-static"].baseline == "svc-java-eager-dynamic"
    assert BY_NAME["svc-py-consumer-dynamic"].label == "python KIP-848 dynamic (service)"


def test_the_floor_pairs_repeat_interleaved_after_their_first_runs() -> None:
    order = [(s.name, r) for s, r in schedule(selected("svc-py-coop-static,svc-py-consumer-static"), 3)]
    assert order == [
        ("svc-py-coop-static", 0),
        ("svc-py-consumer-static", 0),
        ("svc-py-coop-static", 1),
        ("svc-py-consumer-static", 1),
        ("svc-py-coop-static", 2),
        ("svc-py-consumer-static", 2),
    ]


def test_the_python_service_member_gets_protocol_work_and_static_id_from_the_spec() -> None:
    spec = MemberSpec(
        name="m3",
        kind="python",
        group="g",
        topics=("t",),
        assignors=("cooperative-sticky",),
        instance_id="m3",
        process_ms=2,
        record_log=True,
        manifests=False,
    )
    cmd = python_command(spec, "b:9092", Path("e.jsonl"), Path("r.txt"))
    assert cmd[1] == str(SERVICE_MEMBER)
    ns = parse_args(cmd[2:])
    conf: dict[str, Any] = consumer_conf(ns)
    assert conf["partition.assignment.strategy"] == "cooperative-sticky"
    assert conf["group.instance.id"] == "m3" and conf["enable.auto.commit"] == "false"
    assert (ns.process_ms, ns.batch, ns.records) == (2.0, 500, "r.txt")


def test_a_kip848_service_member_sets_no_classic_assignor() -> None:
    spec = MemberSpec(name="m0", kind="python", group="g", topics=("t",), group_protocol="consumer")
    conf = consumer_conf(parse_args(python_command(spec, "b", Path("e"), Path("r"))[2:]))
    assert conf["group.protocol"] == "consumer" and "partition.assignment.strategy" not in conf
    assert "group.instance.id" not in conf


def ev(client: str, kind: str, ts: int, owned: int = 0) -> dict[str, Any]:
    return {
        "client_id": client,
        "kind": kind,
        "ts_ms": ts,
        "seq": ts,
        "owned": [["t", i] for i in range(owned)],
    }


def test_a_restart_splits_into_close_process_gap_and_join() -> None:
    events = [
        ev("m0", "started", 0),
        ev("m0", "assigned", 30, owned=2),
        ev("m0", "revoked", 1000),
        ev("m0", "closed", 1007),
        ev("m0", "started", 1220),
        ev("m0", "assigned", 1235, owned=2),
        ev("m1", "started", 0),  # never restarted: no segment
    ]
    assert restart_segments(events) == {"close": [7], "gap": [213], "join": [15]}


def test_a_restarted_members_own_pause_splits_at_its_process_exit() -> None:
    steps = [{"members": ["m0"], "start_ms": 1000, "stop_s": 0.25}]
    pauses = [("m0", 1010, 2000), ("m1", 1100, 1200)]  # m1 was not restarted in this step
    assert restart_split(steps, pauses) == {"to_exit": [240], "to_assigned": [750]}

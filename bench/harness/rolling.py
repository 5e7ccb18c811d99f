"""One rolling scenario on the bed (shell): members started, bounced or scaled out behind the readiness
gate under continuous produce, then drained and audited; what rolling_bounce and service_bounce run.

The procedure is the same everywhere: for each member in turn, SIGTERM, wait `downtime_s`, start the
same member again, then the readiness gate (`MemberProcesses.wait_stable` with the members' own view
of ownership); only then the next member.
"""

from __future__ import annotations

import gzip
import json
import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bench.harness.brokers import delete_topic
from bench.harness.figures import pause_figures, read_record_logs, record_stats, unowned_steps
from kafka_coop._vocab import RebalanceProtocol

MemberKind = Literal["python", "java"]  # the sandbox member kinds the scenarios run
Case = Literal["bounce", "scale_out", "slow_restart"]
# idle: `kafka-coop consume` / CoopMember as they ship (poll every 100 ms, no work per record);
# service: real time per record in batches, a synchronous commit after each (bench/service_bounce.py)
Shape = Literal["idle", "service"]


@dataclass(frozen=True)
class Scenario:
    name: str
    family: MemberKind
    protocol: RebalanceProtocol
    static: bool
    case: Case = "bounce"
    heartbeat_ms: int | None = None  # the client's heartbeat.interval.ms when not its default (3000)
    shape: Shape = "idle"

    @property
    def baseline(self) -> str:
        """The scenario this one's ratios are taken against."""
        if self.case == "bounce":
            prefix = "svc-" if self.shape == "service" else ""
            return f"{prefix}{'py' if self.family == 'python' else 'java'}-eager-dynamic"
        return f"{'scaleout' if self.case == 'scale_out' else 'slow'}-eager"

    @property
    def label(self) -> str:
        membership = "static" if self.static else "dynamic"
        proto = {"eager": "eager", "cooperative": "coop", "consumer": "KIP-848"}[self.protocol]
        if self.case == "bounce":
            beat = f" hb {self.heartbeat_ms / 1000:g} s" if self.heartbeat_ms else ""
            return f"{self.family} {proto} {membership}{beat} ({self.shape})"
        return f"{'scale-out' if self.case == 'scale_out' else 'slow restart'} {proto} ({self.shape})"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def load_avg() -> float:
    return round(os.getloadavg()[0], 2)


def member_specs(
    scn: Scenario, group: str, topic: str, params: Mapping[str, Any], count: int, first: int = 0
) -> list[Any]:
    from kafka_coop.sandbox.testing import MemberSpec

    assignors = {"eager": ("range",), "cooperative": ("cooperative-sticky",), "consumer": ("range",)}[
        scn.protocol
    ]
    props: dict[str, str] = {}
    if scn.heartbeat_ms is not None:
        props["heartbeat.interval.ms"] = str(scn.heartbeat_ms)
    if scn.case == "slow_restart" and scn.protocol != "consumer":
        props = {
            "session.timeout.ms": str(params["slow_session_ms"]),
            "heartbeat.interval.ms": str(params["slow_heartbeat_ms"]),
        }
    specs = []
    for i in range(first, first + count):
        name = f"{scn.name}-m{i}"
        specs.append(
            MemberSpec(
                name=name,
                kind=scn.family,
                group=group,
                topics=(topic,),
                assignors=assignors,
                group_protocol="consumer" if scn.protocol == "consumer" else "classic",
                instance_id=name if scn.static else None,
                properties=props,
                record_log=True,
                manifests=False,
                process_ms=int(params.get("process_ms", 0)) if scn.shape == "service" else 0,
            )
        )
    return specs


def add_members(
    processes: Any,
    scn: Scenario,
    group: str,
    topic: str,
    params: Mapping[str, Any],
    count: int,
    first: int = 0,
) -> list[Any]:
    """Start `count` members of the scenario's family and shape (idle: the test bed's own processes)."""
    specs = member_specs(scn, group, topic, params, count, first)
    if scn.shape == "service":
        from bench.harness.service_members import add_service_members

        return add_service_members(processes, specs)
    return list(processes.add_many(specs))


def set_group_session(bootstrap: str, group: str, session_ms: int, heartbeat_ms: int) -> None:
    """KIP-848 has no client session setting: give the group its own (GroupConfig, Kafka 4.0+)."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry(
                "consumer.session.timeout.ms", str(session_ms), incremental_operation=AlterConfigOpType.SET
            ),
            ConfigEntry(
                "consumer.heartbeat.interval.ms",
                str(heartbeat_ms),
                incremental_operation=AlterConfigOpType.SET,
            ),
        ],
    )
    for future in admin.incremental_alter_configs([res]).values():
        future.result(timeout=30)


def wait_settled(processes: Any, group: str, partitions: int, timeout_s: float) -> float:
    """The readiness gate (the members' own view of ownership, `MemberProcesses.wait_stable`); returns
    the seconds it waited."""
    start = time.monotonic()
    processes.wait_stable(group, timeout_s=timeout_s, partitions=partitions)
    return time.monotonic() - start


def drain(paths: list[Path], topic: str, produced: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        distinct = {(r.partition, r.offset) for r in read_record_logs(paths) if r.topic == topic}
        if len(distinct) >= produced:
            return True
        time.sleep(0.5)
    return False


def _step(names: list[str], t: float, t_ms: int, stop_s: float, gate: float) -> dict[str, Any]:
    """One step of the scenario: whose, its wall-clock window, the stop, the settle gate, the whole."""
    return {
        "members": names,
        "start_ms": t_ms,
        "end_ms": _now_ms(),
        "stop_s": stop_s,
        "gate_s": gate,
        "step_s": time.monotonic() - t,
    }


def scale_out(
    processes: Any,
    scn: Scenario,
    group: str,
    topic: str,
    params: Mapping[str, Any],
    members: int,
    partitions: int,
) -> dict[str, Any]:
    """`scale_out` more members join at once; one step, until the group is settled again."""
    t, t_ms = time.monotonic(), _now_ms()
    added = add_members(processes, scn, group, topic, params, int(params["scale_out"]), first=members)
    gate = wait_settled(processes, group, partitions, float(params["gate_timeout_s"]))
    return _step([m.spec.name for m in added], t, t_ms, 0.0, gate)


def bounce_one_by_one(
    processes: Any, scn: Scenario, group: str, params: Mapping[str, Any], partitions: int
) -> list[dict[str, Any]]:
    """Each member (the `slow_members` first ones of a slow restart) stopped, down for the downtime,
    started, and the group settled before the next: one step each."""
    bounced = processes.group_members(group)
    downtime = float(params["downtime_s"])
    if scn.case == "slow_restart":
        bounced = bounced[: int(params["slow_members"])]
        downtime = float(params["slow_downtime_s"])
    steps = []
    for member in bounced:
        t, t_ms = time.monotonic(), _now_ms()
        member.stop()
        stop_s = time.monotonic() - t
        if downtime > 0:
            time.sleep(downtime)
        member.start()
        gate = wait_settled(processes, group, partitions, float(params["gate_timeout_s"]))
        steps.append(_step([member.spec.name], t, t_ms, stop_s, gate))
    return steps


def run_scenario(
    scn: Scenario, bootstrap: str, workdir: Path, params: Mapping[str, Any], repeat: int = 0
) -> dict[str, Any]:
    from kafka_coop.sandbox.testing import MemberProcesses, SteadyProducer

    tag = uuid.uuid4().hex[:6]
    group, topic = f"rb-{scn.name}-{tag}", f"rb-{scn.name}-{tag}"
    members, partitions = int(params["members"]), int(params["partitions"])
    gate_timeout = float(params["gate_timeout_s"])
    load_start = load_avg()
    bed_dir = workdir / (f"{scn.name}-r{repeat}" if repeat else scn.name)
    steps: list[dict[str, Any]] = []
    with MemberProcesses(bootstrap, bed_dir) as processes:
        processes.admin.ensure_topic(topic, partitions)
        if scn.case == "slow_restart" and scn.protocol == "consumer":
            set_group_session(
                bootstrap, group, int(params["slow_session_ms"]), int(params["slow_heartbeat_ms"])
            )
        producer = SteadyProducer(bootstrap, topic, partitions, rate=float(params["rate"])).start()
        try:
            t_setup = time.monotonic()
            add_members(processes, scn, group, topic, params, members)
            wait_settled(processes, group, partitions, gate_timeout)
            setup_s = time.monotonic() - t_setup
            time.sleep(float(params["warmup_s"]))
            t0 = _now_ms()
            if scn.case == "scale_out":
                steps.append(scale_out(processes, scn, group, topic, params, members, partitions))
            else:
                steps += bounce_one_by_one(processes, scn, group, params, partitions)
            t1 = _now_ms()
            time.sleep(float(params["cooldown_s"]))
        finally:
            produced = producer.stop()
        acked = dict(producer.acked)
        record_paths = [m.records_path for m in processes.members.values()]
        drained = drain(record_paths, topic, produced, float(params["drain_timeout_s"]))
        processes.stop_all()
        events = [e for m in processes.members.values() for e in m.events()]
        records = read_record_logs(record_paths)
    delete_topic(bootstrap, topic)
    step_windows = [([str(m) for m in st["members"]], int(st["start_ms"]), int(st["end_ms"])) for st in steps]
    figures = pause_figures(events, (t0, t1), step_windows)
    stats = record_stats(records, topic=topic, acked=acked, window=(t0, t1))
    return {
        "scenario": scn.name,
        "repeat": repeat,
        "label": scn.label,
        "family": scn.family,
        "protocol": scn.protocol,
        "static": scn.static,
        "case": scn.case,
        "shape": scn.shape,
        "baseline": scn.baseline,
        "group": group,
        "topic": topic,
        "members": members,
        "partitions": partitions,
        "load_avg_1m_start": load_start,
        "load_avg_1m_end": load_avg(),
        "setup_s": round(setup_s, 3),
        "window_start_ms": t0,
        "window_end_ms": t1,
        "bounce_wall_s": (t1 - t0) / 1000.0,
        "steps": steps,
        "unavailable_ms": figures.unavailable_ms,
        "pause_ms": figures.pause_ms,
        "own_pause_ms": figures.own_pause_ms,
        "collateral_pause_ms": figures.collateral_pause_ms,
        "pause_ms_by_member": figures.pause_ms_by_member,
        "rebalances": figures.rebalances,
        "revoked_partitions": figures.revoked_partitions,
        "drained": drained,
        "records": stats.model_dump(),
        "unowned_steps": [list(s) for s in unowned_steps(figures.intervals, t0)],
        "_events": events,
    }


def archive_events(runs: list[dict[str, Any]], results_dir: Path, name: str) -> Path:
    """Every member event of the runs, gzipped JSON lines (written by each run, not committed)."""
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / name
    tmp = path.with_name(path.name + ".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as out:
        for run_ in runs:
            for event in sorted(
                run_["_events"], key=lambda e: (e["ts_ms"], str(e.get("client_id")), e["seq"])
            ):
                out.write(json.dumps(event, separators=(",", ":")) + "\n")
    os.replace(tmp, path)
    return path

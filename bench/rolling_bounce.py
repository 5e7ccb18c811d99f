"""Rolling bounce: pause and unavailability across rebalance protocols, client families and membership.

One local broker; scenarios run one after another, each on a fresh group AND a fresh topic (deleted
afterwards), under continuous produce (`SteadyProducer`, CreateTime stamped by librdkafka at produce
time). Every member is its own OS process: `kafka-coop consume` (CoopConsumer on confluent-kafka) or one
JVM running one kafka-clients consumer (`CoopMember`), so a bounce restarts a real process.

Scenarios
---------
- rolling bounce of 10 members on 60 partitions: Python eager (range) / cooperative (cooperative-sticky)
  x dynamic / static, Python KIP-848 (`group.protocol=consumer`) static; Java eager / cooperative x
  dynamic / static;
- what static membership does not cover, Python, static members, eager vs cooperative vs consumer:
  scale-out by 2 members, and a restart slower than the session timeout (6 s session, 8 s downtime;
  for KIP-848 the group-level `consumer.session.timeout.ms`, which the broker only allows after
  `group.consumer.min.session.timeout.ms` is lowered to 6000 — its default floor is 45 s).

The procedure is identical everywhere: for each member in turn, SIGTERM (graceful close: commit, then
leave for a dynamic member, stay for a static one), wait `downtime_s`, start the same member again, then
the readiness gate: the group described Stable with the expected size AND, from the members' own events,
every live member owning at least one partition and all partitions owned exactly once. Only then the
next member. Client session/heartbeat settings are the defaults of each client (and of the broker for
KIP-848) except in the slow-restart case.

Figures per scenario (over the bounce window: first stop to the last gate passing)
------------------------------------------------------------------------------
- total partition-unavailable ms and total pause ms, from `kafka_coop.analytics.summarize` over the
  member event streams with the window as a phase, i.e. what `kafka-coop report` gives;
- end-to-end latency (produce timestamp -> first time a member processed it) of the records produced in
  the window: p50 / p99 / max, from the members' record logs;
- duplicates (extra deliveries; the records delivered more than once) and lost (acknowledged by the
  broker, processed by nobody: must be 0), over the whole scenario;
- bounce wall time; ratios of unavailable ms and pause ms to eager dynamic of the same client family
  (for scale-out / slow restart: to eager of the same case).

Targets: cooperative static >= 20x lower total pause than eager dynamic (both families); KIP-848 static
pause <= cooperative static pause (Python); 0 lost everywhere.

Run: `.venv/bin/python -m bench --only rolling_bounce` -> bench/results/rolling-bounce.json/.png; the
raw member events of every scenario go to bench/results/rolling-bounce.events.jsonl.gz, so any figure can
be recomputed with `kafka-coop report` (one group per scenario).
"""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from bench._common import RESULTS_DIR, BenchArgs, BenchResult, main_for, new_result
from bench._rolling_figures import (
    latest_owned,
    ownership_settled,
    pause_figures,
    read_record_logs,
    record_stats,
    summarize_runs,
    unowned_steps,
)
from bench._rolling_scenarios import (
    BROKER_CONFIG,
    BROKER_START_TIMEOUT_S,
    DEFAULTS,
    EVENTS_ARCHIVE,
    NAME,
    QUICK,
    TITLE,
    Scenario,
    schedule,
    selected_scenarios,
)
from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION


# --- the shell ------------------------------------------------------------------------------------------
class ScenarioError(RuntimeError):
    pass


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def member_specs(
    scn: Scenario, group: str, topic: str, params: Mapping[str, Any], count: int, first: int = 0
) -> list[Any]:
    from kafka_coop.sandbox import MemberSpec

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
    """Start `count` members of the scenario's family and shape (idle: the fleet's own processes)."""
    specs = member_specs(scn, group, topic, params, count, first)
    if scn.shape == "service":
        from bench._service_fleet import add_service_members

        return add_service_members(processes, specs)
    return list(processes.add_many(specs))


def _set_group_session(bootstrap: str, group: str, session_ms: int, heartbeat_ms: int) -> None:
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


def _delete_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_topics([topic], operation_timeout=30).values():
        with contextlib.suppress(Exception):
            future.result(timeout=30)


def wait_settled(processes: Any, group: str, partitions: int, timeout_s: float) -> float:
    """The readiness gate; returns the seconds it waited."""
    start = time.monotonic()
    deadline = start + timeout_s
    state = "nothing"
    while time.monotonic() < deadline:
        live = [m for m in processes.group_members(group) if m.alive]
        for m in processes.group_members(group):
            code = m.proc.poll() if m.proc is not None else None
            if code not in (None, 0, -15, -9):
                raise ScenarioError(f"member {m.spec.name} exited with {code}: {m.log_tail(5)}")
        desc = processes.admin.describe_group(group)
        state = f"{desc.state} with {len(desc.members)} members"
        if desc.state == "stable" and len(desc.members) == len(live):
            owned = {m.spec.name: latest_owned(m.events_since_start()) for m in live}
            if ownership_settled(owned, partitions):
                return time.monotonic() - start
        time.sleep(0.2)
    raise ScenarioError(f"group {group} did not settle within {timeout_s:.0f} s (last: {state})")


def _drain(paths: list[Path], topic: str, produced: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        distinct = {(r.partition, r.offset) for r in read_record_logs(paths) if r.topic == topic}
        if len(distinct) >= produced:
            return True
        time.sleep(0.5)
    return False


def run_scenario(
    scn: Scenario, bootstrap: str, workdir: Path, params: Mapping[str, Any], repeat: int = 0
) -> dict[str, Any]:
    from kafka_coop.sandbox import MemberProcesses, SteadyProducer

    tag = uuid.uuid4().hex[:6]
    group, topic = f"rb-{scn.name}-{tag}", f"rb-{scn.name}-{tag}"
    members, partitions = int(params["members"]), int(params["partitions"])
    gate_timeout = float(params["gate_timeout_s"])
    load_start = _load()
    fleet_dir = workdir / (f"{scn.name}-r{repeat}" if repeat else scn.name)
    steps: list[dict[str, Any]] = []
    with MemberProcesses(bootstrap, fleet_dir) as processes:
        processes.admin.ensure_topic(topic, partitions)
        if scn.case == "slow_restart" and scn.protocol == "consumer":
            _set_group_session(
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
                t, t_ms = time.monotonic(), _now_ms()
                added = add_members(
                    processes, scn, group, topic, params, int(params["scale_out"]), first=members
                )
                gate = wait_settled(processes, group, partitions, gate_timeout)
                steps.append(
                    {
                        "members": [m.spec.name for m in added],
                        "start_ms": t_ms,
                        "end_ms": _now_ms(),
                        "stop_s": 0.0,
                        "gate_s": gate,
                        "step_s": time.monotonic() - t,
                    }
                )
            else:
                bounced = processes.group_members(group)
                downtime = float(params["downtime_s"])
                if scn.case == "slow_restart":
                    bounced = bounced[: int(params["slow_members"])]
                    downtime = float(params["slow_downtime_s"])
                for member in bounced:
                    t, t_ms = time.monotonic(), _now_ms()
                    member.stop()
                    stop_s = time.monotonic() - t
                    if downtime > 0:
                        time.sleep(downtime)
                    member.start()
                    gate = wait_settled(processes, group, partitions, gate_timeout)
                    steps.append(
                        {
                            "members": [member.spec.name],
                            "start_ms": t_ms,
                            "end_ms": _now_ms(),
                            "stop_s": stop_s,
                            "gate_s": gate,
                            "step_s": time.monotonic() - t,
                        }
                    )
            t1 = _now_ms()
            time.sleep(float(params["cooldown_s"]))
        finally:
            produced = producer.stop()
        acked = dict(producer.acked)
        record_paths = [m.records_path for m in processes.members.values()]
        drained = _drain(record_paths, topic, produced, float(params["drain_timeout_s"]))
        processes.stop_all()
        events = [e for m in processes.members.values() for e in m.events()]
        records = read_record_logs(record_paths)
    _delete_topic(bootstrap, topic)
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
        "load_avg_1m_end": _load(),
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


def _archive_events(runs: list[dict[str, Any]], results_dir: Path, name: str = EVENTS_ARCHIVE) -> Path:
    import json

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


@contextlib.contextmanager
def _broker(tmp: Path) -> Iterator[Any]:
    """Like bench._common.sandbox, with a longer start deadline: on a shared 2-core box under a load of
    15+ the broker has needed more than the default 120 s to serve its first group request."""
    from kafka_coop.sandbox import Sandbox, free_port

    box = Sandbox(
        dir=tmp / "kafka", port=free_port(), kafka_version=DEFAULT_KAFKA_VERSION, config=BROKER_CONFIG
    )
    box.start(timeout_s=BROKER_START_TIMEOUT_S)
    try:
        yield box
    finally:
        box.stop()


def run(args: BenchArgs) -> BenchResult:
    params: dict[str, Any] = {**DEFAULTS, **(QUICK if args.quick else {})}
    params = {key: args.param(key, value) for key, value in params.items()}
    scenarios = selected_scenarios(str(params["scenarios"]))
    result = new_result(
        NAME,
        TITLE,
        {
            **params,
            "scenario_names": [s.name for s in scenarios],
            "broker_config": dict(BROKER_CONFIG),
            "load_avg_1m_start": _load(),
            "java_packing": "one JVM per member (members=1): a bounce restarts a real JVM, as in production",
            "readiness_gate": "group Stable with the expected size + every live member owns >= 1 partition + "
            "all partitions owned exactly once (from the members' events), polled every 0.2 s",
            "consume_loop": "Python: kafka-coop consume (poll 0.1 s, store_offsets per record, "
            "auto-commit 5 s, commit on revoke); Java: CoopMember (poll 100 ms, commitAsync every 1 s, "
            "commitSync on revoke)",
            "manifests": False,
        },
        kafka_version=DEFAULT_KAFKA_VERSION,
    )
    runs: list[dict[str, Any]] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kafka-coop-rb-") as tmp, _broker(Path(tmp)) as kafka:
        for scn, repeat in schedule(scenarios, int(params["floor_repeats"])):
            t = time.monotonic()
            print(f"  {scn.name}{f' (repeat {repeat})' if repeat else ''} ...", flush=True)
            try:
                run_ = run_scenario(scn, kafka.bootstrap, Path(tmp), params, repeat)
            except Exception as exc:  # one broken scenario must not lose the others
                failures.append(f"{scn.name}: {exc}")
                print(f"  {scn.name} FAILED: {exc}", flush=True)
                keep = Path(tempfile.mkdtemp(prefix=f"kafka-coop-rb-{scn.name}-"))
                with contextlib.suppress(OSError):
                    shutil.copytree(Path(tmp) / scn.name, keep, dirs_exist_ok=True)
                continue
            runs.append(run_)
            rec = run_["records"]
            print(
                f"  {scn.name}: pause {run_['pause_ms']:,} ms, unavailable {run_['unavailable_ms']:,} ms, "
                f"p99 {rec['latency_p99_ms']} ms, dups {rec['duplicates']}, lost {rec['lost']}, "
                f"bounce {run_['bounce_wall_s']:.1f} s, scenario {time.monotonic() - t:.0f} s, "
                f"load {_load()}",
                flush=True,
            )
    result.parameters["load_avg_1m_end"] = _load()
    if not args.quick or args.results_dir != RESULTS_DIR:
        _archive_events(runs, args.results_dir)
    for run_ in runs:
        run_.pop("_events")
    result.runs = runs
    for failure in failures:
        result.notes.append(f"scenario failed: {failure}")
    return summarize_runs(result, runs)


def plot(result: BenchResult, fig: Any) -> None:
    import numpy as np

    runs = [r for r in result.runs if not r.get("repeat")]  # repeats are in the notes and the medians
    left, right = fig.subplots(1, 2, width_ratios=[3, 2])
    names = [str(r["scenario"]) for r in runs]
    x = np.arange(len(names))
    pause = [max(float(r["pause_ms"]), 1.0) for r in runs]  # type: ignore[arg-type]
    unavail = [max(float(r["unavailable_ms"]), 1.0) for r in runs]  # type: ignore[arg-type]
    left.bar(x - 0.2, pause, 0.4, label="total pause (member-ms)")
    left.bar(x + 0.2, unavail, 0.4, label="partition-unavailable (partition-ms)")
    left.set_yscale("log")
    left.set_xticks(x, names, rotation=60, ha="right", fontsize=7)
    left.set_ylabel("ms (log)")
    left.legend(fontsize=7)
    left.grid(axis="y", alpha=0.3)
    for r in runs:
        if r["case"] != "bounce" or r["family"] != "python":
            continue
        steps = r["unowned_steps"]
        assert isinstance(steps, list)
        xs, ys = [0.0], [0]
        for step in steps:
            assert isinstance(step, list)
            t, n = step
            assert isinstance(t, int | float) and isinstance(n, int | float)
            xs += [t / 1000.0, t / 1000.0]
            ys += [ys[-1], int(n)]
        right.plot(xs, ys, label=str(r["label"]), linewidth=0.9)
    right.set_xlabel("s since the bounce started")
    right.set_ylabel("unowned partitions")
    right.set_title("Python members: unowned partitions during the bounce", fontsize=8)
    right.legend(fontsize=7)
    right.grid(alpha=0.3)


if __name__ == "__main__":
    main_for(run, plot)

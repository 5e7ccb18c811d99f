"""One static member's restart, cut into segments with the same definitions on every bed.

A static restart's own pause is the whole cost of a static bounce (no rebalance, no collateral pause),
so the rolling-bounce ratios are bounded by it. This benchmark restarts one member of a small static
group a few times and times each restart from four clocks that all read the same wall clock:

- the bench: SIGTERM sent, process gone (pidfd), start of the next process (`Member.start`);
- the member's own marks (`--trace FILE`: the service-shaped Python member and the Java `CoopMember`):
  `sigterm` seen, `loop_end`, `close_returned`; `main` (runtime up), `imports_done` (Python),
  `constructed`, `subscribed`, `first_records` (first non-empty batch handed to the loop);
- the member's rebalance events: the release in close (the pause starts), `closed`, `started`, the
  first `assigned` with partitions (the pause ends);
- the broker's request log (`kafka.request.logger` at DEBUG: every request with its client id and
  its time in the broker; arrival = completion - totalTimeMs): the new process's first FindCoordinator,
  JoinGroup and SyncGroup (classic) or ConsumerGroupHeartbeat (KIP-848), OffsetFetch and Fetch.

Beds: the service-shaped members of bench/service_bounce.py (`svc`), the idle ones of
bench/rolling_bounce.py (`idle`: `kafka-coop consume` and `CoopMember` as the fleet runs them), 10
members at the per-member record rate of their full benchmark (250 records/s service, 20 idle). The
bench also samples the restarted process's CPU from /proc (every family, traced or not) and the CPU
the bed keeps busy: on a shared 2-core machine wall times swing with load, CPU times do not.

Run: `python -m bench --only restart_floor [--param configs=...] [--param restarts=4]`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._restart_floor_jvms import MEMBER_JVMS, check_jvms, closed_port_archive, member_command, train_live
from bench.harness.brokers import BROKER_CONFIG, broker_with_coordinator_debug
from bench.harness.frame import (
    BenchArgs,
    BenchResult,
    Figure,
    Series,
    assignment_interval_ms,
    comma_names,
    main_for,
    new_result,
    proc_cpu_s,
)
from bench.harness.rolling import Scenario, member_specs, wait_settled
from bench.harness.service_members import SERVICE_MEMBER, ServiceMember
from kafka_coop._jvm import CACHE_SUFFIX
from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION

NAME = "restart-floor"
TITLE = "One static member's restart, segment by segment (service-shaped and idle members, Python and Java)"
REQUEST_LOG_PROPERTY = "-Dorg.slf4j.simpleLogger.log.kafka.request.logger=debug"

# name -> (family, shape, protocol); every one static
CONFIGS: dict[str, tuple[str, str, str]] = {
    "svc-py-coop": ("python", "service", "cooperative"),
    "idle-py-coop": ("python", "idle", "cooperative"),
    "svc-py-consumer": ("python", "service", "consumer"),
    "svc-java-coop": ("java", "service", "cooperative"),
    "svc-java-consumer": ("java", "service", "consumer"),
    "idle-java-coop": ("java", "idle", "cooperative"),
}
RATE_PER_MEMBER = {"service": 250.0, "idle": 20.0}  # the full benchmarks' rate / 10 members

DEFAULTS: dict[str, int | float | str] = {
    "members": 10,  # the full benchmarks' beds: what the restarted process shares the CPU with
    "partitions_per_member": 6,
    "restarts": 4,
    "settle_s": 1.5,  # between the gate and the next SIGTERM: the restarted member is fetching again
    "gate_timeout_s": 120.0,
    "configs": ",".join(CONFIGS),
    "request_log": True,
    # the restarted Java member's JVM, restart by restart in turn (names of MEMBER_JVMS; empty: as the fleet
    # runs it): alternating in one bed compares JVMs under the same load
    "jvms": "",
}
QUICK: dict[str, int | float | str] = {"members": 3, "restarts": 2, "configs": "svc-py-coop,svc-java-coop"}

# The segments, in order, each from one mark to the next; a restart's own pause is release -> assigned.
STOP_SEGMENTS = (
    ("sigterm", "loop_end"),  # the loop sees SIGTERM and finishes the record in hand
    ("loop_end", "release"),  # close() up to the revoke that leaves the member owning nothing
    ("release", "close_returned"),  # commit, leave (KIP-848 static: epoch -2), client teardown
    ("close_returned", "exit"),  # interpreter / JVM teardown
)
START_SEGMENTS = (
    ("exit", "exec"),  # the bench starts the next process
    ("exec", "main"),  # interpreter / JVM up, the member's main() entered
    ("main", "constructed"),  # imports (Python), consumer constructed
    ("constructed", "subscribed"),
    ("subscribed", "find_coordinator"),  # first FindCoordinator reaches the broker
    ("find_coordinator", "join"),  # JoinGroup / first ConsumerGroupHeartbeat reaches the broker
    ("join", "assigned"),  # SyncGroup (classic) or the heartbeat's assignment, the assign callback
    ("assigned", "first_records"),  # the first non-empty batch handed to the loop
)


@dataclass
class Restart:
    """Every mark of one restart, wall-clock ms (None: not seen)."""

    marks: dict[str, int | None]

    def segment(self, a: str, b: str) -> int | None:
        x, y = self.marks.get(a), self.marks.get(b)
        return None if x is None or y is None else y - x


# --- the member processes -----------------------------------------------------------------------------
def _traced(base: type, trace: Path) -> Any:
    """A member process class that passes `--trace` to members that take it and times start and stop."""

    class Traced(base):  # type: ignore[misc]
        jvm: str = ""

        def command(self) -> list[str]:
            cmd: list[str] = super().command()
            if self.spec.kind == "java" and self.jvm:
                cmd = member_command(cmd, self.jvm, self.kafka_version, self.spec.group_protocol)
            if self.spec.kind == "java" or str(SERVICE_MEMBER) in cmd:
                cmd += ["--trace", str(trace)]
            return cmd

        def start(self) -> None:
            self.exec_ms = _now_ms()
            super().start()
            if self.proc is not None:
                self.cpu_samples = sample_cpu(self.proc.pid)

        def stop(self, timeout_s: float = 60.0) -> int | None:
            self.sigterm_ms = _now_ms()
            pid = self.proc.pid if self.proc is not None else None
            cpu0 = _children_cpu_ms()
            code: int | None = super().stop(timeout_s)
            self.exit_ms = _now_ms()
            self.process_cpu_ms = round(_children_cpu_ms() - cpu0)
            self.stopped_pid = pid
            return code

    return Traced


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _proc_cpu_ms(pid: int) -> float | None:
    """utime + stime of a live process, ms (/proc/PID/stat); None if it is gone."""
    cpu = proc_cpu_s(pid)
    return None if cpu is None else cpu * 1000.0


def _children_cpu_ms() -> float:
    """CPU of this process's reaped children: its delta across a member's stop is that process's whole
    CPU, teardown included (nothing else is reaped meanwhile)."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (ru.ru_utime + ru.ru_stime) * 1000.0


def sample_cpu(pid: int, every_s: float = 0.01, for_s: float = 15.0) -> list[tuple[int, float]]:
    """(wall ms, CPU ms) of a process every `every_s` from now, in a daemon thread, until it ends or
    `for_s` passed: its CPU up to any mark (the first assignment) on the same clock for every family."""
    import threading

    samples: list[tuple[int, float]] = []

    def loop() -> None:
        end = time.monotonic() + for_s
        while time.monotonic() < end:
            cpu = _proc_cpu_ms(pid)
            if cpu is None:
                return
            samples.append((_now_ms(), cpu))
            time.sleep(every_s)

    threading.Thread(target=loop, name=f"cpu-{pid}", daemon=True).start()
    return samples


def cpu_at(samples: Sequence[tuple[int, float]], ms: int | None) -> int | None:
    """The process's CPU at wall time `ms`: the last sample at or before it."""
    if ms is None:
        return None
    before = [cpu for t, cpu in samples if t <= ms]
    return round(before[-1]) if before else None


def broker_pid(tmp: Path) -> int | None:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                cmd = (entry / "cmdline").read_bytes()
                if b"kafka.Kafka" in cmd and str(tmp).encode() in cmd:
                    return int(entry.name)
    return None


def bed_cpu(pids: Mapping[str, int | None], window_s: float) -> dict[str, float]:
    """Cores each part of the bed keeps busy over `window_s` of steady state (the bench process itself:
    its producer thread and readiness polls)."""
    before = {k: _proc_cpu_ms(p) if p else None for k, p in pids.items()}
    t0, self0 = time.monotonic(), sum(os.times()[:2]) * 1000.0
    time.sleep(window_s)
    wall = (time.monotonic() - t0) * 1000.0
    out = {"bench": round((sum(os.times()[:2]) * 1000.0 - self0) / wall, 3)}
    for k, p in pids.items():
        b, a = before[k], _proc_cpu_ms(p) if p else None
        if b is not None and a is not None:
            out[k] = round((a - b) / wall, 3)
    out["total"] = round(sum(out.values()), 3)
    return out


# --- the clocks -----------------------------------------------------------------------------------------
def read_trace(path: Path) -> list[tuple[str, int, int, int]]:
    """(mark, wall ms, pid, process CPU ms) lines written by the member's `--trace`."""
    out = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) == 4:
                out.append((parts[0], int(parts[1]), int(parts[2]), int(parts[3])))
    return out


_REQ = re.compile(
    r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}) \[[^\]]*\] DEBUG kafka\.request\.logger - "
    r"Completed request:(.*)$"
)


def read_requests(log: Path, clients: set[str]) -> list[tuple[str, str, float]]:
    """(client id, API name, arrival wall ms) for every request of `clients` in the broker's log."""
    import datetime as dt

    out = []
    with log.open(encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            if "kafka.request.logger" not in raw:
                continue
            m = _REQ.match(raw.rstrip("\n"))
            if not m:
                continue
            try:
                body = json.loads(m.group(2))
            except ValueError:
                continue
            header = body.get("requestHeader") or {}
            client = header.get("clientId")
            if client not in clients:
                continue
            done = dt.datetime.fromisoformat(m.group(1)).replace(tzinfo=dt.UTC).timestamp() * 1000.0
            out.append(
                (
                    str(client),
                    str(header.get("requestApiKeyName")),
                    done - float(body.get("totalTimeMs", 0.0)),
                )
            )
    return out


OLD_MARKS = ("sigterm", "consume_returned", "loop_end", "close_returned", "hook_done")
NEW_MARKS = ("main", "imports_done", "constructed", "subscribed", "first_records")


def restart_marks(
    member: Any,
    step: Mapping[str, Any],
    trace: Sequence[tuple[str, int, int, int]],
    requests: Sequence[tuple[str, str, float]],
) -> Restart:
    """The marks of one restart of `member` from the bench's step record, its trace, events and the
    broker's requests."""
    name = member.spec.name
    old_pid, new_pid = step["old_pid"], step["new_pid"]
    marks: dict[str, int | None] = {
        "process_cpu_ms": step["process_cpu_ms"],
        "sigterm": step["sigterm_ms"],
        "exit": step["exit_ms"],
        "exec": step["exec_ms"],
    }
    if step.get("jvm"):
        marks["jvm"] = step["jvm"]
    first: dict[str, int | None] = {}
    for mark, ms, pid, cpu in trace:
        if (pid == old_pid and mark in OLD_MARKS) or (pid == new_pid and mark in NEW_MARKS):
            first.setdefault(mark, ms)
            first.setdefault(f"cpu:{mark}", cpu)
    marks.update(first)
    events = sorted(member.events(), key=lambda e: (int(e["ts_ms"]), int(e.get("seq", 0))))
    before_exit = [e for e in events if step["sigterm_ms"] <= int(e["ts_ms"]) <= step["exit_ms"]]
    release = [e for e in before_exit if e["kind"] in ("revoked", "lost") and not (e.get("owned") or ())]
    marks["release"] = int(release[-1]["ts_ms"]) if release else None
    closed = [e for e in before_exit if e["kind"] == "closed"]
    marks["closed"] = int(closed[-1]["ts_ms"]) if closed else None
    after = [e for e in events if int(e["ts_ms"]) >= step["exec_ms"]]
    started = next((e for e in after if e["kind"] == "started"), None)
    assigned = next((e for e in after if e["kind"] == "assigned" and (e.get("owned") or ())), None)
    marks["started"] = int(started["ts_ms"]) if started else None
    marks["assigned"] = int(assigned["ts_ms"]) if assigned else None
    if marks.get("subscribed") is None:
        marks["subscribed"] = marks["started"]  # the idle Python member: `started` is its subscribe
    if marks.get("close_returned") is None:
        marks["close_returned"] = marks["closed"]
    mine = [(api, ms) for client, api, ms in requests if client == name]
    new = [(api, ms) for api, ms in mine if ms >= step["exec_ms"]]
    old = [(api, ms) for api, ms in mine if step["sigterm_ms"] <= ms <= step["exit_ms"]]

    def first_api(pairs: Sequence[tuple[str, float]], *apis: str) -> int | None:
        return next((round(ms) for api, ms in pairs if api in apis), None)

    marks["find_coordinator"] = first_api(new, "FIND_COORDINATOR")
    marks["join"] = first_api(new, "JOIN_GROUP", "CONSUMER_GROUP_HEARTBEAT")
    marks["sync"] = first_api(new, "SYNC_GROUP")
    marks["offset_fetch"] = first_api(new, "OFFSET_FETCH")
    marks["fetch"] = first_api(new, "FETCH")
    marks["leave"] = next(
        (round(ms) for api, ms in old if api in ("LEAVE_GROUP", "CONSUMER_GROUP_HEARTBEAT")), None
    )
    samples = step.get("cpu_samples") or []
    marks["sampled_cpu:assigned"] = cpu_at(samples, marks["assigned"])
    marks["sampled_cpu:join"] = cpu_at(samples, marks["join"])
    marks["heartbeats_before_assigned"] = (
        sum(1 for api, ms in new if api == "CONSUMER_GROUP_HEARTBEAT" and ms <= (marks["assigned"] or 0))
        if marks["assigned"]
        else None
    )
    return Restart(marks)


# --- the run ----------------------------------------------------------------------------------------------
@contextlib.contextmanager
def broker_with_request_log(tmp: Path, request_log: bool = True) -> Iterator[Any]:
    """The benchmarks' broker, with every request logged (its DEBUG lines cost broker CPU: off to
    measure the bed's own CPU as the full benchmarks run it)."""
    with broker_with_coordinator_debug(tmp, extra=(REQUEST_LOG_PROPERTY,) if request_log else ()) as box:
        yield box


def run_config(
    name: str, bootstrap: str, log: Path, workdir: Path, params: Mapping[str, Any], broker: int | None
) -> dict[str, Any]:
    from kafka_coop.sandbox import MemberProcess
    from kafka_coop.sandbox.testing import MemberProcesses, SteadyProducer

    family, shape, protocol = CONFIGS[name]
    scn = Scenario(f"rf-{name}", family, protocol, True, shape=shape)  # type: ignore[arg-type]
    members = int(params["members"])
    partitions = members * int(params["partitions_per_member"])
    tag = os.urandom(3).hex()
    group = topic = f"rf-{name}-{tag}"
    trace = workdir / f"{name}.trace"
    cls = _traced(ServiceMember if shape == "service" else MemberProcess, trace)
    gate = float(params["gate_timeout_s"])
    jvms = comma_names(str(params["jvms"])) if family == "java" else []
    steps: list[dict[str, Any]] = []
    with MemberProcesses(bootstrap, workdir / name) as processes:
        processes.admin.ensure_topic(topic, partitions)
        producer = SteadyProducer(bootstrap, topic, partitions, rate=RATE_PER_MEMBER[shape] * members).start()
        try:
            specs = member_specs(scn, group, topic, {"process_ms": 2}, members)
            for variant in jvms:  # trained before the bed starts, not inside a timed restart
                if not MEMBER_JVMS[variant].live:
                    closed_port_archive(variant, processes.kafka_version, specs[0].group_protocol)
                    continue
                spec = specs[0].replace(
                    name=f"train-{variant}", group=f"train-{tag}-{variant}", instance_id=None
                )
                trainer = cls(spec, processes.workdir, processes.bootstrap, processes.kafka_version)
                suffix = CACHE_SUFFIX[MEMBER_JVMS[variant].kind]
                train_live(variant, trainer.command(), workdir / f"{name}-{variant}{suffix}")
            for spec in specs:
                m = cls(spec, processes.workdir, processes.bootstrap, processes.kafka_version)
                processes.members[spec.name] = m
                m.start()
            wait_settled(processes, group, partitions, gate)
            time.sleep(float(params["settle_s"]))
            member_pids = [m.proc.pid for m in processes.members.values() if m.proc is not None]
            cpu = bed_cpu({f"m{i}": p for i, p in enumerate(member_pids)} | {"broker": broker}, 5.0)
            bed = {
                "members": round(sum(v for k, v in cpu.items() if k.startswith("m")), 3),
                "broker": cpu.get("broker"),
                "bench": cpu["bench"],
                "total": cpu["total"],
            }
            target: Any = processes.members[specs[0].name]
            for i in range(int(params["restarts"])):
                time.sleep(float(params["settle_s"]))
                target.stop()
                target.jvm = jvms[i % len(jvms)] if jvms else ""
                target.start()
                wait_settled(processes, group, partitions, gate)
                steps.append(
                    {
                        "sigterm_ms": target.sigterm_ms,
                        "exit_ms": target.exit_ms,
                        "exec_ms": target.exec_ms,
                        "old_pid": target.stopped_pid,
                        "new_pid": target.proc.pid,
                        "process_cpu_ms": target.process_cpu_ms,
                        "cpu_samples": target.cpu_samples,
                        "jvm": target.jvm,
                    }
                )
            time.sleep(float(params["settle_s"]))
        finally:
            producer.stop()
        processes.stop_all()
        requests = read_requests(log, {target.spec.name})
        marks = read_trace(trace)
        restarts = [restart_marks(target, st, marks, requests) for st in steps]
    return {
        "config": name,
        "family": family,
        "shape": shape,
        "protocol": protocol,
        "group": group,
        "members": members,
        "partitions": partitions,
        "rate": RATE_PER_MEMBER[shape] * members,
        "bed_cpu_cores": bed,
        "restarts": [r.marks for r in restarts],
        "segments_ms": segment_table(restarts),
    }


def segment_table(restarts: Sequence[Restart]) -> dict[str, list[int | None]]:
    out: dict[str, list[int | None]] = {}
    for a, b in (*STOP_SEGMENTS, *START_SEGMENTS):
        out[f"{a}->{b}"] = [r.segment(a, b) for r in restarts]
    out["own_pause"] = [r.segment("release", "assigned") for r in restarts]
    out["exit->assigned"] = [r.segment("exit", "assigned") for r in restarts]
    out["join->sync"] = [r.segment("join", "sync") for r in restarts]
    out["imports"] = [r.segment("main", "imports_done") for r in restarts]
    # CPU time the process spent (its own clock: what load cannot stretch)
    out["cpu:exec->main"] = [r.marks.get("cpu:main") for r in restarts]
    # sampled from /proc by the bench (10 ms steps; ticks of 10 ms): the same for members without --trace
    out["sampled_cpu:exec->join"] = [r.marks.get("sampled_cpu:join") for r in restarts]
    out["sampled_cpu:exec->assigned"] = [r.marks.get("sampled_cpu:assigned") for r in restarts]
    out["cpu:main->imports_done"] = [r.segment("cpu:main", "cpu:imports_done") for r in restarts]
    out["cpu:main->constructed"] = [r.segment("cpu:main", "cpu:constructed") for r in restarts]
    out["cpu:constructed->subscribed"] = [r.segment("cpu:constructed", "cpu:subscribed") for r in restarts]
    out["cpu:subscribed->first_records"] = [
        r.segment("cpu:subscribed", "cpu:first_records") for r in restarts
    ]
    out["cpu:loop_end->close_returned"] = [r.segment("cpu:loop_end", "cpu:close_returned") for r in restarts]
    out["cpu:close_returned->exit"] = [
        None
        if r.marks.get("cpu:close_returned") is None or r.marks.get("process_cpu_ms") is None
        else int(r.marks["process_cpu_ms"] or 0) - int(r.marks["cpu:close_returned"] or 0)
        for r in restarts
    ]
    return out


def _median(values: Sequence[int | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(statistics.median(known)) if known else None


def run(args: BenchArgs) -> BenchResult:
    params: dict[str, Any] = {**DEFAULTS, **(QUICK if args.quick else {})}
    params = {key: args.param(key, value) for key, value in params.items()}
    names = comma_names(str(params["configs"]))
    check_jvms(comma_names(str(params["jvms"])))
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        raise ValueError(f"unknown config(s) {unknown}; known: {', '.join(CONFIGS)}")
    result = new_result(
        NAME,
        TITLE,
        {**params, "broker_config": dict(BROKER_CONFIG), "load_avg_1m_start": round(os.getloadavg()[0], 2)},
        kafka_version=DEFAULT_KAFKA_VERSION,
    )
    runs = []
    with (
        tempfile.TemporaryDirectory(prefix="kafka-coop-rf-") as tmp,
        broker_with_request_log(Path(tmp), bool(params["request_log"])) as box,
    ):
        broker = broker_pid(Path(tmp))
        # KIP-1263 (Kafka 4.3): a floor under every consumer-protocol assignment, recorded with the run
        result.parameters["assignment_interval_ms"] = assignment_interval_ms(box.bootstrap)
        for name in names:
            load = round(os.getloadavg()[0], 2)
            run_ = run_config(name, box.bootstrap, box.log_path, Path(tmp), params, broker)
            run_["load_avg_1m"] = [load, round(os.getloadavg()[0], 2)]
            runs.append(run_)
            print(f"  {name} (load {load}), bed CPU cores {run_['bed_cpu_cores']}:", flush=True)
            for key, values in run_["segments_ms"].items():
                print(f"    {key:32s} median {_median(values)}  {values}", flush=True)
    result.parameters["load_avg_1m_end"] = round(os.getloadavg()[0], 2)
    result.runs = runs
    result.samples = {
        f"{r['config']}.own_pause": Series(
            unit="ms", values=[float(v) for v in r["segments_ms"]["own_pause"] if v is not None]
        )
        for r in runs
    }
    figs = {}
    for r in runs:
        for key, values in r["segments_ms"].items():
            med = _median(values)
            if med is not None:
                figs[f"{r['config']}.{key}"] = Figure(
                    value=med, unit="ms", description=f"{r['config']}: {key}, median", show=False
                )
    result.figures = figs
    return result.finish()


def plot(result: BenchResult, fig: Any) -> None:
    import numpy as np

    ax = fig.subplots(1, 1)
    runs: list[Any] = list(result.runs)
    keys = [f"{a}->{b}" for a, b in (*STOP_SEGMENTS[1:], *START_SEGMENTS[:-1])]
    x = np.arange(len(runs))
    bottom = np.zeros(len(runs))
    for key in keys:
        vals = np.array([max(_median(r["segments_ms"].get(key, [])) or 0.0, 0.0) for r in runs])
        ax.bar(x, vals, 0.6, bottom=bottom, label=key)
        bottom += vals
    ax.set_xticks(x, [str(r["config"]) for r in runs], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("ms (median per segment)")
    ax.legend(fontsize=6, ncol=2)
    ax.grid(axis="y", alpha=0.3)


if __name__ == "__main__":
    main_for(run, plot)

"""The chaos run: sequenced records, 10 kafka-coop members, faults while they consume, every record
accounted for (Jepsen-style).

For each mode (cooperative static, eager dynamic, KIP-848 static) on a 3-node sandbox (RF 3,
min.insync.replicas 2): an idempotent acks=all producer writes `records` sequenced records at `rate`/s;
10 members (testbed/chaos_member.py; each logs every processed (partition, offset) and every commit)
consume them: seven `commit` members (explicit marks, a synchronous commit after each batch), two
`default` members (m6, m7: librdkafka's defaults, a loop that neither marks nor commits: kafka-coop's
interval, revoke and close commits) and one `pipelined` member (m8: CoopAIOConsumer, a task per record
marking it done out of order), while the schedule injects faults: a rolling bounce, SIGKILLs, a member
stalled past max.poll.interval.ms, a member frozen (SIGSTOP) past its session timeout, the group
coordinator's broker killed and restarted, a broker frozen, and one member cut from the network (and
slowed) through toxiproxy. A killed, stalled or fenced member is restarted the way an orchestrator would.

Then the accounting (bench/_chaos_accounting.py): lost (must be 0), duplicates and what explains each,
duplicates_unexplained, the largest uncommitted window; the event stream against the truth (no
partition owned twice at once except where a fault or `lost` allows it; each member's final `owned` is
the broker's assignment). `--quick` / `records=` make a reduced run; the CI test runs one.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._chaos_accounting import (
    Incarnation,
    account,
    check_ownership,
    final_owned_mismatches,
    ownership_intervals,
    parse_rec,
    per_second,
)
from bench.harness.frame import (
    BenchArgs,
    BenchResult,
    Figure,
    Series,
    assignment_interval_ms,
    main_for,
    new_result,
    versions,
)

MODES = ("cooperative-static", "eager-dynamic", "consumer-static")
MEMBERS = 10
PARTITIONS = 30
SESSION_MS = 10_000
MAX_POLL_MS = 10_000
STALL_S = 15.0  # > MAX_POLL_MS: the stalled member overruns its poll limit
FREEZE_S = 16.0  # > SESSION_MS: the frozen member is evicted (classic) / fenced by the broker's session
NET_CUT_S = 10.0
RESTART_AFTER_S = 3.0
COORDINATOR_DOWN_S = 15.0
BROKER_FREEZE_S = 10.0
DRAIN_TIMEOUT_S = 600.0
# The kind of service each member runs (testbed/chaos_member.py); the others are "commit".
KIND_OF = {"m6": "default", "m7": "default", "m8": "pipelined"}
# KIP-848 sessions are the broker's (45 s by default, also the minimum): the same 10 s as the classic
# members get, so a frozen KIP-848 member is fenced within the run as a classic one is evicted.
KIP848_SESSION = {
    "group.consumer.min.session.timeout.ms": "6000",
    "group.consumer.session.timeout.ms": str(SESSION_MS),
}


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class FaultRecord:
    kind: str
    target: str
    start_ms: int
    end_ms: int | None = None


@dataclass
class Fault:
    at_s: float
    kind: str  # bounce | kill | stall | freeze | coordinator_kill | broker_freeze | net_cut
    target: str = ""


def full_schedule() -> list[Fault]:
    return [
        Fault(8, "bounce"),
        Fault(40, "kill", "m1"),
        Fault(50, "stall", "m4"),
        Fault(62, "coordinator_kill"),
        Fault(90, "kill", "m7"),  # a default-config member: its interval commit's window is redelivered
        Fault(100, "net_cut", "m0"),
        Fault(118, "freeze", "m5"),
        Fault(140, "broker_freeze"),
        Fault(160, "kill", "m8"),  # the pipelined member: its unfinished tasks' records are redelivered
    ]


def ci_schedule() -> list[Fault]:
    """The reduced run in `make test`: one coordinator kill, one SIGKILL, one freeze."""
    return [
        Fault(6, "kill", "m1"),
        Fault(14, "coordinator_kill"),
        Fault(36, "freeze", "m2"),
    ]


class Producer:
    """Idempotent, acks=all, round-robin over partitions; counts acknowledged offsets per partition."""

    def __init__(self, bootstrap: str, conf: dict[str, str], topic: str, records: int, rate: float) -> None:
        from confluent_kafka import Producer as KafkaProducer

        self.topic, self.records, self.rate = topic, records, rate
        self._producer: Any = KafkaProducer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 20,
                "message.timeout.ms": 600_000,
                **conf,
            }
        )
        self.acked: Counter[int] = Counter()
        self.max_offset: dict[int, int] = {}
        self.failed = 0
        self.sent = 0
        self._thread = threading.Thread(target=self._run, name="chaos-producer", daemon=True)

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked[msg.partition()] += 1
            self.max_offset[msg.partition()] = max(self.max_offset.get(msg.partition(), -1), msg.offset())
        else:
            self.failed += 1

    def _run(self) -> None:
        began = time.monotonic()
        for seq in range(self.records):
            while True:
                try:
                    self._producer.produce(
                        self.topic,
                        str(seq).encode(),
                        partition=seq % PARTITIONS,
                        on_delivery=self._on_delivery,
                    )
                    break
                except BufferError:
                    self._producer.poll(0.1)
            self.sent += 1
            self._producer.poll(0)
            ahead = (seq + 1) / self.rate - (time.monotonic() - began)
            if ahead > 0.005:
                time.sleep(ahead)
        self._producer.flush(600)

    def start(self) -> None:
        self._thread.start()

    def join(self) -> None:
        self._thread.join()


class Members:
    """The member processes; every start is a new incarnation with its own files."""

    def __init__(
        self,
        mode: str,
        bootstrap: str,
        proxied: str | None,
        group: str,
        topic: str,
        out: Path,
        command_config: str | None,
    ) -> None:
        self.mode, self.bootstrap, self.proxied, self.group, self.topic = (
            mode,
            bootstrap,
            proxied,
            group,
            topic,
        )
        self.out = out
        self.command_config = command_config
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.incarnation: Counter[str] = Counter()
        self.faults: dict[str, tuple[str, int]] = {}  # incarnation key -> (fault, ms)
        self.ended_ms: dict[str, int] = {}
        self.restart_at: dict[str, float] = {}

    def key(self, name: str) -> str:
        return f"{name}.{self.incarnation[name]}"

    def start(self, name: str) -> None:
        self.incarnation[name] += 1
        bootstrap = self.proxied if (name == "m0" and self.proxied) else self.bootstrap
        cmd = [
            sys.executable, "-m", "testbed.chaos_member", "--bootstrap", bootstrap, "--group", self.group,
            "--topic", self.topic, "--name", name, "--incarnation", str(self.incarnation[name]),
            "--mode", self.mode, "--out", str(self.out), "--session-ms", str(SESSION_MS),
            "--max-poll-ms", str(MAX_POLL_MS), "--stall-s", str(STALL_S),
            "--kind", KIND_OF.get(name, "commit"),
        ]  # fmt: skip
        if self.command_config:
            cmd += ["--command-config", self.command_config]
        log = (self.out / f"{self.key(name)}.log").open("ab")
        self.procs[name] = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()

    def mark(self, name: str, fault: str) -> None:
        self.faults.setdefault(self.key(name), (fault, _now_ms()))

    def kill(self, name: str) -> None:
        self.mark(name, "kill")
        proc = self.procs[name]
        proc.kill()
        proc.wait()
        self.ended_ms[self.key(name)] = _now_ms()

    def stop(self, name: str, timeout_s: float = 60) -> None:
        proc = self.procs[name]
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.terminate()
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.mark(name, "kill")
                proc.kill()
                proc.wait()
        self.ended_ms.setdefault(self.key(name), _now_ms())

    def supervise(self) -> None:
        """Restart a member that exited by itself (a fatal error: fenced, e.g. a KIP-848 static member
        restarted while its old incarnation's session is still open) after a back-off, as an
        orchestrator would."""
        now = time.monotonic()
        for name, proc in list(self.procs.items()):
            code = proc.poll()
            if code is not None and self.key(name) not in self.ended_ms:
                self.ended_ms[self.key(name)] = _now_ms()
                self.mark(name, "fatal")
                self.restart_at[name] = now + RESTART_AFTER_S
            elif code is not None and name in self.restart_at and self.restart_at[name] <= now:
                del self.restart_at[name]
                self.start(name)


def _last_owned(out: Path, members: Members) -> dict[str, list[tuple[str, int]]]:
    """What each member's last assigned / revoked / lost event says it owns."""
    last: dict[str, list[tuple[str, int]]] = {}
    for name in sorted(members.procs):
        events = _read_events(out / f"{members.key(name)}.events.jsonl")
        owned = [e for e in events if e.get("kind") in ("assigned", "revoked", "lost")]
        last[name] = sorted((t, p) for t, p in owned[-1]["owned"]) if owned else []
    return last


def _run_steps(
    steps: list[Fault], began: float, members: Members, box: Any, net: Any, faults: list[FaultRecord],
    group: str, log: Callable[[str], None],
) -> None:  # fmt: skip
    timers: list[tuple[float, Callable[[], None]]] = []

    def later(delay_s: float, fn: Callable[[], None]) -> None:
        timers.append((time.monotonic() + delay_s, fn))

    def fire_due() -> None:
        for item in sorted(timers, key=lambda t: t[0]):
            if item[0] <= time.monotonic():
                timers.remove(item)
                item[1]()

    def wait_until(t: float) -> None:
        while True:
            fire_due()
            members.supervise()
            if time.monotonic() >= t:
                return
            time.sleep(0.1)

    for step in steps:
        wait_until(began + step.at_s)
        record = FaultRecord(step.kind, step.target, _now_ms())
        faults.append(record)
        log(f"fault {step.kind} {step.target}".rstrip())
        if step.kind == "bounce":
            for name in sorted(members.procs):
                members.stop(name)
                members.start(name)
                wait_until(time.monotonic() + 2.0)
            record.end_ms = _now_ms()
        elif step.kind == "kill":
            members.kill(step.target)
            record.end_ms = _now_ms()

            def restart(n: str = step.target) -> None:
                members.start(n)

            later(RESTART_AFTER_S, restart)
        elif step.kind == "stall":
            members.mark(step.target, "stall")
            members.procs[step.target].send_signal(signal.SIGUSR1)
            record.end_ms = record.start_ms + int(STALL_S * 1000)
        elif step.kind == "freeze":
            members.mark(step.target, "freeze")
            members.procs[step.target].send_signal(signal.SIGSTOP)

            def thaw(n: str = step.target, r: FaultRecord = record) -> None:
                members.procs[n].send_signal(signal.SIGCONT)
                r.end_ms = _now_ms()

            later(FREEZE_S, thaw)
        elif step.kind == "coordinator_kill":
            node = box.coordinator_of(group)
            record.target = f"node {node}"
            box.kill(node)

            def revive(n: int = node, r: FaultRecord = record) -> None:
                box.restart(n)
                r.end_ms = _now_ms()

            later(COORDINATOR_DOWN_S, revive)
        elif step.kind == "broker_freeze":
            node = (box.coordinator_of(group) % 3) + 1  # not the coordinator: a partition leader
            record.target = f"node {node}"
            box.freeze(node)

            def unfreeze(n: int = node, r: FaultRecord = record) -> None:
                box.thaw(n)
                r.end_ms = _now_ms()

            later(BROKER_FREEZE_S, unfreeze)
        elif step.kind == "net_cut":
            members.mark(step.target, "net_cut")
            net.latency(300, 100)
            wait_until(time.monotonic() + 3)
            net.heal()
            net.cut()

            def heal(r: FaultRecord = record) -> None:
                net.heal()
                r.end_ms = _now_ms()

            later(NET_CUT_S, heal)
    while timers:
        wait_until(min(t for t, _ in timers))


def _uncommitted(
    admin: Any, group: str, acked: Counter[int], log: Callable[[str], None]
) -> dict[int, list[int]] | None:
    """The partitions the group has not committed to their end: {partition: [committed, acked]}
    (None: the committed offsets could not be read)."""
    try:
        offsets = {p.partition: p.committed for p in admin.offsets(group, timeout_s=10)}
    except Exception as exc:
        log(f"reading committed offsets failed: {exc}")
        return None
    return {p: [offsets.get(p) or 0, n] for p, n in sorted(acked.items()) if (offsets.get(p) or 0) < n}


def run_mode(
    mode: str,
    box: Any,
    workdir: Path,
    *,
    records: int,
    rate: float,
    steps: list[Fault],
    net: Any = None,
    log: Callable[[str], None] = print,
    drain_timeout_s: float = DRAIN_TIMEOUT_S,
) -> dict[str, Any]:
    """One chaos run of one mode on a running 3-node sandbox; returns its accounting as a dict (its
    `uncommitted`: what the group had not committed when the drain ended, empty when it drained)."""
    out = workdir / mode
    out.mkdir(parents=True, exist_ok=True)
    topic, group = f"chaos-{mode}-{os.getpid()}", f"chaos-{mode}-{os.getpid()}"
    admin = box.admin()
    admin.ensure_topic(topic, PARTITIONS)
    conf = box.client_conf()
    props = box.properties_path()
    members = Members(mode, box.bootstrap, net.bootstrap if net else None, group, topic, out,
                      str(props) if props else None)  # fmt: skip
    began_ms = _now_ms()
    try:
        return _run_members(
            members,
            box,
            admin,
            out,
            topic,
            group,
            conf,
            began_ms,
            records,
            rate,
            steps,
            net,
            log,
            drain_timeout_s,
        )
    finally:
        for name, proc in members.procs.items():  # a failed run leaves no member behind
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait()
                members.ended_ms.setdefault(members.key(name), _now_ms())


def _run_members(
    members: Members, box: Any, admin: Any, out: Path, topic: str, group: str, conf: dict[str, str],
    began_ms: int, records: int, rate: float, steps: list[Fault], net: Any, log: Callable[[str], None],
    drain_timeout_s: float,
) -> dict[str, Any]:  # fmt: skip
    mode = members.mode
    for i in range(MEMBERS):
        members.start(f"m{i}")
    producer = Producer(box.bootstrap, conf, topic, records, rate)
    producer.start()
    began = time.monotonic()
    faults: list[FaultRecord] = []
    _run_steps(steps, began, members, box, net, faults, group, log)
    producer.join()
    log(f"produced {sum(producer.acked.values())} acked, {producer.failed} failed; draining")
    deadline = time.monotonic() + drain_timeout_s
    uncommitted = _uncommitted(admin, group, producer.acked, log)
    while time.monotonic() < deadline and uncommitted != {}:
        members.supervise()
        time.sleep(1)
        uncommitted = _uncommitted(admin, group, producer.acked, log)
    drained_s = time.monotonic() - began
    # settled: the broker's assignment of all members, and each member's last event saying the same.
    # Asked again until they agree (or 120 s): a cooperative rebalance passes through "stable" between
    # its two rounds, and a loaded member writes its event a moment after the broker answers.
    broker: dict[str, list[tuple[str, int]]] = {}
    last_owned: dict[str, list[tuple[str, int]]] = {}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        members.supervise()
        live = admin.describe_group(group, timeout_s=10)
        if live.state == "stable" and len(live.members) == MEMBERS:
            broker = {m.client_id: sorted(m.assignment) for m in live.members}
            last_owned = _last_owned(out, members)
            if not final_owned_mismatches(last_owned, broker):
                break
        time.sleep(1)
    for name in sorted(members.procs):
        members.stop(name)
    incarnations = _incarnations(out, members)
    accounting = account(dict(producer.acked), incarnations)
    ownership = check_ownership(incarnations, members.ended_ms)
    mismatched = final_owned_mismatches(last_owned, broker)
    contiguous = all(producer.max_offset.get(p, -1) + 1 == n for p, n in producer.acked.items())
    return {
        "mode": mode,
        "records": records,
        "rate": rate,
        "produced_acked": accounting.produced,
        "produce_failed": producer.failed,
        "acked_offsets_contiguous": contiguous,
        "processed_distinct": accounting.processed_distinct,
        "lost": accounting.lost,
        "lost_examples": [list(x) for x in accounting.lost_examples],
        "duplicates": accounting.duplicates,
        "duplicates_by_cause": accounting.duplicates_by_cause,
        "duplicates_unexplained": accounting.duplicates_unexplained,
        "unexplained_examples": accounting.unexplained_examples,
        "largest_uncommitted_window": accounting.largest_uncommitted_window,
        "largest_window_member": accounting.largest_window_member,
        "ownership_intervals": ownership.intervals,
        "ownership_overlaps": ownership.overlaps,
        "ownership_overlaps_excused": ownership.overlaps_excused,
        "overlap_examples": ownership.overlap_examples,
        "final_owned_mismatches": mismatched,
        "broker_assignment_seen": bool(broker),
        "incarnations": len(incarnations),
        "member_faults": {k: v[0] for k, v in members.faults.items()},
        "faults": [vars(f) for f in faults],
        "began_ms": began_ms,
        "drained_s": round(drained_s, 1),
        "uncommitted": uncommitted,
        "processed_per_s": per_second((ms for inc in incarnations for _, _, ms in inc.records), began_ms),
        "owners": _owners_over_time(incarnations, members.ended_ms, began_ms),
    }


def _read_events(path: Path) -> list[dict[str, Any]]:
    events = []
    if path.exists():
        for line in path.read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                events.append(json.loads(line))
    return events


def _incarnations(out: Path, members: Members) -> list[Incarnation]:
    result = []
    for name, count in sorted(members.incarnation.items()):
        for n in range(1, count + 1):
            rec = out / f"{name}.{n}.rec"
            inc = parse_rec(name, n, rec.read_text() if rec.exists() else "")
            inc.events = _read_events(out / f"{name}.{n}.events.jsonl")
            fault = members.faults.get(inc.key)
            if fault is not None:
                inc.fault, inc.fault_ms = fault
            result.append(inc)
    return result


def _owners_over_time(incs: list[Incarnation], ends: dict[str, int], origin_ms: int) -> dict[str, list[int]]:
    """Per second: partitions with no owner and with more than one owner, by the events."""
    by_tp: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for inc in incs:
        for tp, start, stop, _ in ownership_intervals(inc, ends.get(inc.key, 0)):
            by_tp.setdefault(tp, []).append((start, stop))
    if not by_tp:
        return {"unowned": [], "multi_owned": []}
    last = max(stop for spans in by_tp.values() for _, stop in spans)
    unowned, multi = [], []
    for sec in range(max(1, (last - origin_ms) // 1000 + 1)):
        t = origin_ms + sec * 1000 + 500
        counts = [sum(1 for start, stop in spans if start <= t < stop) for spans in by_tp.values()]
        unowned.append(PARTITIONS - sum(1 for c in counts if c > 0))
        multi.append(sum(1 for c in counts if c > 1))
    return {"unowned": unowned, "multi_owned": multi}


@contextlib.contextmanager
def cluster(workdir: Path, security: str = "plaintext") -> Iterator[tuple[Any, Any]]:
    """A 3-node sandbox with a PROXIED listener and toxiproxy in front of it: (sandbox, network faults)."""
    from kafka_coop.sandbox import Sandbox
    from kafka_coop.sandbox.testing import free_ports
    from testbed.faults import NetworkFaults, Toxiproxy

    box = Sandbox(
        dir=workdir / "kafka",
        port=free_ports(3),
        brokers=3,
        security=security,  # type: ignore[arg-type]
        proxied=True,
        config=KIP848_SESSION,
    )
    box.start()
    try:
        with Toxiproxy(workdir / "toxiproxy") as proxy:
            yield box, NetworkFaults(box, proxy)
    finally:
        box.stop()


def record_broker(result: BenchResult, box: Any) -> None:
    """The broker the run used: its Kafka version and KIP-1263 assignment interval, read with the bed's
    own client settings (a sasl_ssl bed refuses a plaintext admin)."""
    result.versions = versions(kafka=box.kafka_version)
    result.parameters["assignment_interval_ms"] = assignment_interval_ms(box.bootstrap, box.client_conf())


def run(args: BenchArgs) -> BenchResult:
    records = args.param("records", 60_000 if args.quick else 1_000_000)
    rate = args.param("rate", 2_000.0 if args.quick else 5_000.0)
    modes = [m for m in args.param("modes", ",".join(MODES)).split(",") if m]
    security = args.param("security", "plaintext")
    schedule = ci_schedule() if args.quick or args.param("schedule", "full") == "ci" else full_schedule()
    parameters: dict[str, Any] = {
        "records": records,
        "rate": rate,
        "modes": ",".join(modes),
        "members": MEMBERS,
        "partitions": PARTITIONS,
        "security": security,
        "schedule": [vars(s) for s in schedule],
        "session_ms": SESSION_MS,
        "max_poll_ms": MAX_POLL_MS,
        "member_kinds": {f"m{i}": KIND_OF.get(f"m{i}", "commit") for i in range(MEMBERS)},
    }
    result = new_result(
        "chaos", "Chaos run: every record accounted for under faults (3 brokers, 10 members)", parameters
    )
    signal.signal(signal.SIGTERM, _exit_on_term)  # so the sandbox, toxiproxy and members are stopped
    with (
        tempfile.TemporaryDirectory(prefix="kafka-coop-chaos-") as tmp,
        cluster(Path(tmp), security) as (box, net),
    ):
        record_broker(result, box)
        for mode in modes:
            try:
                run_result = run_mode(
                    mode, box, Path(tmp), records=records, rate=rate, steps=schedule, net=net
                )
            except Exception as exc:  # one mode failing still leaves the others' results
                result.runs.append({"mode": mode, "error": f"{type(exc).__name__}: {exc}"})
                result.notes.append(f"{mode} did not finish: {type(exc).__name__}: {exc}")
                continue
            result.runs.append(run_result)
            short = mode.replace("-", "_")
            result.samples[f"{short}_records_per_s"] = Series(
                unit="records/s", values=[float(v) for v in run_result["processed_per_s"]]
            )
            for key, better, target in (
                ("lost", "lower", 0.0),
                ("duplicates_unexplained", "lower", 0.0),
                ("ownership_overlaps", "lower", 0.0),
            ):
                result.figures[f"{short}_{key}"] = Figure(
                    value=float(run_result[key]),
                    unit="overlaps" if key == "ownership_overlaps" else "records",
                    target=target,
                    better=better,
                    description=f"{mode}: {key.replace('_', ' ')}",
                )
            result.figures[f"{short}_duplicates"] = Figure(
                value=float(run_result["duplicates"]), unit="records", description=f"{mode}: duplicates"
            )
            result.figures[f"{short}_largest_uncommitted_window"] = Figure(
                value=float(run_result["largest_uncommitted_window"]), unit="records",
                description=f"{mode}: largest uncommitted window (records of one partition)",
            )  # fmt: skip
            result.figures[f"{short}_final_owned_mismatches"] = Figure(
                value=float(len(run_result["final_owned_mismatches"])), unit="members", target=0.0,
                better="lower", description=f"{mode}: members whose final owned differs from the broker",
            )  # fmt: skip
    result.notes.append(
        f"{records:,} records per mode at {rate:,.0f}/s; member faults restart the member after "
        f"{RESTART_AFTER_S:.0f}s; see runs[].faults for what was injected when."
    )
    return result.finish()


def _exit_on_term(_signum: int, _frame: Any) -> None:
    raise SystemExit(143)


def plot(result: BenchResult, fig: Any) -> None:
    runs: list[Any] = list(result.runs)
    axes = fig.subplots(2, max(1, len(runs)), squeeze=False, sharex="col")
    for col, run_result in enumerate(runs):
        top, bottom = axes[0][col], axes[1][col]
        rate = run_result.get("processed_per_s") or []
        top.plot(range(len(rate)), rate, lw=0.8)
        top.set_title(str(run_result.get("mode")), fontsize=9)
        top.set_ylabel("processed records/s")
        owners = run_result.get("owners") or {}
        bottom.plot(owners.get("unowned", []), lw=0.8, label="partitions with no owner")
        bottom.plot(owners.get("multi_owned", []), lw=0.8, label="partitions with >1 owner")
        bottom.set_xlabel("s since start")
        began = int(run_result.get("began_ms") or 0)
        for fault in run_result.get("faults") or []:
            start = (int(fault["start_ms"]) - began) / 1000
            end = (int(fault.get("end_ms") or fault["start_ms"]) - began) / 1000
            for ax in (top, bottom):
                ax.axvspan(start, max(end, start + 0.5), color="red", alpha=0.15)
            top.annotate(str(fault["kind"]), (start, 0), fontsize=6, rotation=90, va="bottom")
        if col == 0:
            bottom.legend(fontsize=7)


if __name__ == "__main__":
    main_for(run, plot)

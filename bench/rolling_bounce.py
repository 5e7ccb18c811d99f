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
import math
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from bench._common import RESULTS_DIR, BenchArgs, BenchResult, Figure, Series, main_for, new_result
from kafka_coop._vocab import RebalanceProtocol
from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION

NAME = "rolling-bounce"
TITLE = "Rolling bounce: pause and unavailability by rebalance protocol and membership"
EVENTS_ARCHIVE = f"{NAME}.events.jsonl.gz"

Family = Literal["python", "java"]
Case = Literal["bounce", "scale_out", "slow_restart"]
PartitionKey = tuple[str, int]

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


@dataclass(frozen=True)
class Scenario:
    name: str
    family: Family
    protocol: RebalanceProtocol
    static: bool
    case: Case = "bounce"
    heartbeat_ms: int | None = None  # the client's heartbeat.interval.ms when not its default (3000)

    @property
    def baseline(self) -> str:
        """The scenario this one's ratios are taken against."""
        if self.case == "bounce":
            return f"{'py' if self.family == 'python' else 'java'}-eager-dynamic"
        return f"{'scaleout' if self.case == 'scale_out' else 'slow'}-eager"

    @property
    def label(self) -> str:
        membership = "static" if self.static else "dynamic"
        proto = {"eager": "eager", "cooperative": "coop", "consumer": "KIP-848"}[self.protocol]
        if self.case == "bounce":
            beat = f" hb {self.heartbeat_ms / 1000:g} s" if self.heartbeat_ms else ""
            return f"{self.family} {proto} {membership}{beat}"
        return f"{'scale-out' if self.case == 'scale_out' else 'slow restart'} {proto}"


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

# Broker settings beyond the sandbox's: only the floor of the KIP-848 session timeout is lowered, so the
# slow-restart case can give its group a 6 s session like the classic members get; the default (45 s)
# and everything else stay as shipped.
BROKER_CONFIG = {
    "group.consumer.min.session.timeout.ms": "6000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
}
BROKER_START_TIMEOUT_S = 300.0


# --- pure helpers (unit-tested) -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ProcessedRecord:
    """One line of a member's record log: `client topic partition offset produced_ms processed_ms`."""

    client: str
    topic: str
    partition: int
    offset: int
    produced_ms: int
    processed_ms: int


def parse_record_line(line: str) -> ProcessedRecord | None:
    """A record-log line, or None for a torn or malformed one (a killed member's last line)."""
    parts = line.split()
    if len(parts) != 6:
        return None
    try:
        return ProcessedRecord(parts[0], parts[1], int(parts[2]), int(parts[3]), int(parts[4]), int(parts[5]))
    except ValueError:
        return None


def read_record_logs(paths: Iterable[Path]) -> list[ProcessedRecord]:
    out: list[ProcessedRecord] = []
    for path in paths:
        if not path.exists():
            continue
        text = path.read_text(errors="replace")
        lines = text.split("\n")
        lines.pop()  # after the last newline: empty, or a line torn by a kill (it may parse, wrongly)
        for line in lines:
            record = parse_record_line(line)
            if record is not None:
                out.append(record)
    return out


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of `values`; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return float(ordered[rank - 1])


class RecordStats(BaseModel):
    produced: int  # acknowledged by the broker
    processed: int  # distinct records processed at least once
    deliveries: int  # record-log lines for the topic
    duplicates: int  # extra deliveries (deliveries of an already processed record)
    duplicated_records: int  # records processed more than once
    lost: int  # acknowledged, processed by nobody
    lost_examples: list[tuple[int, int]] = []  # (partition, offset)
    window_records: int  # processed records produced inside the window
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    latency_max_ms: float | None = None


def record_stats(
    records: Iterable[ProcessedRecord], *, topic: str, acked: Mapping[int, int], window: tuple[int, int]
) -> RecordStats:
    """Duplicates, losses and end-to-end latency for a fresh topic (offsets 0..n-1 per partition).

    A record's latency is from its produce timestamp to the FIRST time any member processed it (what a
    downstream system saw); latency percentiles cover the records produced inside `window` (ms, inclusive).
    """
    first_seen: dict[tuple[int, int], int] = {}
    produced_at: dict[tuple[int, int], int] = {}
    times: dict[tuple[int, int], int] = {}
    deliveries = 0
    for rec in records:
        if rec.topic != topic:
            continue
        deliveries += 1
        key = (rec.partition, rec.offset)
        times[key] = times.get(key, 0) + 1
        if key not in first_seen or rec.processed_ms < first_seen[key]:
            first_seen[key] = rec.processed_ms
        produced_at[key] = rec.produced_ms
    lost = [(p, o) for p, n in sorted(acked.items()) for o in range(n) if (p, o) not in times]
    start, end = window
    latencies = [
        float(first_seen[key] - produced_at[key]) for key in first_seen if start <= produced_at[key] <= end
    ]
    return RecordStats(
        produced=sum(acked.values()),
        processed=len(times),
        deliveries=deliveries,
        duplicates=sum(n - 1 for n in times.values()),
        duplicated_records=sum(1 for n in times.values() if n > 1),
        lost=len(lost),
        lost_examples=lost[:10],
        window_records=len(latencies),
        latency_p50_ms=percentile(latencies, 50),
        latency_p99_ms=percentile(latencies, 99),
        latency_max_ms=max(latencies) if latencies else None,
    )


def ratio(value: float, baseline: float) -> float | None:
    """value / baseline; None when the baseline is 0 (no meaningful ratio)."""
    if baseline == 0:
        return None
    return value / baseline


def reduction(baseline: float, value: float) -> float | None:
    """How many times lower `value` is than `baseline` (baseline / value); None when value is 0."""
    if value == 0:
        return None
    return baseline / value


def latest_owned(events: Sequence[Mapping[str, Any]]) -> frozenset[PartitionKey] | None:
    """What one consumer owns after its last assigned/revoked/lost event; None before its first."""
    for event in reversed(events):
        if event.get("kind") in ("assigned", "revoked", "lost"):
            return frozenset((str(t), int(p)) for t, p in event.get("owned") or ())
    return None


def ownership_settled(owned: Mapping[str, frozenset[PartitionKey] | None], partitions: int) -> bool:
    """Every member owns something, no partition is owned twice, and all `partitions` are owned."""
    seen: set[PartitionKey] = set()
    for parts in owned.values():
        if not parts or seen & parts:
            return False
        seen |= parts
    return len(seen) == partitions


def unowned_steps(intervals: Iterable[tuple[int, int]], origin_ms: int) -> list[tuple[int, int]]:
    """(ms since origin, unowned partition count) at every change, from (start, end) intervals."""
    deltas: dict[int, int] = {}
    for start, end in intervals:
        if end <= start:
            continue
        deltas[start] = deltas.get(start, 0) + 1
        deltas[end] = deltas.get(end, 0) - 1
    steps: list[tuple[int, int]] = []
    level = 0
    for ts in sorted(deltas):
        if deltas[ts] == 0:
            continue
        level += deltas[ts]
        steps.append((ts - origin_ms, level))
    return steps


def split_pause(
    pauses: Iterable[tuple[str, int, int]], steps: Iterable[tuple[Sequence[str], int, int]]
) -> tuple[int, int]:
    """(own, collateral) pause ms. A step is (members it restarts or adds, start ms, end ms); a pause
    of one of those members inside its own step is `own` (its process was down or starting: the
    floor every protocol pays), every other pause inside any step is `collateral` (members that were
    not touched but stopped processing: what the rebalance protocol costs)."""
    own = collateral = 0
    for member, p_start, p_end in pauses:
        for who, s_start, s_end in steps:
            overlap = min(p_end, s_end) - max(p_start, s_start)
            if overlap <= 0:
                continue
            if member in who:
                own += overlap
            else:
                collateral += overlap
    return own, collateral


# --- pause and unavailability: what `kafka-coop report` computes ---------------------------------------
@dataclass
class PauseFigures:
    unavailable_ms: int
    pause_ms: int
    pause_ms_by_member: dict[str, int] = field(default_factory=dict)
    rebalances: int = 0  # assigned callbacks inside the window, all members
    revoked_partitions: int = 0
    intervals: list[tuple[int, int]] = field(default_factory=list)  # unavailability (start, end) ms
    own_pause_ms: int = 0  # restarted/added members, inside their own step
    collateral_pause_ms: int = 0  # everyone else


def pause_figures(
    events: Sequence[Mapping[str, Any]],
    window: tuple[int, int],
    steps: Sequence[tuple[Sequence[str], int, int]] = (),
) -> PauseFigures:
    """Figures over `window` from `kafka_coop.analytics.summarize` with the bounce as its one phase
    (what `kafka-coop report --phases` gives): intervals and pauses clipped to the window."""
    from kafka_coop.analytics import PhaseWindow, pauses, summarize, unavailability

    start, end = window
    phase_window = PhaseWindow(name="bounce", start_ms=start, end_ms=end)
    phase = summarize(events, phases=[phase_window]).phases[0]
    by_member: dict[str, int] = {}
    pause_list = pauses(events)
    own, collateral = split_pause(((p.member, p.start_ms, p.end_ms) for p in pause_list), steps)
    for pause in pause_list:
        clipped = min(pause.end_ms, end) - max(pause.start_ms, start)
        if clipped > 0:
            by_member[pause.member] = by_member.get(pause.member, 0) + clipped
    intervals = [
        (max(i.start_ms, start), min(i.end_ms, end))
        for i in unavailability(events)
        if i.end_ms > start and i.start_ms < end
    ]
    return PauseFigures(
        unavailable_ms=phase.partition_unavailable_ms,
        pause_ms=phase.pause_ms,
        pause_ms_by_member=dict(sorted(by_member.items())),
        rebalances=phase.rebalances,
        revoked_partitions=phase.revoked_partitions,
        intervals=intervals,
        own_pause_ms=own,
        collateral_pause_ms=collateral,
    )


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
            )
        )
    return specs


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


def wait_settled(fleet: Any, group: str, partitions: int, timeout_s: float) -> float:
    """The readiness gate; returns the seconds it waited."""
    start = time.monotonic()
    deadline = start + timeout_s
    state = "nothing"
    while time.monotonic() < deadline:
        live = [m for m in fleet.group_members(group) if m.alive]
        for m in fleet.group_members(group):
            code = m.proc.poll() if m.proc is not None else None
            if code not in (None, 0, -15, -9):
                raise ScenarioError(f"member {m.spec.name} exited with {code}: {m.log_tail(5)}")
        desc = fleet.admin.describe_group(group)
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
    from kafka_coop.sandbox import Fleet, SteadyProducer

    tag = uuid.uuid4().hex[:6]
    group, topic = f"rb-{scn.name}-{tag}", f"rb-{scn.name}-{tag}"
    members, partitions = int(params["members"]), int(params["partitions"])
    gate_timeout = float(params["gate_timeout_s"])
    load_start = _load()
    fleet_dir = workdir / (f"{scn.name}-r{repeat}" if repeat else scn.name)
    steps: list[dict[str, Any]] = []
    with Fleet(bootstrap, fleet_dir) as fleet:
        fleet.admin.ensure_topic(topic, partitions)
        if scn.case == "slow_restart" and scn.protocol == "consumer":
            _set_group_session(
                bootstrap, group, int(params["slow_session_ms"]), int(params["slow_heartbeat_ms"])
            )
        producer = SteadyProducer(bootstrap, topic, partitions, rate=float(params["rate"])).start()
        try:
            t_setup = time.monotonic()
            fleet.add_many(member_specs(scn, group, topic, params, members))
            wait_settled(fleet, group, partitions, gate_timeout)
            setup_s = time.monotonic() - t_setup
            time.sleep(float(params["warmup_s"]))
            t0 = _now_ms()
            if scn.case == "scale_out":
                t, t_ms = time.monotonic(), _now_ms()
                added = fleet.add_many(
                    member_specs(scn, group, topic, params, int(params["scale_out"]), first=members)
                )
                gate = wait_settled(fleet, group, partitions, gate_timeout)
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
                bounced = fleet.group_members(group)
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
                    gate = wait_settled(fleet, group, partitions, gate_timeout)
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
        record_paths = [m.records_path for m in fleet.members.values()]
        drained = _drain(record_paths, topic, produced, float(params["drain_timeout_s"]))
        fleet.stop_all()
        events = [e for m in fleet.members.values() for e in m.events()]
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


def _archive_events(runs: list[dict[str, Any]], results_dir: Path) -> Path:
    import json

    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / EVENTS_ARCHIVE
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


def median_pause(runs: Sequence[Mapping[str, Any]], name: str) -> float | None:
    """The median total pause of a scenario's runs (one run: its pause)."""
    values = sorted(float(r["pause_ms"]) for r in runs if r["scenario"] == name)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def selected_scenarios(spec: str) -> list[Scenario]:
    if spec.strip() in ("", "all"):
        return list(SCENARIOS)
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise ValueError(f"unknown scenario(s) {unknown}; known: {', '.join(BY_NAME)}")
    return [BY_NAME[n] for n in names]


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


def summarize_runs(result: BenchResult, runs: list[dict[str, Any]]) -> BenchResult:
    by_name = {r["scenario"]: r for r in runs if not r.get("repeat")}
    for r in runs:
        base = by_name.get(r["baseline"])
        r["unavailable_ratio_vs_baseline"] = (
            ratio(r["unavailable_ms"], base["unavailable_ms"]) if base else None
        )
        r["pause_ratio_vs_baseline"] = ratio(r["pause_ms"], base["pause_ms"]) if base else None
    names = [r["scenario"] + (f"#{r['repeat']}" if r.get("repeat") else "") for r in runs]
    result.samples = {
        "pause_ms": Series(unit="ms", values=[float(r["pause_ms"]) for r in runs]),
        "unavailable_ms": Series(unit="ms", values=[float(r["unavailable_ms"]) for r in runs]),
        "latency_p99_ms": Series(
            unit="ms", values=[float(r["records"]["latency_p99_ms"] or 0) for r in runs]
        ),
        "bounce_wall_s": Series(unit="s", values=[float(r["bounce_wall_s"]) for r in runs]),
        "own_pause_ms": Series(unit="ms", values=[float(r["own_pause_ms"]) for r in runs]),
        "collateral_pause_ms": Series(unit="ms", values=[float(r["collateral_pause_ms"]) for r in runs]),
    }
    result.notes.extend(decomposition_notes(runs))
    result.notes.extend(heartbeat_model_notes(runs))
    result.parameters["sample_order"] = list(names)
    figs: dict[str, Figure] = {}
    for family, prefix in (("python", "py"), ("java", "java")):
        eager, coop = by_name.get(f"{prefix}-eager-dynamic"), median_pause(runs, f"{prefix}-coop-static")
        if eager and coop is not None:
            red = reduction(eager["pause_ms"], coop)
            if red is not None:
                figs[f"{prefix}_coop_static_pause_reduction"] = Figure(
                    value=round(red, 2),
                    unit="x",
                    description=f"{family}: eager dynamic total pause / cooperative static total pause"
                    + (" (median of its runs)" if prefix == "py" else ""),
                    target=TARGET_COOP_STATIC_REDUCTION,
                    better="higher",
                )
    kip, coop_floor = median_pause(runs, "py-consumer-static"), median_pause(runs, "py-coop-static")
    if kip is not None and coop_floor is not None:
        rat = ratio(kip, coop_floor)
        if rat is not None:
            figs["kip848_static_vs_coop_static_pause"] = Figure(
                value=round(rat, 3),
                unit="ratio",
                description="python: KIP-848 static / cooperative static total pause, medians of "
                f"{sum(r['scenario'] == 'py-coop-static' for r in runs)} interleaved runs each",
                target=TARGET_KIP848_VS_COOP,
                better="lower",
            )
    figs["lost_total"] = Figure(
        value=float(sum(r["records"]["lost"] for r in runs)),
        unit="records",
        description="acknowledged records nobody processed, all scenarios",
        target=0,
        better="lower",
    )
    for r in runs:
        if r.get("repeat"):
            continue  # repeats feed the medians and the notes; the per-scenario figures are the first run
        n = r["scenario"]
        rec = r["records"]
        headline = r["case"] == "bounce"
        figs[f"{n}.pause_ms"] = Figure(
            value=r["pause_ms"], unit="ms", description=f"{r['label']}: total pause", show=headline
        )
        figs[f"{n}.unavailable_ms"] = Figure(
            value=r["unavailable_ms"],
            unit="ms",
            description=f"{r['label']}: total partition-unavailable",
            show=False,
        )
        if rec["latency_p99_ms"] is not None:
            figs[f"{n}.latency_p99_ms"] = Figure(
                value=rec["latency_p99_ms"],
                unit="ms",
                description=f"{r['label']}: p99 end-to-end, produced in window",
                show=False,
            )
        figs[f"{n}.duplicates"] = Figure(value=rec["duplicates"], unit="records", show=False)
        figs[f"{n}.lost"] = Figure(value=rec["lost"], unit="records", target=0, better="lower", show=False)
        figs[f"{n}.bounce_wall_s"] = Figure(value=r["bounce_wall_s"], unit="s", show=False)
        if r["pause_ratio_vs_baseline"] is not None:
            figs[f"{n}.pause_ratio"] = Figure(
                value=round(r["pause_ratio_vs_baseline"], 4),
                unit="ratio",
                description=f"vs {r['baseline']}",
                show=False,
            )
        if r["unavailable_ratio_vs_baseline"] is not None:
            figs[f"{n}.unavailable_ratio"] = Figure(
                value=round(r["unavailable_ratio_vs_baseline"], 4),
                unit="ratio",
                description=f"vs {r['baseline']}",
                show=False,
            )
    result.figures = figs
    return result.finish()


def decomposition_notes(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Where each scenario's pause went: the restarted members' own pause (their process was down or
    starting; every protocol pays it) and the collateral pause of members nobody touched."""
    notes = []
    for r in runs:
        steps = len(r["steps"]) or 1
        name = f"{r['scenario']} #{r['repeat']}" if r.get("repeat") else r["scenario"]
        notes.append(
            f"{name}: pause {r['pause_ms']:,} ms = own {r['own_pause_ms']:,} ms "
            f"({r['own_pause_ms'] / steps / 1000:.1f} s per restarted member) + collateral "
            f"{r['collateral_pause_ms']:,} ms ({r['collateral_pause_ms'] / steps / 1000:.1f} s per step); "
            f"{r['rebalances']} assigned callbacks; load {r['load_avg_1m_start']} -> {r['load_avg_1m_end']}"
        )
    return notes


def heartbeat_model_notes(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Check the model of a dynamic member's restart: its join starts a rebalance that completes only
    when every other member has noticed it on a heartbeat, so it waits about hb * (n-1)/n (the expected
    last of n-1 uniform heartbeat phases) on top of the restart itself (eager static's own pause, where
    no rebalance happens)."""
    by = {r["scenario"]: r for r in runs if not r.get("repeat")}
    floor_run = by.get("py-eager-static")
    if floor_run is None:
        return []
    floor = floor_run["own_pause_ms"] / max(1, len(floor_run["steps"]))
    notes = []
    for name, beat in (("py-eager-dynamic", DEFAULT_HEARTBEAT_MS), ("py-eager-dynamic-hb1s", 1000)):
        r = by.get(name)
        if r is None:
            continue
        n = int(r["members"])
        predicted = floor + beat * (n - 1) / n
        measured = r["own_pause_ms"] / max(1, len(r["steps"]))
        notes.append(
            f"heartbeat model, {name} (heartbeat.interval.ms {beat}): own pause per restart predicted "
            f"{predicted / 1000:.2f} s (restart {floor / 1000:.2f} s + {beat / 1000:g} s x {n - 1}/{n}), "
            f"measured {measured / 1000:.2f} s"
        )
    return notes


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

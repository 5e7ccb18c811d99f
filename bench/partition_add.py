"""KIP-848's own anchor: 900 partitions added under a 10-member group, classic vs consumer protocol.

The published figure (Karafka's KIP-848 guide, after the KIP's authors): a group of 10 consumers that
gets 900 more partitions finishes rebalancing in about 5 s with the consumer protocol against about
103 s with the classic one. Reproduced here with Python members (testbed/service_member.py:
CoopConsumer, 2 ms per record, a commit after each batch), dynamic membership, on one sandbox broker:

1. a topic with `old` (100) partitions, `rate` records/s produced to them; 10 members join and settle
   (every partition owned exactly once, every member owning some);
2. after `warmup_s`, CreatePartitions takes the topic to `old + added` (1,000) partitions;
3. the clock runs from that call until every one of the 1,000 partitions is owned exactly once, from the
   members' own events (`time_to_all_owned_s`), and over that window the old partitions' unavailable
   partition-ms and the members' pause member-ms are summed.

Protocols: classic eager (range), classic cooperative (cooperative-sticky), consumer (KIP-848, the
broker's default `uniform` assignor). Client and broker defaults throughout for the headline rows:
a classic member learns of new partitions only from its own metadata refresh
(librdkafka `topic.metadata.refresh.interval.ms`, 300,000 ms by default; Java's `metadata.max.age.ms`,
also 5 minutes), then rejoins; a KIP-848 coordinator sees the new partitions in the cluster metadata
itself, bumps the group epoch and hands them out on the members' next heartbeats
(`group.consumer.heartbeat.interval.ms`, 5,000 ms by default). Extra rows rerun the classic protocols
with a 10 s refresh interval, to show which setting drives the classic figure.

The broker's log (bench/harness/broker_clock.py) gives the coordinator's own first reaction: the classic
rebalance and the member whose rejoin started it, or the KIP-848 epoch bump.

Target: classic eager time / consumer time >= 20 (the published ratio is ~20x).

Run: `python -m bench --only partition_add` -> bench/results/partition-add.json/.png.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._anchor_figures import (
    all_owned_at,
    detection_lines,
    first_assigned_at,
    member_pause_ms,
    old_partition_cost,
    partition_creation,
)
from bench.harness.broker_clock import parse_broker_log
from bench.harness.brokers import BROKER_CONFIG, broker_with_coordinator_debug, delete_topic, renice_process
from bench.harness.figures import read_record_logs, record_stats
from bench.harness.frame import (
    BenchArgs,
    BenchResult,
    Figure,
    Series,
    assignment_interval_ms,
    main_for,
    new_result,
    select_named,
    thread_cpu_s,
)
from bench.harness.rolling import drain, wait_settled
from kafka_coop._vocab import RebalanceProtocol
from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION

NAME = "partition-add"
TITLE = "KIP-848 anchor: 900 partitions added under 10 members, classic vs consumer protocol"
TARGET_SPEEDUP = 20.0
LIBRDKAFKA_REFRESH_DEFAULT_MS = 300_000


@dataclass(frozen=True)
class Case:
    name: str
    protocol: RebalanceProtocol
    refresh_ms: int | None = None  # topic.metadata.refresh.interval.ms when not librdkafka's default
    # "tmpfs": a second broker whose log dirs are in memory (/dev/shm), to take the disk's fsyncs out
    # of the partitions' log creation; every headline row runs on the disk broker
    broker: str = "disk"

    @property
    def label(self) -> str:
        proto = {
            "eager": "classic eager",
            "cooperative": "classic cooperative",
            "consumer": "consumer (KIP-848)",
        }
        refresh = (
            f", metadata refresh {self.refresh_ms / 1000:g} s" if self.refresh_ms else ", client defaults"
        )
        disk = ", broker logs on tmpfs" if self.broker == "tmpfs" else ""
        return proto[self.protocol] + refresh + disk


CASES: tuple[Case, ...] = (
    Case("consumer", "consumer"),
    Case("classic-eager", "eager"),
    Case("classic-coop", "cooperative"),
    Case("classic-eager-refresh10s", "eager", 10_000),
    Case("classic-coop-refresh10s", "cooperative", 10_000),
    Case("consumer-tmpfs", "consumer", broker="tmpfs"),
)
TMPFS_ROOT = Path("/dev/shm")
BY_NAME = {c.name: c for c in CASES}

DEFAULTS: dict[str, int | float | str] = {
    "members": 10,
    "old": 100,
    "added": 900,
    "rate": 500.0,
    "process_ms": 2,
    "warmup_s": 5.0,
    "cooldown_s": 3.0,
    "settle_timeout_s": 240.0,
    "own_timeout_s": 600.0,  # > the 300 s classic refresh period
    "drain_timeout_s": 120.0,
    "cases": "all",  # the five disk-broker rows; consumer-tmpfs only when named
    # The broker stands in for a broker machine of its own, as in production: the consumer protocol's
    # figure waits for the broker to create the partitions' logs, ~2 s of one thread's CPU, which a
    # shared 2-core machine stretched to 10-36 s of wall. Its scheduler autogroup and threads run at
    # this nice (0 = unchanged); the broker's CPU time over each window is recorded either way.
    "broker_nice": -10,
}
QUICK: dict[str, int | float | str] = {
    "members": 3,
    "old": 6,
    "added": 12,
    "rate": 100.0,
    "warmup_s": 2.0,
    "cooldown_s": 1.0,
    "cases": "consumer,classic-eager-refresh10s",
}


def selected(spec: str) -> list[Case]:
    return select_named(spec, BY_NAME, [c for c in CASES if c.broker == "disk"], "case")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _specs(case: Case, group: str, topic: str, params: Mapping[str, Any]) -> list[Any]:
    from kafka_coop.sandbox.testing import MemberSpec

    props = {"topic.metadata.refresh.interval.ms": str(case.refresh_ms)} if case.refresh_ms else {}
    return [
        MemberSpec(
            name=f"{case.name}-m{i}",
            kind="python",
            group=group,
            topics=(topic,),
            assignors=("cooperative-sticky",) if case.protocol == "cooperative" else ("range",),
            group_protocol="consumer" if case.protocol == "consumer" else "classic",
            properties=props,
            record_log=True,
            manifests=False,
            process_ms=int(params["process_ms"]),
        )
        for i in range(int(params["members"]))
    ]


def _add_partitions(bootstrap: str, topic: str, total: int) -> None:
    from confluent_kafka.admin import AdminClient, NewPartitions  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_partitions([NewPartitions(topic, total)], operation_timeout=60).values():
        future.result(timeout=120)


def run_case(
    case: Case,
    bootstrap: str,
    broker_log: Path,
    workdir: Path,
    params: Mapping[str, Any],
    broker_pid: int | None = None,
) -> dict[str, Any]:
    from bench.harness.service_members import add_service_members
    from kafka_coop.analytics import pauses, unavailability
    from kafka_coop.sandbox.testing import MemberProcesses, SteadyProducer

    tag = uuid.uuid4().hex[:6]
    group = topic = f"pa-{case.name}-{tag}"
    old, added = int(params["old"]), int(params["added"])
    total = old + added
    load_start = _load()
    with MemberProcesses(bootstrap, workdir / case.name) as processes:
        processes.admin.ensure_topic(topic, old)
        producer = SteadyProducer(bootstrap, topic, old, rate=float(params["rate"])).start()
        try:
            members = add_service_members(processes, _specs(case, group, topic, params))
            started_ms = _now_ms()
            wait_settled(processes, group, old, float(params["settle_timeout_s"]))
            time.sleep(float(params["warmup_s"]))
            cpu0 = broker_cpu(broker_pid)
            t0 = _now_ms()
            _add_partitions(bootstrap, topic, total)
            t_added = _now_ms()
            wait_settled(processes, group, total, float(params["own_timeout_s"]))
            t_gate = _now_ms()
            cpu1 = broker_cpu(broker_pid)
            time.sleep(float(params["cooldown_s"]))
        finally:
            produced = producer.stop()
        acked = dict(producer.acked)
        record_paths = [m.records_path for m in members]
        drained = drain(record_paths, topic, produced, float(params["drain_timeout_s"]))
        processes.stop_all()
        events = [e for m in processes.members.values() for e in m.events()]
        records = read_record_logs(record_paths)
    delete_topic(bootstrap, topic)
    owned_at = all_owned_at(events, topic, total, t0)
    t1 = owned_at if owned_at is not None else t_gate
    first_new = first_assigned_at(events, topic, old, t0)
    unavailable, hit = old_partition_cost(unavailability(events), topic, old, (t0, t1))
    with broker_log.open(encoding="utf-8", errors="replace") as fh:
        lines = parse_broker_log(fh, groups=[group])
    with broker_log.open(encoding="utf-8", errors="replace") as fh:
        creation = partition_creation(fh, topic, old)
    detected = detection_lines(lines, t0)
    stats = record_stats(records, topic=topic, acked=acked, window=(t0, t1))
    return {
        "case": case.name,
        "label": case.label,
        "protocol": case.protocol,
        "broker": case.broker,
        "refresh_ms": case.refresh_ms or LIBRDKAFKA_REFRESH_DEFAULT_MS,
        "group": group,
        "members": int(params["members"]),
        "old_partitions": old,
        "added_partitions": added,
        "members_started_ms": started_ms,
        "added_ms": t0,
        "create_partitions_s": (t_added - t0) / 1000.0,
        # the broker's own timeline after the call, s: partition records written by the controller, the
        # partitions' logs created on the broker, the coordinator's first reaction, every partition owned
        "timeline_s": {
            key.removesuffix("_ms"): None if ts is None else (ts - t0) / 1000.0
            for key, ts in (
                *creation.items(),
                ("coordinator_reaction_ms", detected.get("ts_ms")),
                ("all_owned_ms", owned_at),
            )
        },
        "time_to_all_owned_after_creation_s": None
        if owned_at is None or creation["partition_logs_created_ms"] is None
        else (owned_at - creation["partition_logs_created_ms"]) / 1000.0,
        "all_owned_ms": owned_at,
        "time_to_all_owned_s": (t1 - t0) / 1000.0,
        "time_to_first_new_owned_s": None if first_new is None else (first_new - t0) / 1000.0,
        "members_age_at_add_s": (t0 - started_ms) / 1000.0,
        "broker_first_reaction": {**detected, "after_add_s": (detected["ts_ms"] - t0) / 1000.0}
        if detected
        else {},
        "old_unavailable_ms": unavailable,
        "old_partitions_unavailable": hit,
        "pause_ms": member_pause_ms(pauses(events), (t0, t1)),
        "assigned_events_in_window": sum(
            1 for e in events if e["kind"] == "assigned" and t0 <= int(e["ts_ms"]) <= t1
        ),
        "drained": drained,
        "records": stats.model_dump(),
        # the broker's CPU seconds from the call until the group settled: all threads, and its
        # metadata thread (which applies the new partitions and creates their logs)
        "broker_cpu_s": {key: round(cpu1[key] - cpu0[key], 3) for key in cpu0},
        "load_avg_1m_start": load_start,
        "load_avg_1m_end": _load(),
    }


def broker_cpu(pid: int | None) -> dict[str, float]:
    """CPU seconds (user + sys) used so far by the broker's live threads and by its metadata thread(s)."""
    threads = thread_cpu_s(pid) if pid is not None else []
    return {
        "process": sum(used for _, used in threads),
        # comm is cut at 15 characters: "kafka-1-metadat"
        "metadata_thread": sum(used for name, used in threads if "-metadat" in name),
    }


def run(args: BenchArgs) -> BenchResult:
    params: dict[str, Any] = {**DEFAULTS, **(QUICK if args.quick else {})}
    params = {key: args.param(key, value) for key, value in params.items()}
    cases = selected(str(params["cases"]))
    result = new_result(
        NAME,
        TITLE,
        {
            **params,
            "case_names": [c.name for c in cases],
            "broker_config": dict(BROKER_CONFIG),
            "load_avg_1m_start": _load(),
            "published": "Karafka docs (KIP-848 guide): 10 consumers, 900 partitions added: ~103 s classic, "
            "~5 s consumer protocol",
            "member": "testbed/service_member.py, dynamic membership, client defaults except the "
            "refresh rows",
        },
        kafka_version=DEFAULT_KAFKA_VERSION,
    )
    runs: list[dict[str, Any]] = []
    for broker in ("disk", "tmpfs"):
        on_broker = [c for c in cases if c.broker == broker]
        if not on_broker:
            continue
        root = str(TMPFS_ROOT) if broker == "tmpfs" else None
        with (
            tempfile.TemporaryDirectory(prefix="kafka-coop-pa-", dir=root) as tmp,
            broker_with_coordinator_debug(Path(tmp)) as kafka,
        ):
            result.parameters[f"assignment_interval_ms_{broker}"] = assignment_interval_ms(kafka.bootstrap)
            status = kafka.status()
            broker_pid = status.pid if status is not None else None
            reniced = renice_process(broker_pid, int(params["broker_nice"]))
            result.notes.append(
                f"{broker} broker: nice {params['broker_nice']} ({reniced} threads and its autogroup at "
                "start; threads it starts later inherit it)"
            )
            for case in on_broker:
                t = time.monotonic()
                print(f"  {case.name} ...", flush=True)
                try:
                    run_ = run_case(case, kafka.bootstrap, kafka.log_path, Path(tmp), params, broker_pid)
                except Exception as exc:  # one broken case must not lose the others
                    result.notes.append(f"case failed: {case.name}: {exc}")
                    print(f"  {case.name} FAILED: {exc}", flush=True)
                    continue
                runs.append(run_)
                print(
                    f"  {case.name}: all owned after {run_['time_to_all_owned_s']:.1f} s, old partitions "
                    f"unavailable {run_['old_unavailable_ms']:,} ms, pause {run_['pause_ms']:,} ms, broker "
                    f"{run_['broker_first_reaction']}, lost {run_['records']['lost']}, case "
                    f"{time.monotonic() - t:.0f} s, load {_load()}",
                    flush=True,
                )
    result.parameters["load_avg_1m_end"] = _load()
    result.runs = runs
    return summarize(result, runs)


def summarize(result: BenchResult, runs: list[dict[str, Any]]) -> BenchResult:
    by = {r["case"]: r for r in runs}
    result.samples = {
        "time_to_all_owned_s": Series(unit="s", values=[float(r["time_to_all_owned_s"]) for r in runs]),
        "old_unavailable_ms": Series(unit="ms", values=[float(r["old_unavailable_ms"]) for r in runs]),
    }
    result.parameters["sample_order"] = [r["case"] for r in runs]
    figs: dict[str, Figure] = {}
    consumer = by.get("consumer")
    if consumer:
        for name in ("classic-eager", "classic-coop", "classic-eager-refresh10s", "classic-coop-refresh10s"):
            r = by.get(name)
            if r is None or not consumer["time_to_all_owned_s"]:
                continue
            speedup = float(r["time_to_all_owned_s"]) / float(consumer["time_to_all_owned_s"])
            headline = name == "classic-eager"
            figs[f"{name}_vs_consumer_speedup"] = Figure(
                value=round(speedup, 2),
                unit="x",
                description=f"{r['label']} / consumer protocol: time until all "
                f"{r['old_partitions'] + r['added_partitions']} partitions are owned",
                target=TARGET_SPEEDUP if headline else None,
                better="higher" if headline else None,
                show=headline or name == "classic-coop",
            )
    eager, in_memory = by.get("classic-eager"), by.get("consumer-tmpfs")
    if eager and in_memory and in_memory["time_to_all_owned_s"]:
        figs["classic-eager_vs_consumer-tmpfs_speedup"] = Figure(
            value=round(float(eager["time_to_all_owned_s"]) / float(in_memory["time_to_all_owned_s"]), 2),
            unit="x",
            description="classic eager (disk broker) / consumer protocol on a broker whose logs are on "
            "tmpfs: the same ratio with the disk's fsyncs taken out of the partitions' log creation",
        )
    for r in runs:
        figs[f"{r['case']}.time_to_all_owned_s"] = Figure(
            value=r["time_to_all_owned_s"],
            unit="s",
            description=f"{r['label']}: time until every partition owned",
        )
        figs[f"{r['case']}.old_unavailable_ms"] = Figure(
            value=r["old_unavailable_ms"],
            unit="ms",
            description=f"{r['label']}: old partitions' unavailable partition-ms until then",
            show=r["protocol"] != "cooperative" or r["refresh_ms"] == LIBRDKAFKA_REFRESH_DEFAULT_MS,
        )
        figs[f"{r['case']}.lost"] = Figure(
            value=r["records"]["lost"], unit="records", target=0, better="lower", show=False
        )
        result.notes.append(case_note(r))
    result.figures = figs
    return result.finish()


def case_note(r: Mapping[str, Any]) -> str:
    reaction = r["broker_first_reaction"]
    total = r["old_partitions"] + r["added_partitions"]
    after = reaction.get("after_add_s")
    return (
        f"{r['case']}: all {total} owned {r['time_to_all_owned_s']:.1f} s after CreatePartitions "
        f"(the call took {r['create_partitions_s']:.1f} s); first new partition owned at "
        f"{r['time_to_first_new_owned_s']} s; broker timeline {r.get('timeline_s')}; coordinator's first "
        f"reaction: {reaction.get('kind', 'none')}"
        + (f" at {after:.1f} s ({reaction.get('detail', '')})" if after is not None else "")
        + f"; members were {r['members_age_at_add_s']:.1f} s old at the add, metadata refresh every "
        f"{r['refresh_ms'] / 1000:g} s; old partitions unavailable {r['old_unavailable_ms']:,} ms over "
        f"{r['old_partitions_unavailable']} partitions, member pause {r['pause_ms']:,} ms; "
        f"broker CPU {r.get('broker_cpu_s')}; "
        f"load {r['load_avg_1m_start']} -> {r['load_avg_1m_end']}"
    )


def plot(result: BenchResult, fig: Any) -> None:
    runs = result.runs
    left, right = fig.subplots(1, 2)
    names = [str(r["case"]) for r in runs]
    times = [float(r["time_to_all_owned_s"]) for r in runs]  # type: ignore[arg-type]
    bars = left.barh(names, times, color="tab:blue")
    left.bar_label(bars, labels=[f"{t:.1f} s" for t in times], padding=3, fontsize=7)
    left.set_xscale("log")
    left.set_xlabel("s from CreatePartitions until every partition is owned (log)")
    left.axvline(103, color="tab:red", linestyle="--", linewidth=0.8, label="published classic ~103 s")
    left.axvline(5, color="tab:green", linestyle="--", linewidth=0.8, label="published consumer ~5 s")
    left.legend(fontsize=7)
    left.tick_params(axis="y", labelsize=7)
    cost = [max(float(r["old_unavailable_ms"]), 1.0) for r in runs]  # type: ignore[arg-type]
    right.barh(names, cost, color="tab:orange")
    right.set_xscale("log")
    right.set_xlabel("old partitions' unavailable partition-ms (log; 1 = none)")
    right.tick_params(axis="y", labelsize=7)


if __name__ == "__main__":
    main_for(run, plot)

"""Inspection at scale: `describe` / `verify-group` on a 1,000-member group (Java members, 20 JVMs) and
`describe --all` on a 1,000-group cluster.

Targets (issues 5 and 18): `describe` and `verify-group` on the big group each finish in < 2 s wall,
`describe --all` in < 3 s, timed end to end through the real CLI in a subprocess
(`python -m kafka_coop.cli ...`: interpreter start, imports, the cluster reads, rendering and exit
included, as a deploy pipeline sees it). The group: N Java kafka-clients members (cooperative-sticky,
dynamic, manifests published) in a few JVMs on an N-partition topic with committed offsets on every
partition (records are produced and consumed first, so the lag reads cover N partitions). The other
999 groups are real groups (`bench/_inspection_scale_groups.py`): one static librdkafka member each that
joined through a real rebalance (range / roundrobin / cooperative-sticky in turn), committed an offset on
each partition it owns and closed without leaving, so each group stays Stable with a member, its
metadata and its offsets; `describe --all` lists 1,000 groups.

Measured in rounds; every round runs each CLI command once, the order rotating by one each round, so
a change in the machine's load (it is shared) hits every command alike. Per sample: wall time, the
child's CPU time (user + sys; wall well above CPU means the process waited for a core), exit code,
output size and the 1-minute load average. Commands: `kafka-coop --version` (the floor: interpreter,
click and the command table), `describe GROUP` (table), `describe GROUP -o json`, `verify-group GROUP`
(default options, i.e. the lag window spans the gathering), `verify-group GROUP --migration
eager-to-cooperative --phase 2`, `verify-group GROUP --lag-window 0` (one lag sample), `describe --all`
(table) and `describe --all -o json`.

The breakdown, in the same run: `python -c "import <command module>"` wall (interpreter + imports),
the command in-process through click's CliRunner (modules already imported: admin client, cluster
reads, evaluation, rendering) and `take_snapshot` in-process with its per-read timings (the reads run
concurrently, so `total` is about the slowest read plus member inference), and for `describe --all`
the listing, the batched describe of every group and the rendering in-process. The load average is
recorded at the start, the end and with every sample; if it was high, the note says so.

Run: `.venv/bin/python -m bench --only inspection_scale` (`--quick`: 40 members, 2 JVMs, 20 groups,
3 rounds)
-> bench/results/inspection-scale.json + .png
"""

from __future__ import annotations

import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import JsonValue

from bench.harness.brokers import renice_process
from bench.harness.frame import (
    BenchArgs,
    BenchResult,
    Figure,
    Machine,
    Series,
    main_for,
    new_result,
    proc_cpu_s,
    sandbox,
)
from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION

NAME = "inspection-scale"
TITLE = "Inspection at scale: describe / verify-group on a big group, describe --all on 1,000 groups"
GROUP = "big"
TOPIC = "scale"
TARGET_S = 2.0
TARGET_ALL_S = 3.0
FLEET_TOPIC = "fleet"
DEFAULTS: dict[str, int] = {
    "members": 1000,
    "jvms": 20,  # 50 members each: a member JVM has a 192 MB heap (200 each thrashed its GC)
    "fleet_groups": 999,  # + the big group = 1,000 groups for describe --all
    "repeats": 11,  # rounds of every CLI command (7 left medians to a few loaded rounds)
    "in_process_repeats": 7,
    "records_per_partition": 5,
    # The members stand in for machines of their own. Niced (their scheduler autogroups and every
    # thread) from the moment they start, they yield to the broker and to the CLI under test, whose
    # runner would not share its cores with them (1,000 members starting took the 1-min load to 174
    # and starved the broker). The broker is the server under test: it keeps its priority unless
    # broker_nice says otherwise (niced to 10 on a machine loaded by other jobs, it timed out).
    "member_nice": 19,
    "broker_nice": 0,
}
QUICK: dict[str, int] = {"members": 40, "jvms": 2, "fleet_groups": 20, "repeats": 3, "in_process_repeats": 3}
SETTLE_TIMEOUT_S = 600.0
TOPIC_TIMEOUT_S = 180.0
COMMIT_TIMEOUT_S = 600.0

# name -> CLI arguments after `kafka-coop` ({group} and {bootstrap} filled in)
COMMANDS: dict[str, list[str]] = {
    "version": ["--version"],
    "describe": ["describe", "{group}", "--bootstrap-server", "{bootstrap}"],
    "describe_json": ["describe", "{group}", "--bootstrap-server", "{bootstrap}", "-o", "json"],
    "verify": ["verify-group", "{group}", "--bootstrap-server", "{bootstrap}"],
    "verify_migration": [
        "verify-group",
        "{group}",
        "--bootstrap-server",
        "{bootstrap}",
        "--migration",
        "eager-to-cooperative",
        "--phase",
        "2",
    ],
    "verify_lag_window_0": [
        "verify-group",
        "{group}",
        "--bootstrap-server",
        "{bootstrap}",
        "--lag-window",
        "0",
    ],
    "describe_all": ["describe", "--all", "--bootstrap-server", "{bootstrap}"],
    "describe_all_json": ["describe", "--all", "--bootstrap-server", "{bootstrap}", "-o", "json"],
}
TARGETED = ("describe", "describe_json", "verify", "verify_migration", "describe_all", "describe_all_json")
TARGETS = {name: TARGET_ALL_S if name.startswith("describe_all") else TARGET_S for name in TARGETED}
OK_CODES = {
    "version": {0},
    "describe": {0},
    "describe_json": {0},
    "describe_all": {0},
    "describe_all_json": {0},
}  # verify: 0 pass/warn, 1 gate failed
IMPORTS = {
    "import_main": "import kafka_coop.cli.main",
    "import_describe": "import kafka_coop.cli.main, kafka_coop.cli.describe",
    "import_verify": "import kafka_coop.cli.main, kafka_coop.cli.verify",
}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _proc_cpu_s(pid: int | None) -> float:
    """CPU seconds (user + sys, all threads) a process has used so far; 0 if it is gone."""
    return (proc_cpu_s(pid) if pid is not None else None) or 0.0


def _machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    try:
        values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError):
        return 0.0, 0.0
    tick = os.sysconf("SC_CLK_TCK")
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values) - idle) / tick, sum(values) / tick


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed_subprocess(argv: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    cpu0 = _child_cpu()
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    return wall, _child_cpu() - cpu0, proc


def cli_sample(name: str, rnd: int, bootstrap: str) -> dict[str, JsonValue]:
    args = [a.format(group=GROUP, bootstrap=bootstrap) for a in COMMANDS[name]]
    load = _load()[0]
    wall, cpu, proc = _timed_subprocess([sys.executable, "-m", "kafka_coop.cli", *args])
    if proc.returncode not in OK_CODES.get(name, {0, 1}):
        raise RuntimeError(f"kafka-coop {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    if name == "describe_json":
        snap = json.loads(proc.stdout)  # the output must be the whole snapshot, parseable
        if len(snap["members"]) == 0:
            raise RuntimeError("describe -o json returned no members")
    if name == "describe_all_json":
        rows = json.loads(proc.stdout)["groups"]  # {"v": 1, "groups": [...]} since the schemas
        if not any(r["group_id"] == GROUP and r["members"] for r in rows):
            raise RuntimeError("describe --all -o json did not list the big group with its members")
    return {
        "kind": "cli",
        "command": name,
        "round": rnd,
        "wall_s": wall,
        "cpu_s": cpu,
        "exit_code": proc.returncode,
        "stdout_bytes": len(proc.stdout),
        "load_1m": load,
    }


def import_sample(name: str) -> dict[str, JsonValue]:
    wall, cpu, proc = _timed_subprocess([sys.executable, "-c", IMPORTS[name]])
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    return {"kind": "import", "command": name, "wall_s": wall, "cpu_s": cpu, "load_1m": _load()[0]}


def rotate(names: list[str], rnd: int) -> list[str]:
    k = rnd % len(names)
    return names[k:] + names[:k]


def in_process_samples(bootstrap: str, repeats: int) -> list[dict[str, JsonValue]]:
    """take_snapshot with per-read timings, rendering, and each command through CliRunner."""
    import importlib

    from click.testing import CliRunner
    from rich.console import Console

    from kafka_coop.admin import ClusterAdmin
    from kafka_coop.inspection import take_snapshot

    # kafka_coop.cli is the cli/ directory installed under that name (mypy sees it as `cli`)
    terminal_class: Any = importlib.import_module("kafka_coop.cli").Terminal
    describe_module: Any = importlib.import_module("kafka_coop.cli.describe")
    render_snapshot: Any = describe_module.render_snapshot
    render_groups: Any = describe_module.render_groups
    cli: Any = importlib.import_module("kafka_coop.cli.main").cli

    admin = ClusterAdmin(bootstrap)
    take_snapshot(admin, GROUP)  # warm: the admin connection, broker page cache
    runs: list[dict[str, JsonValue]] = []
    runner = CliRunner()
    for rnd in range(repeats):
        timings: dict[str, float] = {}
        snap = take_snapshot(admin, GROUP, timings=timings)
        start = time.perf_counter()
        render_snapshot(terminal_class(out=Console(file=io.StringIO(), soft_wrap=True, width=80)), snap)
        render_s = time.perf_counter() - start
        start = time.perf_counter()
        json_bytes = len(snap.model_dump_json(indent=2))
        json_s = time.perf_counter() - start
        runs.append(
            {
                "kind": "snapshot",
                "round": rnd,
                "members": len(snap.members),
                "declared": sum(m.manifest is not None for m in snap.members),
                "lag_partitions": len(snap.lag),
                "manifests_error": snap.manifests_error,
                **{f"{k}_s": v for k, v in timings.items()},
                "render_table_s": render_s,
                "render_json_s": json_s,
                "json_bytes": json_bytes,
                "load_1m": _load()[0],
            }
        )
        start = time.perf_counter()
        listed = admin.list_groups()
        list_s = time.perf_counter() - start
        start = time.perf_counter()
        described = admin.describe_groups([g.group for g in listed if not g.is_simple])
        describe_all_s = time.perf_counter() - start
        start = time.perf_counter()
        rows = [(g, described.get(g.group)) for g in listed]
        render_groups(terminal_class(out=Console(file=io.StringIO(), soft_wrap=True, width=80)), rows)
        runs.append(
            {
                "kind": "fleet",
                "round": rnd,
                "groups": len(listed),
                "list_groups_s": list_s,
                "describe_groups_s": describe_all_s,
                "render_groups_s": time.perf_counter() - start,
                "load_1m": _load()[0],
            }
        )
        for name in ("describe", "verify", "describe_all"):
            args = [a.format(group=GROUP, bootstrap=bootstrap) for a in COMMANDS[name]]
            start = time.perf_counter()
            result = runner.invoke(cli, args)
            wall = time.perf_counter() - start
            if result.exit_code not in OK_CODES.get(name, {0, 1}):
                raise RuntimeError(f"in-process {name} exited {result.exit_code}: {result.output[-2000:]}")
            runs.append({"kind": "in_process", "command": name, "round": rnd, "wall_s": wall})
    return runs


def lag_reason(bootstrap: str) -> str:
    """What verify-group (default options) said about the lag window, to show it is a real trend."""
    args = [a.format(group=GROUP, bootstrap=bootstrap) for a in COMMANDS["verify"]]
    proc = subprocess.run(
        [sys.executable, "-m", "kafka_coop.cli", *args, "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if not proc.stdout.strip():
        raise RuntimeError(f"verify-group -o json exited {proc.returncode}: {proc.stderr[-2000:]}")
    report = json.loads(proc.stdout)
    return str(next(c["reason"] for c in report["checks"] if c["name"] == "lag-not-growing"))


def produce_and_commit(bootstrap: str, partitions: int, per_partition: int) -> float:
    """Records on every partition, then wait until the group committed every one of them."""
    from confluent_kafka import Producer

    from kafka_coop.admin import ClusterAdmin

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(partitions * per_partition):
        producer.produce(TOPIC, f"{i}".encode(), partition=i % partitions)
    if producer.flush(60):
        raise RuntimeError("records were not delivered")
    admin = ClusterAdmin(bootstrap)
    start = last_report = time.monotonic()
    done = 0
    while time.monotonic() - start < COMMIT_TIMEOUT_S:
        offsets = admin.offsets(GROUP)
        done = sum(1 for o in offsets if o.committed == o.end)
        if len(offsets) == partitions and done == partitions:
            return time.monotonic() - start
        if time.monotonic() - last_report > 30:  # niced members on a loaded machine can take minutes
            print(f"  {done} of {partitions} partitions committed (load {_load()[0]})", flush=True)
            last_report = time.monotonic()
        time.sleep(0.5)
    raise RuntimeError(f"the group committed {done} of {partitions} partitions in {COMMIT_TIMEOUT_S:.0f} s")


class Bed(NamedTuple):
    """The group under measure, ready: how long it took to make, and the member JVMs' pids."""

    fleet_s: float
    settle_s: float
    commit_s: float
    member_pids: list[int | None]


class Measuring(NamedTuple):
    """The rounds of samples and what the machine did while they ran."""

    runs: list[dict[str, JsonValue]]
    groups_listed: int
    load_measuring: list[float]
    reniced: int
    reason: str
    measuring_s: float
    bed_cores: float
    busy_share: float


def _start_bed(kafka: Any, admin: Any, processes: Any, params: dict[str, int]) -> Bed:
    """The topics, the fleet groups and the big group's Java members, stable and with committed offsets."""
    from bench._inspection_scale_groups import create_static_groups
    from kafka_coop.errors import ClusterUnavailable
    from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC, MANIFEST_TOPIC_CONFIG
    from kafka_coop.sandbox.testing import MemberSpec

    members, jvms = params["members"], params["jvms"]
    # a 1,000-partition topic takes the (shared, loaded) broker a while to create
    admin.ensure_topic(TOPIC, members, timeout_s=TOPIC_TIMEOUT_S)
    admin.ensure_topic(DEFAULT_MANIFEST_TOPIC, 1, config=MANIFEST_TOPIC_CONFIG, timeout_s=TOPIC_TIMEOUT_S)
    admin.ensure_topic(FLEET_TOPIC, 4, timeout_s=TOPIC_TIMEOUT_S)
    fleet_s = create_static_groups(kafka.bootstrap, FLEET_TOPIC, params["fleet_groups"])
    print(f"  {params['fleet_groups']} fleet groups made in {fleet_s:.1f} s", flush=True)
    processes.add_many(
        MemberSpec(
            name=f"jvm{j}",
            kind="java",
            group=GROUP,
            topics=(TOPIC,),
            assignors=("cooperative-sticky",),
            members=members // jvms,
            properties={"session.timeout.ms": "45000"},
        )
        for j in range(jvms)
    )
    member_pids = [m.proc.pid if m.proc is not None else None for m in processes.group_members(GROUP)]
    for pid in member_pids:
        renice_process(pid, params["member_nice"])
    t0 = time.monotonic()
    while True:
        try:
            processes.wait_stable(GROUP, members=members // jvms * jvms, timeout_s=SETTLE_TIMEOUT_S)
            break
        except ClusterUnavailable:  # a describe timed out on the loaded machine: ask again
            if time.monotonic() - t0 > SETTLE_TIMEOUT_S:
                raise
    settle_s = time.monotonic() - t0
    print(f"  {members} members stable in {settle_s:.1f} s (load {_load()[0]})", flush=True)
    commit_s = produce_and_commit(kafka.bootstrap, members, params["records_per_partition"])
    print(f"  offsets committed in {commit_s:.1f} s", flush=True)
    return Bed(fleet_s, settle_s, commit_s, member_pids)


def _measure(kafka: Any, admin: Any, bed: Bed, params: dict[str, int]) -> Measuring:
    """Every round of CLI commands (order rotated) and imports, then the in-process samples, with the
    test bed's and the machine's CPU counted around them."""
    groups_listed = len(admin.list_groups())
    load_measuring = _load()
    broker = kafka.status()
    bed_pids = [broker.pid if broker is not None else None, *bed.member_pids]
    reniced = sum(renice_process(pid, params["member_nice"]) for pid in bed.member_pids)
    renice_process(bed_pids[0], params["broker_nice"])
    bed0 = sum(_proc_cpu_s(pid) for pid in bed_pids)
    busy0, total0 = _machine_cpu()
    wall0 = time.monotonic()
    reason = lag_reason(kafka.bootstrap)  # also warms the OS file cache for the CLI runs
    runs: list[dict[str, JsonValue]] = []
    names = list(COMMANDS)
    for rnd in range(params["repeats"]):
        for name in rotate(names, rnd):
            runs.append(cli_sample(name, rnd, kafka.bootstrap))
        for name in IMPORTS:
            runs.append(import_sample(name))
        line = "  ".join(
            f"{r['command']} {r['wall_s']:.2f}" for r in runs if r.get("round") == rnd and r["kind"] == "cli"
        )
        print(f"  round {rnd} (load {_load()[0]}): {line}", flush=True)
    runs.extend(in_process_samples(kafka.bootstrap, params["in_process_repeats"]))
    measuring_s = time.monotonic() - wall0
    bed_cores = (sum(_proc_cpu_s(pid) for pid in bed_pids) - bed0) / measuring_s
    busy1, total1 = _machine_cpu()
    busy_share = (busy1 - busy0) / (total1 - total0) if total1 > total0 else 0.0
    return Measuring(runs, groups_listed, load_measuring, reniced, reason, measuring_s, bed_cores, busy_share)


def run(args: BenchArgs) -> BenchResult:
    from kafka_coop.admin import ClusterAdmin
    from kafka_coop.sandbox.testing import MemberProcesses

    params = {**DEFAULTS, **(QUICK if args.quick else {})}
    params = {key: args.param(key, value) for key, value in params.items()}
    result = new_result(
        NAME,
        TITLE,
        {
            **params,
            "target_s": TARGET_S,
            "target_all_s": TARGET_ALL_S,
            "assignors": "cooperative-sticky",
            "commands": {k: " ".join(v) for k, v in COMMANDS.items()},
            "order": "rounds; each round runs every command once, the order rotated by one per round",
        },
        kafka_version=DEFAULT_KAFKA_VERSION,
    )
    load_start = _load()
    with tempfile.TemporaryDirectory(prefix="kafka-coop-bench-") as tmp, sandbox() as kafka:
        admin = ClusterAdmin(kafka.bootstrap)
        with MemberProcesses(kafka.bootstrap, Path(tmp) / "fleet") as processes:
            bed = _start_bed(kafka, admin, processes, params)
            m = _measure(kafka, admin, bed, params)
    result.runs = m.runs
    load_end = _load()
    result.machine = Machine.model_validate(
        {
            **result.machine.model_dump(),
            "load_avg_start": load_start,
            "load_avg_measuring_start": m.load_measuring,
            "load_avg_end": load_end,
            "test_bed_cores_while_measuring": round(m.bed_cores, 3),
            "groups_listed": m.groups_listed,
            "machine_busy_share_while_measuring": round(m.busy_share, 3),
        }
    )
    result.notes.extend(_notes(params, bed, m, load_start, load_end))
    return summarize(result)


def _notes(
    params: dict[str, int], bed: Bed, m: Measuring, load_start: list[float], load_end: list[float]
) -> list[str]:
    members, jvms = params["members"], params["jvms"]
    return [
        f"{members} Java members in {jvms} JVMs stable after {bed.settle_s:.1f} s; "
        f"committed offsets on {members} partitions after {bed.commit_s:.1f} s",
        f"while measuring ({m.measuring_s:.0f} s) the test bed itself (broker + {jvms} member JVMs) used "
        f"{m.bed_cores:.2f} cores on average and the whole machine was {m.busy_share:.0%} busy "
        f"({os.cpu_count()} cores; the CLI under test, the bench and other jobs included)",
        f"member JVMs niced to {params['member_nice']} from their start ({m.reniced} threads when measuring "
        f"began), so the broker and the CLI under test are not starved by them; broker nice "
        f"{params['broker_nice']}",
        f"verify-group lag-not-growing with default options said: {m.reason!r}",
        f"describe --all lists {m.groups_listed} groups: the big group and {params['fleet_groups']} fleet "
        f"groups of one static member each (made in {bed.fleet_s:.0f} s; Stable, member metadata and "
        "committed offsets, their members closed without leaving)",
        f"load average (1/5/15 min) at start {load_start}, when measuring began {m.load_measuring}, "
        f"at end {load_end} on {os.cpu_count()} cores (the machine is shared)",
    ]


def _values(runs: list[dict[str, JsonValue]], kind: str, command: str | None, key: str) -> list[float]:
    out = []
    for run_ in runs:
        if run_["kind"] == kind and (command is None or run_.get("command") == command) and key in run_:
            value = run_[key]
            if isinstance(value, int | float):
                out.append(float(value))
    return out


def summarize(result: BenchResult) -> BenchResult:
    runs = result.runs
    med = statistics.median
    samples: dict[str, Series] = {}
    for name in COMMANDS:
        samples[f"cli_{name}_s"] = Series(unit="s", values=_values(runs, "cli", name, "wall_s"))
        samples[f"cli_{name}_cpu_s"] = Series(unit="cpu s", values=_values(runs, "cli", name, "cpu_s"))
    for name in IMPORTS:
        samples[f"{name}_s"] = Series(unit="s", values=_values(runs, "import", name, "wall_s"))
    for name in ("describe", "verify", "describe_all"):
        samples[f"in_process_{name}_s"] = Series(unit="s", values=_values(runs, "in_process", name, "wall_s"))
    for key in ("list_groups_s", "describe_groups_s", "render_groups_s"):
        samples[f"fleet_{key}"] = Series(unit="s", values=_values(runs, "fleet", None, key))
    snapshot_keys = sorted(
        {k for r in runs if r["kind"] == "snapshot" for k in r if k.endswith("_s") and k != "load_1m"}
    )
    for key in snapshot_keys:
        samples[f"snapshot_{key}"] = Series(unit="s", values=_values(runs, "snapshot", None, key))
    samples["load_1m_during_cli"] = Series(unit="load", values=_values(runs, "cli", None, "load_1m"))
    result.samples = samples

    figures: dict[str, Figure] = {}
    members = result.parameters.get("members")
    groups = result.machine.model_dump().get("groups_listed", "?")
    on = f" on a {members}-member group"
    descriptions = {
        "describe": f"`kafka-coop describe GROUP` (table){on}, median CLI wall, interpreter start included",
        "describe_json": f"`kafka-coop describe GROUP -o json`{on}, median CLI wall",
        "verify": f"`kafka-coop verify-group GROUP` with default options{on} (lag window = the gathering)",
        "verify_migration": f"`verify-group GROUP --migration eager-to-cooperative --phase 2`{on}",
        "describe_all": f"`kafka-coop describe --all` (table) on {groups} groups, median CLI wall",
        "describe_all_json": f"`kafka-coop describe --all -o json` on {groups} groups, median CLI wall",
    }
    for name in TARGETED:
        figures[f"{name}_median_s"] = Figure(
            value=med(samples[f"cli_{name}_s"].values),
            unit="s",
            description=descriptions[name],
            target=TARGETS[name],
            better="lower",
        )
    figures["verify_lag_window_0_median_s"] = Figure(
        value=med(samples["cli_verify_lag_window_0_s"].values),
        unit="s",
        description="verify-group --lag-window 0 (one lag sample)",
    )
    figures["version_median_s"] = Figure(
        value=med(samples["cli_version_s"].values),
        unit="s",
        description="`kafka-coop --version`: interpreter + click + the command table (the CLI floor)",
    )
    figures["import_describe_median_s"] = Figure(
        value=med(samples["import_describe_s"].values),
        unit="s",
        description="`python -c 'import kafka_coop.cli.main, kafka_coop.cli.describe'` wall",
        show=False,
    )
    figures["import_verify_median_s"] = Figure(
        value=med(samples["import_verify_s"].values),
        unit="s",
        description="`python -c 'import kafka_coop.cli.main, kafka_coop.cli.verify'` wall",
        show=False,
    )
    figures["snapshot_median_s"] = Figure(
        value=med(samples["snapshot_total_s"].values),
        unit="s",
        description="take_snapshot in-process (concurrent reads + member inference)",
    )
    for key in ("list_groups_s", "describe_groups_s", "render_groups_s"):
        figures[f"fleet_{key[:-2]}_median_s"] = Figure(
            value=med(samples[f"fleet_{key}"].values),
            unit="s",
            description=f"describe --all in-process: {key[:-2].replace('_', ' ')} (all groups)",
            show=False,
        )
    for name in ("describe", "verify", "describe_all"):
        figures[f"in_process_{name}_median_s"] = Figure(
            value=med(samples[f"in_process_{name}_s"].values),
            unit="s",
            description=f"{name} through click's CliRunner in-process (no interpreter start or imports)",
            show=False,
        )
    for name in ("describe", "verify"):
        figures[f"cli_{name}_cpu_median_s"] = Figure(
            value=med(samples[f"cli_{name}_cpu_s"].values),
            unit="s",
            description=f"CPU time (user+sys) of the {name} CLI process",
            show=False,
        )
    loads = samples["load_1m_during_cli"].values
    figures["load_1m_median_during_cli"] = Figure(
        value=med(loads) if loads else 0.0,
        unit="load",
        description="1-minute load average during the CLI samples (2 cores shared with other jobs)",
        show=False,
    )
    result.figures = figures
    return result.finish()


def plot(result: BenchResult, fig: Any) -> None:
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    names = list(COMMANDS)
    for i, name in enumerate(names):
        values = result.samples[f"cli_{name}_s"].values
        left.scatter([i] * len(values), values, alpha=0.6, s=18)
        if values:
            left.hlines(statistics.median(values), i - 0.3, i + 0.3, colors="black")
    left.axhline(TARGET_S, color="tab:red", linestyle="--", label=f"target {TARGET_S:g} s (one group)")
    left.axhline(TARGET_ALL_S, color="tab:purple", linestyle=":", label=f"target {TARGET_ALL_S:g} s (--all)")
    left.set_xticks(range(len(names)), names, rotation=20, ha="right", fontsize=8)
    left.set_ylabel("CLI wall (s), subprocess")
    left.set_ylim(bottom=0)
    left.legend(fontsize=8)
    left.grid(alpha=0.3, axis="y")

    # Where describe's / verify's wall goes: imports, the command in-process, the rest (exit etc.)
    med = statistics.median
    bars: list[tuple[str, float, float, float]] = []
    for name in ("describe", "verify"):
        cli = med(result.samples[f"cli_{name}_s"].values)
        imports = med(result.samples[f"import_{name}_s"].values)
        inproc = med(result.samples[f"in_process_{name}_s"].values)
        bars.append((name, imports, inproc, max(0.0, cli - imports - inproc)))
    xs = range(len(bars))
    bottoms = [0.0] * len(bars)
    for idx, (label, color) in enumerate(
        (
            ("interpreter + imports", "tab:gray"),
            ("command in-process", "tab:blue"),
            ("rest (exit, noise)", "tab:orange"),
        )
    ):
        heights = [(b[1], b[2], b[3])[idx] for b in bars]
        right.bar(xs, heights, bottom=bottoms, color=color, label=label)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    right.axhline(TARGET_S, color="tab:red", linestyle="--")
    right.set_xticks(list(xs), [b[0] for b in bars])
    right.set_ylabel("median s")
    right.legend(fontsize=8, loc="upper right")
    right.grid(alpha=0.3, axis="y")


if __name__ == "__main__":
    main_for(run, plot)

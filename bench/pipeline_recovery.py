"""The live pipeline's recovery after a kill: SIGKILL mid-stream, restart from the checkpoint, catch up.

A fresh sandbox broker; `kafka-coop pipeline run` (the real CLI, a process of its own, local[2], 5 s
trigger) over an events topic that a producer fills at `rate` events/s for `before_s + down_s`
seconds (fleets' events stamped with the time they are sent). After `before_s` the job is SIGKILLed;
the producer goes on for `down_s` while nothing reads; then the same command is started again.

* **recovery time**: restart -> every group's figures in the output count its last event (the
  `window_open` rows' `last_ts`, read from the sink's log as `pipeline_latency` does): JVM start,
  the checkpoint's replay of the batch cut short, and the backlog of the downtime.
* **cold start** for comparison: the first start -> its first figures, events flowing from the
  launch on (`first_event_after_launch_s` says when the first was due).
* **exactly once**: once every group is idle, the output read back equals the batch report
  (`summarize`) of every event sent: nothing lost, nothing counted twice.

Run: `.venv/bin/python -m bench --only pipeline_recovery` -> bench/results/pipeline-recovery.json/.png
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness.frame import BenchArgs, BenchResult, Figure, Series, main_for, new_result, sandbox
from bench.harness.pipeline_feed import Watcher, produce_paced, restamped, timeline
from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION

NAME = "pipeline-recovery"
TITLE = (
    "Live pipeline recovery after SIGKILL: restart from the checkpoint until caught up, local[2], 5 s trigger"
)
DEFAULTS: dict[str, Any] = {
    "rate": 5_000,
    "before_s": 40,
    "down_s": 20,
    "fleets": 4,
    "members": 12,
    "partitions": 12,
    "topic_partitions": 4,
    "trigger": "5s",
    "master": "local[2]",
    "seed": 5,
}
QUICK: dict[str, Any] = {"before_s": 25, "down_s": 10}
CATCH_UP_TIMEOUT_S = 300.0


def start_cli(
    out: Path, topic: str, bootstrap: str, params: dict[str, Any], log: Path
) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "kafka_coop.cli",
        "pipeline",
        "run",
        f"kafka://{topic}",
        "--out",
        str(out),
        "--bootstrap-server",
        bootstrap,
        "--master",
        str(params["master"]),
        "--trigger",
        str(params["trigger"]),
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log.open("ab"))


def caught_up(watcher: Watcher, last: dict[str, int]) -> bool:
    watcher.poll()
    return all(watcher.visible_at(group, ts) is not None for group, ts in last.items())


@dataclass(frozen=True)
class Feed:
    """What the producer sends: the fleets' events restamped from `start_ms` on, `rate` a second."""

    topic: str
    events: list[dict[str, Any]]
    records: list[tuple[bytes, bytes]]
    keys: list[tuple[str, int]]  # (group, ts) of each record
    start_ms: int
    last: dict[str, int]  # each group's last stamp: caught up is every group's figures counting it


@dataclass(frozen=True)
class Killed:
    """The first run, until its SIGKILL: when it launched, its first figures, when it died."""

    launched: float
    cold_s: float | None
    kill_at: float  # when the kill was due (the feed's clock)
    killed: float


@dataclass(frozen=True)
class Recovered:
    """The restart: when it began, when every group was caught up, what the output counted, its exit."""

    restarted: float
    recovered: float | None
    expected: Any  # summarize() of every event sent
    got: Any  # the output's summary, read back once every group was idle
    code: int


def run(args: BenchArgs) -> BenchResult:
    from kafka_coop.admin import ClusterAdmin
    from kafka_coop.analytics import read_pipeline_rows

    params = {**DEFAULTS, **(QUICK if args.quick else {})}
    params = {key: args.param(key, value) for key, value in params.items()}
    result = new_result(NAME, TITLE, params, kafka_version=DEFAULT_KAFKA_VERSION)
    load_start = [round(x, 2) for x in os.getloadavg()]
    seconds = int(params["before_s"]) + int(params["down_s"])
    with sandbox() as kafka, tempfile.TemporaryDirectory(prefix="kafka-coop-bench-recovery-") as tmp:
        root = Path(tmp)
        out, log = root / "out", root / "pipeline.log"
        topic = "rebalance-events"
        ClusterAdmin(kafka.bootstrap).ensure_topic(topic, int(params["topic_partitions"]))
        feed = stamp_feed(topic, params, seconds)
        producer = threading.Thread(
            target=produce_paced, args=(kafka.bootstrap, topic, feed.records, feed.keys), daemon=True
        )
        watcher = Watcher(out)
        killed = run_until_killed(feed, producer, watcher, out, log, kafka.bootstrap, params)
        producer.join()
        recovered = restart_until_caught_up(feed, watcher, out, log, kafka.bootstrap, params)
        equal = recovered.got == recovered.expected
        dead = [r for r in read_pipeline_rows(out).to_pylist() if r["kind"] == "deadletter"]
    record(result, params, feed, killed, recovered, equal, len(dead), load_start)
    return result.finish()


def stamp_feed(topic: str, params: dict[str, Any], seconds: int) -> Feed:
    events = timeline({**params, "seconds": seconds})
    start_ms = int(time.time() * 1000) + 5_000  # stamping takes ~3 s: events flow from the launch on
    records, keys = restamped(events, int(params["rate"]), start_ms)
    last: dict[str, int] = {}
    for group, ts in keys:
        last[group] = ts
    return Feed(topic=topic, events=events, records=records, keys=keys, start_ms=start_ms, last=last)


def run_until_killed(
    feed: Feed,
    producer: threading.Thread,
    watcher: Watcher,
    out: Path,
    log: Path,
    bootstrap: str,
    params: dict[str, Any],
) -> Killed:
    """Launch the pipeline, start the producer, watch for the first figures, SIGKILL at `before_s`."""
    launched = time.time()
    first = start_cli(out, feed.topic, bootstrap, params, log)
    producer.start()
    cold_s = None
    kill_at = feed.start_ms / 1000 + int(params["before_s"])
    try:
        while time.time() < kill_at:
            watcher.poll()
            if cold_s is None and watcher.reach:
                cold_s = time.time() - launched
            if first.poll() is not None:
                raise RuntimeError(f"the pipeline exited {first.returncode}: {log.read_text()}")
            time.sleep(0.2)
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    finally:
        if first.poll() is None:
            first.kill()
    return Killed(launched=launched, cold_s=cold_s, kill_at=kill_at, killed=time.time())


def restart_until_caught_up(
    feed: Feed, watcher: Watcher, out: Path, log: Path, bootstrap: str, params: dict[str, Any]
) -> Recovered:
    """Start the same command again; wait until every group is caught up, then until the output counts
    every event (exactly once: every group idle, every window closed), and stop it."""
    from kafka_coop.analytics import outcome_from_rows, read_pipeline_rows, summarize

    restarted = time.time()
    second = start_cli(out, feed.topic, bootstrap, params, log)
    try:
        recovered = None
        while time.time() < restarted + CATCH_UP_TIMEOUT_S:
            if caught_up(watcher, feed.last):
                recovered = time.time()
                break
            if second.poll() is not None:
                raise RuntimeError(f"the restarted pipeline exited {second.returncode}: {log.read_text()}")
            time.sleep(0.2)
        expected = summarize(feed.events)
        deadline = time.time() + 150
        got = None
        while time.time() < deadline:
            got = outcome_from_rows(read_pipeline_rows(out)).summary
            if got.events >= expected.events:
                break
            time.sleep(2)
        second.send_signal(signal.SIGTERM)
        code = second.wait(90)
    finally:
        if second.poll() is None:
            second.kill()
    return Recovered(restarted=restarted, recovered=recovered, expected=expected, got=got, code=code)


def record(
    result: BenchResult,
    params: dict[str, Any],
    feed: Feed,
    killed: Killed,
    recovered: Recovered,
    equal: bool,
    dead_letters: int,
    load_start: list[float],
) -> None:
    """Print the run's line and fill the result: the run, the two samples, the figures."""
    restarted, got, cold_s = recovered.restarted, recovered.got, killed.cold_s
    # -1: never caught up
    recovery_s = (recovered.recovered - restarted) if recovered.recovered is not None else -1.0
    print(
        f"  cold start {cold_s or -1:.1f} s; down {restarted - killed.killed:.1f} s; "
        f"recovery {recovery_s:.1f} s; "
        f"figures equal the batch report: {equal}; dead letters {dead_letters}; exit {recovered.code}",
        flush=True,
    )
    result.runs = [
        {
            "events": len(feed.events),
            "cold_start_s": round(cold_s or -1, 2),
            "first_event_after_launch_s": round(feed.start_ms / 1000 - killed.launched, 2),
            "down_s": round(restarted - killed.killed, 2),
            "recovery_s": round(recovery_s, 2),
            "backlog_events_at_restart": sum(1 for _, ts in feed.keys if ts / 1000 >= killed.kill_at),
            "figures_equal_batch_report": equal,
            "events_counted": got.events if got is not None else 0,
            "events_expected": recovered.expected.events,
            "dead_letters": dead_letters,
            "restart_exit_code": recovered.code,
            "load_avg_start": list(load_start),
            "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        }
    ]
    result.samples = {"seconds": Series(unit="s", values=[round(cold_s or 0, 2), round(recovery_s, 2)])}
    result.parameters["sides"] = json.dumps(
        ["cold start -> first figures", "restart after SIGKILL -> caught up"]
    )
    result.figures = {
        "recovery_s": Figure(
            value=round(recovery_s, 2),
            unit="s",
            description=f"restart after SIGKILL -> every group's figures count its last event "
            f"({params['down_s']} s down at {params['rate']:,} events/s, {params['master']})",
        ),
        "cold_start_s": Figure(
            value=round(cold_s or -1, 2), unit="s", description="first start -> first figures"
        ),
        "figures_equal_batch_report": Figure(
            value=1.0 if equal else 0.0,
            unit="bool",
            description="the output read back equals summarize() of every event sent (none lost or doubled)",
            target=1.0,
            better="higher",
        ),
    }
    result.notes.append(f"load average at start {load_start} on {os.cpu_count()} cores (shared)")


def plot(result: BenchResult, fig: Any) -> None:
    ax = fig.add_subplot(1, 1, 1)
    values = result.samples["seconds"].values
    bars = ax.barh(
        ["cold start -> first figures", "restart after SIGKILL -> caught up"],
        values,
        color=["tab:gray", "tab:blue"],
    )
    ax.bar_label(bars, labels=[f"{v:.1f} s" for v in values], padding=3, fontsize=8)
    ax.set_xlabel("seconds")
    ax.invert_yaxis()
    ax.grid(axis="x", alpha=0.3)


if __name__ == "__main__":
    main_for(run, plot)

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
be recomputed with `kafka-coop report` (one group per scenario); the archive is written by every run and
not committed.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._rolling_figures import summarize_runs
from bench._rolling_scenarios import (
    DEFAULTS,
    EVENTS_ARCHIVE,
    NAME,
    QUICK,
    TITLE,
    schedule,
    selected_scenarios,
)
from bench.harness.brokers import BROKER_CONFIG, patient_broker
from bench.harness.frame import (
    RESULTS_DIR,
    BenchArgs,
    BenchResult,
    assignment_interval_ms,
    main_for,
    new_result,
)
from bench.harness.rolling import archive_events, load_avg, run_scenario
from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION


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
            "load_avg_1m_start": load_avg(),
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
    with tempfile.TemporaryDirectory(prefix="kafka-coop-rb-") as tmp, patient_broker(Path(tmp)) as kafka:
        result.parameters["assignment_interval_ms"] = assignment_interval_ms(kafka.bootstrap)
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
                f"load {load_avg()}",
                flush=True,
            )
    result.parameters["load_avg_1m_end"] = load_avg()
    if not args.quick or args.results_dir != RESULTS_DIR:
        archive_events(runs, args.results_dir, EVENTS_ARCHIVE)
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

"""`kafka-coop pipeline run --master spark://…` on a Spark standalone cluster (a master and two workers
on loopback, `spark_cluster.StandaloneCluster`) gives the figures local[2] gives on the same events; it
keeps counting when the events topic gains a partition mid-run; Ctrl-C stops it with exit 130, nothing
left running, and the same command resumes from the checkpoint with nothing counted twice.

One run of the real CLI walks all of that (a cluster application costs ~20 s to start on two cores):
events in the past, a third partition added and events produced into it, Ctrl-C, more events, the
same command again. The checkpoint and the output are local paths, which the executors share with
the driver on this one machine.
"""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewPartitions

from kafka_coop.admin import ClusterAdmin
from kafka_coop.analytics import generate_events, summarize
from kafka_coop.analytics._figures import read_pipeline_rows
from tests.integration.analytics.spark_cluster import StandaloneCluster
from tests.integration.analytics.test_pipeline import lines, now_ms, produce, squeezed, summary_of
from tests.integration.cli._contract import Ran, Running, assert_one_sentence, cli_argv, running

# One xdist worker runs this module, so each module-scoped Spark set-up (a session, a cluster, a
# member walk: 90-235 s on 2 cores) runs once, not once on every worker its tests landed on.
pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("pipeline-cluster")]

WAIT_S = 240.0


def pipeline_argv(topic: str, out: Path, bootstrap: str, master: str) -> list[str]:
    return cli_argv(
        f"pipeline run kafka://{topic} --out {out} --bootstrap-server {bootstrap} --master {master} "
        "--trigger 1s --watermark 1s --window 2s",
        {},
    )


def wait_for_events(job: Running, out: Path, events: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while not ((out / "_kafka_coop_progress.json").exists() and summary_of(out).events >= events):
        assert job.proc.poll() is None, f"the pipeline exited {job.proc.returncode}:\n{job.stderr[-3000:]}"
        assert time.monotonic() < deadline, f"not {events} events in {WAIT_S:.0f} s:\n{job.stderr[-3000:]}"
        time.sleep(0.3)


def ahead(events: list[dict[str, Any]], lead_ms: int = 3_000) -> list[dict[str, Any]]:
    """The same events shifted to start `lead_ms` from now: after anything the job applied already."""
    shift = now_ms() + lead_ms - min(int(e["ts_ms"]) for e in events)
    return [{**e, "ts_ms": int(e["ts_ms"]) + shift} for e in events]


def produce_to(bootstrap: str, topic: str, partition: int, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value, partition=partition)
    assert producer.flush(30) == 0


def grow(admin: ClusterAdmin, topic: str, partitions: int) -> None:
    for future in admin.client.create_partitions([NewPartitions(topic, partitions)]).values():
        future.result(30)


@dataclass(frozen=True)
class ClusterRun:
    topic: str
    out: Path
    events: list[dict[str, Any]]  # everything produced, in the order it was
    interrupted: Ran  # the first run, ended by Ctrl-C
    resumed: Ran  # the same command again, ended by Ctrl-C too
    apps_left: list[str]  # applications the master still ran after both
    shipped: list[Path]  # the kafka_coop zips the executors fetched


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"), workers=2) as running_cluster:
        yield running_cluster


@pytest.fixture(scope="module")
def cluster_run(
    cluster: StandaloneCluster, tmp_path_factory: pytest.TempPathFactory, bootstrap: str, admin: ClusterAdmin
) -> ClusterRun:
    topic = f"pipeline-cluster-{uuid.uuid4().hex[:6]}"
    admin.ensure_topic(topic, 2)
    out = tmp_path_factory.mktemp("cluster-pipeline") / "out"
    generated = squeezed(
        list(generate_events(450, members=4, partitions=6, seed=29)), now_ms() - 6_000, 5_000
    )
    first, second, third = generated[:150], generated[150:300], generated[300:]
    produce(bootstrap, topic, lines(first))
    argv = pipeline_argv(topic, out, bootstrap, cluster.url)
    with running(argv) as job:
        wait_for_events(job, out, len(first))
        grow(admin, topic, 3)
        second = ahead(second)
        produce_to(bootstrap, topic, 2, lines(second))  # only the new partition
        wait_for_events(job, out, len(first) + len(second))
        interrupted, _took = job.interrupt(signal.SIGINT)
    third = ahead(third)
    produce(bootstrap, topic, lines(third))
    with running(argv) as job:
        wait_for_events(job, out, len(generated))
        resumed, _took = job.interrupt(signal.SIGINT)
    deadline = time.monotonic() + 30
    while (
        apps := [a["name"] for a in cluster.status().get("activeapps", [])]
    ) and time.monotonic() < deadline:
        time.sleep(0.5)
    shipped = [p for d in cluster.executor_dirs() for p in d.glob("kafka_coop-*.zip")]
    return ClusterRun(topic, out, [*first, *second, *third], interrupted, resumed, apps, shipped)


def figures(out: Path) -> dict[str, Any]:
    """What the output says, independent of how the stream was cut into batches: the report's summary,
    each window's callbacks, every interval and pause, and each partition's current owner."""
    rows = read_pipeline_rows(out).to_pylist()

    def of(kind: str, *names: str) -> list[tuple[Any, ...]]:
        return sorted(tuple(r[n] for n in names) for r in rows if r["kind"] == kind)

    owners: dict[tuple[str, str, int], tuple[int, str | None]] = {}
    for r in rows:
        if r["kind"] == "partition":
            key = (r["group"], r["topic"], r["partition"])
            if key not in owners or owners[key][0] < r["version"]:
                owners[key] = (r["version"], r["owner"])
    return {
        "summary": summary_of(out),
        "callbacks": of("callbacks", "group", "ts", "member", "events", "rebalances", "revoked", "lost"),
        "intervals": of("interval", "group", "topic", "partition", "start_ms", "end_ms", "cause"),
        "pauses": of("pause", "group", "member", "start_ms", "end_ms"),
        "owners": {key: owner for key, (_, owner) in owners.items()},
        "deadletters": of("deadletter", "reason"),
    }


def test_the_cluster_counts_every_event_once_across_ctrl_c_and_a_restart(cluster_run: ClusterRun) -> None:
    assert summary_of(cluster_run.out) == summarize(cluster_run.events)
    assert figures(cluster_run.out)["deadletters"] == []


def test_ctrl_c_stops_the_job_with_exit_130_and_nothing_left_running(cluster_run: ClusterRun) -> None:
    ran = cluster_run.interrupted
    assert ran.code == 130, ran.why()
    assert_one_sentence(ran, None)  # no traceback, no error, no process of the driver left
    assert "stopped (interrupt)" in ran.stderr, ran.why()
    assert cluster_run.resumed.code == 130, cluster_run.resumed.why()
    assert_one_sentence(cluster_run.resumed, None)
    assert cluster_run.apps_left == [], "the master still runs the pipeline's application"


def test_events_of_a_partition_added_mid_run_are_counted(cluster_run: ClusterRun) -> None:
    """The second third went only to partition 2, made while the job ran; its event times are apart
    from the others' by more than a window, so the windows that hold them hold nothing else."""
    second = cluster_run.events[150:300]
    low, high = min(e["ts_ms"] for e in second), max(e["ts_ms"] for e in second)
    callbacks = read_pipeline_rows(cluster_run.out, kinds=["callbacks"]).to_pylist()
    assert sum(r["events"] for r in callbacks if low <= r["first_ts"] <= high) == len(second)


def test_the_executors_ran_the_drivers_kafka_coop_shipped_to_them(
    cluster: StandaloneCluster, cluster_run: ClusterRun
) -> None:
    status = cluster.status()
    apps = [app["name"] for app in status.get("completedapps", []) + status.get("activeapps", [])]
    assert apps == ["kafka-coop pipeline", "kafka-coop pipeline"]
    assert {p.parent.parent.name for p in cluster.executor_dirs()} == {"worker0", "worker1"}
    assert cluster_run.shipped, "no executor fetched the kafka_coop zip"


def test_local_spark_gives_the_clusters_figures_on_the_same_events(
    cluster_run: ClusterRun, tmp_path: Path, bootstrap: str
) -> None:
    """A fresh local[2] run over the same topic (every event in its first batch) against the cluster's
    three pieces: the same summary, windows, intervals, pauses and owners. Ctrl-C ends it."""
    out = tmp_path / "local"
    with running(pipeline_argv(cluster_run.topic, out, bootstrap, "local[2]")) as job:
        wait_for_events(job, out, len(cluster_run.events))
        ran, _took = job.interrupt(signal.SIGINT)
    assert ran.code == 130, ran.why()
    assert_one_sentence(ran, None)  # and no Spark JVM or Python worker of local[2] left running
    assert figures(out) == figures(cluster_run.out)
    assert figures(out)["summary"] == summarize(cluster_run.events)

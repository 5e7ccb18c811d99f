"""verify-group's pause gate on the sandbox: real CoopConsumer members send their rebalance events to a
topic (KafkaTopicSink) while they walk classic -> consumer; the phase-0 gate writes the marker that
begins phase 1, and the phase-1 gate judges the members' pauses against a budget, from the events topic
(the Python engine) and from the live pipeline's output (the real Structured Streaming job, once).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kafka_coop.admin import ClusterAdmin
from kafka_coop.analytics import Judged, PauseFigures, from_events, from_pipeline
from kafka_coop.analytics._pipeline import PipelineConfig
from kafka_coop.analytics._spark import get_session, stop_session
from kafka_coop.consumer import CoopConsumer
from kafka_coop.schemas import read_schema
from kafka_coop.sinks import KafkaTopicSink
from tests.conftest import CliResult
from tests.integration.analytics.test_pipeline import run_until
from tests.integration.members import wait_for

MIGRATION = "classic-to-consumer"
# one worker walks the group once for every test here (make test runs -n 3 --dist loadgroup)
pytestmark = pytest.mark.xdist_group("pause-gate")


class Member:
    """A service's loop on its own thread: poll, and nothing else; its events go to the events topic."""

    def __init__(self, bootstrap: str, group: str, topic: str, events: str, name: str, protocol: str) -> None:
        conf = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name}
        if protocol == "consumer":
            conf["group.protocol"] = "consumer"
        self.consumer = CoopConsumer(conf, events=KafkaTopicSink(events, {"bootstrap.servers": bootstrap}))
        self.consumer.subscribe([topic])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"member-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.consumer.poll(0.1)
        finally:
            self.consumer.close()

    @property
    def owns(self) -> bool:
        return bool(self.consumer.owned)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


@dataclass(frozen=True)
class Walk:
    group: str
    events: str  # the events topic
    markers: str  # the markers topic of this walk
    phase0: dict[str, Any]  # the phase-0 gate's JSON


def gate(run_cli: Callable[..., CliResult], bootstrap: str, walk: Walk, *args: str) -> CliResult:
    return run_cli(
        "verify-group",
        walk.group,
        "--bootstrap-server",
        bootstrap,
        "--migration",
        MIGRATION,
        "--markers-topic",
        walk.markers,
        "--wait",  # as the plan's gates do: a member still reconciling settles within seconds
        "--timeout",
        "60",
        *args,
    )


def judge(
    run_cli: Callable[..., CliResult], bootstrap: str, walk: Walk, source: str, budget_ms: int
) -> CliResult:
    """The gate after phase 1 with a figures source (`kafka://TOPIC` or the pipeline's DIR) and a budget."""
    flag = "--events" if source.startswith("kafka://") else "--pipeline-out"
    return gate(
        run_cli, bootstrap, walk, "--phase", "1", flag, source, "--max-pause-ms", str(budget_ms), "-o", "json"
    )


def assert_published(document: dict[str, Any]) -> None:
    """The JSON is what `kafka-coop schema verify-group` publishes for its `v`."""
    import jsonschema

    published = read_schema("verify-group", document["v"])
    assert published is not None
    jsonschema.validate(document, json.loads(published[1]))


@pytest.fixture(scope="module")
def walk(bootstrap: str, admin: ClusterAdmin, run_cli: Callable[..., CliResult]) -> Iterator[Walk]:
    """Two classic members; the phase-0 gate passes (and writes its marker); each member is bounced to
    group.protocol=consumer in turn, as phase 1 says. Their callbacks' events are on the events topic."""
    run = uuid.uuid4().hex[:6]
    group, topic, events = f"pause-gate-{run}", f"pause-gate-{run}", f"pause-gate-events-{run}"
    admin.ensure_topic(topic, 4)
    admin.ensure_topic(events, 1)
    members = {name: Member(bootstrap, group, topic, events, name, "classic") for name in ("a", "b")}
    try:
        wait_for(lambda: all(m.owns for m in members.values()), 60, "both classic members assigned")
        walked = Walk(group, events, f"pause-gate-markers-{run}", {})
        phase0 = gate(
            run_cli, bootstrap, walked, "--phase", "0", "--events", f"kafka://{events}", "-o", "json"
        )
        assert phase0.code == 0, phase0.stderr
        for name in ("a", "b"):  # phase 1: a rolling bounce to the consumer protocol
            members[name].stop()
            members[name] = Member(bootstrap, group, topic, events, name, "consumer")
            wait_for(
                lambda: all(m.owns for m in members.values()), 60, f"{name} back on the consumer protocol"
            )
        yield Walk(group, events, walked.markers, phase0.json())
    finally:
        for member in members.values():
            member.stop()


def test_a_passing_phase_gate_writes_the_marker_that_begins_the_next_phase(walk: Walk) -> None:
    marker = walk.phase0["marker"]
    assert (marker["group"], marker["migration"], marker["phase"], marker["phases"]) == (
        walk.group,
        MIGRATION,
        0,
        1,
    )


def test_the_gate_passes_a_phase_whose_pauses_are_within_the_budget(
    walk: Walk, bootstrap: str, run_cli: Callable[..., CliResult]
) -> None:
    result = judge(run_cli, bootstrap, walk, f"kafka://{walk.events}", 600_000)
    assert result.code == 0, result.stderr
    document = result.json()
    check = next(c for c in document["checks"] if c["name"] == "pause-budget")
    assert check["status"] == "pass", check
    pause = document["pause"]
    assert pause["events"] > 0 and pause["pauses_ms"], pause  # the bounces paused the members
    assert pause["span"]["start_ms"] == walk.phase0["marker"]["ts_ms"]
    assert check["reason"].startswith(f"pause p95 {pause['p95_ms']:,} ms <= budget 600,000 ms")
    assert_published(document)


def test_the_gate_fails_a_phase_whose_pause_p95_exceeds_the_budget(
    walk: Walk, bootstrap: str, run_cli: Callable[..., CliResult]
) -> None:
    result = judge(run_cli, bootstrap, walk, f"kafka://{walk.events}", 1)
    assert result.code == 1, result.stderr
    assert "pause-budget fail" in result.stderr
    check = next(c for c in result.json()["checks"] if c["name"] == "pause-budget")
    assert f"pause p95 {result.json()['pause']['p95_ms']:,} ms > budget 1 ms" in check["reason"]


def test_a_phase_with_no_events_of_the_group_is_not_judged(
    walk: Walk, bootstrap: str, admin: ClusterAdmin, run_cli: Callable[..., CliResult]
) -> None:
    """Another group's events topic: nothing of this group, so no verdict either way (exit 0 here, as
    the other checks pass; the reason says it)."""
    empty = f"pause-gate-empty-{uuid.uuid4().hex[:6]}"
    admin.ensure_topic(empty, 1)
    result = judge(run_cli, bootstrap, walk, f"kafka://{empty}", 1)
    check = next(c for c in result.json()["checks"] if c["name"] == "pause-budget")
    assert (result.code, check["status"]) == (0, "not-judged"), result.stderr
    assert check["reason"].startswith(f"not judged: no rebalance events of group {walk.group}")


def test_a_missing_events_topic_is_one_sentence_and_exit_2(
    walk: Walk, bootstrap: str, run_cli: Callable[..., CliResult]
) -> None:
    result = judge(run_cli, bootstrap, walk, "kafka://no-such-events", 1)
    assert (result.code, "Topic 'no-such-events' does not exist" in result.stderr) == (2, True), result.stderr
    assert result.json()["kind"] == "error"  # -o json prints the error object, no verdict


# --- the same phase judged from the live pipeline's output ------------------------------------------------
@pytest.fixture(scope="module")
def pipeline_out(
    walk: Walk, bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, PauseFigures]]:
    """The real pipeline over the walk's events and markers until its figures hold every pause of phase
    1; with the figures the events topic gives for the phase."""
    judged = Judged(walk.group, MIGRATION, 1)
    expected = from_events(f"kafka://{walk.events}", judged, bootstrap=bootstrap, markers_topic=walk.markers)
    assert expected.pauses_ms
    tmp = tmp_path_factory.mktemp("pause-pipeline")
    out = tmp / "out"
    config = PipelineConfig(
        topic=walk.events,
        out=out,
        checkpoint=tmp / "ckpt",
        bootstrap=bootstrap,
        master="local[2]",
        # a trigger longer than a batch takes here: the job stops between batches at once (with a 1 s
        # trigger on two busy cores a batch is always running, and stopping waits out its 30 s limit)
        trigger_s=3.0,
        watermark_ms=1_000,
        window_ms=2_000,
        markers_topic=walk.markers,
    )
    spark = get_session("local[2]", kafka=True)
    try:

        def complete() -> bool:
            return from_pipeline(out, judged).pauses_ms == expected.pauses_ms

        run_until(config, spark, complete, timeout_s=180)
    finally:
        stop_session()
    yield out, expected


@pytest.mark.spark
def test_the_pipelines_figures_judge_the_phase_as_the_events_topic_does(
    walk: Walk, pipeline_out: tuple[Path, PauseFigures], bootstrap: str, run_cli: Callable[..., CliResult]
) -> None:
    out, from_topic = str(pipeline_out[0]), pipeline_out[1]
    passing = judge(run_cli, bootstrap, walk, out, 600_000)
    assert passing.code == 0, passing.stderr
    pause = passing.json()["pause"]
    assert (pause["source"], pause["pauses_ms"]) == ("pipeline", list(from_topic.pauses_ms))
    assert_published(passing.json())
    failing = judge(run_cli, bootstrap, walk, out, 1)
    assert failing.code == 1, failing.stderr
    check = next(c for c in failing.json()["checks"] if c["name"] == "pause-budget")
    assert "> budget 1 ms" in check["reason"] and f"pipeline {out}" in check["reason"]

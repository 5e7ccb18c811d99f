"""The live pipeline (`kafka-coop pipeline run`) on the sandbox broker and local Spark gives the batch
report's figures, and a restart from its checkpoint after SIGKILL counts nothing twice and loses nothing.

Events go to a real topic through a real producer, the job is the real Structured Streaming query
(local[2]), and its Parquet output is read back the way `report` reads it (committed files only).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from kafka_coop.admin import ClusterAdmin
from kafka_coop.analytics import summarize
from kafka_coop.analytics._figures import PROGRESS_FILE, latest_state, outcome_from_rows, read_pipeline_rows
from kafka_coop.analytics._model import Summary
from kafka_coop.analytics._pipeline import PipelineConfig, run_pipeline
from kafka_coop.analytics._spark import get_session, stop_session
from kafka_coop.analytics._stream import DUPLICATE
from kafka_coop.rollout import Plan
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec, PlanRunner, SteadyProducer
from testbed.interop import member_command
from tests.conftest import CliResult
from tests.integration.topics import read_to_end
from tests.unit.analytics.test_engine import STREAMS, prefixed
from tests.unit.analytics.test_read import BAD_LINES

# One xdist worker runs this module, so each module-scoped Spark set-up (a session, a cluster, a
# member walk: 90-235 s on 2 cores) runs once, not once on every worker its tests landed on.
pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("pipeline")]

MASTER = "local[2]"
KNOWN = [e for name, events in STREAMS.items() for e in prefixed(events, f"{name}/")]
NEWER = json.dumps({**KNOWN[0], "v": 2, "kind": "resized"})  # a newer kafka-coop's event


def produce(bootstrap: str, topic: str, values: Sequence[str | bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0


def now_ms() -> int:
    return int(time.time() * 1000)


def squeezed(events: list[dict[str, Any]], start_ms: int, span_ms: int) -> list[dict[str, Any]]:
    """The same stream with its times scaled into [start_ms, start_ms + span_ms] (order kept)."""
    first = min(int(e["ts_ms"]) for e in events)
    whole = max(int(e["ts_ms"]) for e in events) - first or 1
    return [{**e, "ts_ms": start_ms + (int(e["ts_ms"]) - first) * span_ms // whole} for e in events]


def lines(events: Sequence[dict[str, Any]]) -> list[str]:
    return [json.dumps(e) for e in events]


def summary_of(out: Path) -> Summary:
    return outcome_from_rows(read_pipeline_rows(out)).summary


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield get_session(MASTER, kafka=True)
    stop_session()


def run_until(config: PipelineConfig, spark: Any, done: Callable[[], bool], timeout_s: float = 240.0) -> None:
    """Run the job in this thread until `done()` holds after a committed batch (or the timeout)."""
    stop = threading.Event()
    timer = threading.Timer(timeout_s, stop.set)
    timer.start()
    try:
        run_pipeline(config, stop=stop, on_batch=lambda *_: done() and stop.set(), spark=spark)  # type: ignore[func-returns-value]
    finally:
        timer.cancel()
    assert done(), f"the pipeline did not get there in {timeout_s} s"


@dataclass(frozen=True)
class Known:
    topic: str
    out: Path
    copies: int
    bad: int


@pytest.fixture(scope="module")
def known(tmp_path_factory: pytest.TempPathFactory, bootstrap: str, admin: ClusterAdmin, spark: Any) -> Known:
    """The known-answer streams through the job once: a producer retry sends every fifth event twice,
    refused records sit between good ones, three partitions."""
    topic = f"pipeline-known-{uuid.uuid4().hex[:6]}"
    admin.ensure_topic(topic, 3)
    copies = KNOWN[::5]
    bad = [*BAD_LINES.values(), NEWER]
    produce(bootstrap, topic, [*lines(KNOWN[:10]), *bad, *lines(KNOWN[10:]), *lines(copies)])
    tmp = tmp_path_factory.mktemp("known")
    out = tmp / "out"
    config = PipelineConfig(
        topic=topic,
        out=out,
        checkpoint=tmp / "ckpt",
        bootstrap=bootstrap,
        trigger_s=1.0,
        watermark_ms=1_000,
        idle_ms=2_000,
    )
    run_until(config, spark, lambda: summary_of(out).events == len(KNOWN))
    return Known(topic, out, len(copies), len(bad))


def test_known_answer_streams_give_the_batch_reports_figures_once_each(known: Known) -> None:
    assert summary_of(known.out) == summarize(KNOWN).model_copy(update={"malformed": known.bad})


def test_refused_records_are_dead_letters_with_their_place_and_reason_and_copies_are_dropped(
    known: Known,
) -> None:
    dead = [r for r in read_pipeline_rows(known.out).to_pylist() if r["kind"] == "deadletter"]
    assert [r["reason"] for r in dead].count(DUPLICATE) == known.copies
    refused = [r for r in dead if r["reason"] != DUPLICATE]
    assert len(refused) == known.bad
    assert [r["raw"] for r in refused if r["reason"] == "unsupported version 2"] == [NEWER.encode()]
    assert {r["source"] for r in refused} <= {f"kafka://{known.topic}/{p}" for p in range(3)}
    assert all(r["offset"] is not None and r["reason"] and r["raw"] for r in refused)


def test_report_reads_the_pipelines_output_for_a_group(
    known: Known, tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    """`kafka-coop report OUT --group G` gives the reference engine's figures of that group alone."""
    group = str(next(e["group"] for e in KNOWN if str(e["group"]).startswith("cooperative/")))
    result = run_cli("report", str(known.out), "--group", group, "--out", str(tmp_path / "r"), "-o", "json")
    assert result.code == 0, result.stderr
    expected = summarize([e for e in KNOWN if e["group"] == group])
    assert Summary.model_validate(result.json()) == expected


def start_cli(out: Path, topic: str, bootstrap: str, log: Path, *more: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
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
            MASTER,
            "--trigger",
            "1s",
            "--watermark",
            "1s",
            "--window",
            "2s",  # a window's figures are written once it closes
            *more,
        ],
        stdout=subprocess.DEVNULL,
        stderr=log.open("ab"),
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
    )


def wait_for(
    what: str, done: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 240.0
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if done():
            return
        assert proc.poll() is None, f"the pipeline exited {proc.returncode}: {log.read_text()}"
        time.sleep(0.3)
    raise AssertionError(f"no {what} in {timeout_s} s: {log.read_text()}")


@pytest.fixture(scope="module")
def walked(
    bootstrap: str,
    admin: ClusterAdmin,
    tmp_path_factory: pytest.TempPathFactory,
    run_cli: Callable[..., CliResult],
) -> list[dict[str, Any]]:
    """The events of real `CoopConsumer` members (three, eager `range`) walking the upgrade plan
    `upgrade-plan` prints to cooperative, phase by phase behind its gates, under a steady producer:
    what their `KafkaTopicSink` sends (each member's events file, as a log shipper would send it)."""
    tmp = tmp_path_factory.mktemp("walk")
    group = topic = f"pipeline-walk-{uuid.uuid4().hex[:6]}"
    admin.ensure_topic(topic, 6)
    with MemberProcesses(bootstrap, tmp / "fleet", families=member_command) as processes:
        producer = SteadyProducer(bootstrap, topic, 6, rate=50).start()
        try:
            specs = [
                MemberSpec(name=f"w{i}", kind="python", group=group, topics=(topic,), assignors=("range",))
                for i in range(3)
            ]
            processes.wait_stable(group, joined=processes.add_many(specs))
            printed = run_cli(
                "upgrade-plan", group, "--to", "cooperative", "--bootstrap-server", bootstrap, "-o", "json"
            )
            assert printed.code == 0, printed.stderr
            plan = Plan.model_validate(printed.json())
            runner = PlanRunner(processes, plan)
            for phase in plan.phases:
                runner.run_phase(phase)
        finally:
            producer.stop()
        events = [e for member in processes.members.values() for e in member.events()]
    assert {e["protocol"] for e in events if e["kind"] == "assigned"} == {"eager", "cooperative"}
    return events


def latest_by_key(bootstrap: str, topic: str) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """The figures topic read from the start, the last value of each key (what compaction keeps)."""
    return {
        tuple(json.loads(key)): figure(json.loads(value or b"null"))
        for key, value in read_to_end(bootstrap, topic)
    }


def figure(row: dict[str, Any]) -> tuple[Any, ...]:
    """What a figure says, from a topic record or an output row (the record renames a few columns)."""
    if row["kind"] == "partition":
        return (row["version"], row["owner"], row.get("unowned_since", row.get("since")))
    return (row.get("window_start", row.get("ts")), row["window_end"], row["events"], row["pause_ms"])


def current_state(out: Path) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """The output's current state: each partition's latest state row, each group's latest window."""
    table = read_pipeline_rows(out, kinds=["window", "partition"])
    state = {(r["group"], r["topic"], r["partition"]): figure(r) for r in latest_state(table, "partition")}
    windows = sorted(
        (r for r in table.to_pylist() if r["kind"] == "window"), key=lambda r: (r["window_end"], r["ts"])
    )
    state.update({(r["group"],): figure(r) for r in windows})
    return state


def halves(walked: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Callable[[], list[dict[str, Any]]]]:
    """The walk's events squeezed into 6 s with the first half already past, and a maker of the second
    half stamped from 3 s ahead of when it is called (produced later, it is not late for the groups'
    clocks, which ran on while the job waited)."""
    generated = squeezed(walked, now_ms() - 5_000, 6_000)
    split = sorted(int(e["ts_ms"]) for e in generated)[len(generated) // 2]
    early = [e for e in generated if int(e["ts_ms"]) <= split]
    rest = [e for e in generated if int(e["ts_ms"]) > split]

    def later() -> list[dict[str, Any]]:
        shift = now_ms() + 3_000 - min(int(e["ts_ms"]) for e in rest)
        return [{**e, "ts_ms": int(e["ts_ms"]) + shift} for e in rest]

    return early, later


def resume_until_counted(
    out: Path, topic: str, bootstrap: str, log: Path, figures_topic: str, events: list[dict[str, Any]]
) -> None:
    """The same command again, until the output counts every event; SIGTERM then ends it with exit 0."""
    second = start_cli(out, topic, bootstrap, log, "--figures-topic", figures_topic)
    try:
        wait_for("every event", lambda: summary_of(out).events >= len(events), second, log)
        second.send_signal(signal.SIGTERM)
        assert second.wait(60) == 0, log.read_text()
    finally:
        if second.poll() is None:
            second.kill()


def test_a_job_killed_mid_stream_resumes_from_its_checkpoint_with_nothing_counted_twice_or_lost(
    tmp_path: Path,
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    walked: list[dict[str, Any]],
) -> None:
    """The real CLI in a process of its own over the events of members walking a plan: SIGKILL while a
    second half of the events arrives, the same command again, SIGTERM once everything is in. The
    figures equal the reference engine's over all events (a batch counted twice would double
    callbacks, pauses and spans). Both runs keep the current figures on a compacted topic too
    (`--figures-topic`, made by the first): the last value of each key is the output's current state."""
    topic = topic_factory(3)
    early, second_half = halves(walked)
    out, log = tmp_path / "out", tmp_path / "pipeline.log"
    produce(bootstrap, topic, lines(early))
    figures_topic = f"{topic}-figures"
    first = start_cli(out, topic, bootstrap, log, "--figures-topic", figures_topic)
    try:
        wait_for(
            "first half",
            lambda: (out / PROGRESS_FILE).exists() and summary_of(out).events >= len(early),
            first,
            log,
        )
        # the second half is stamped from 3 s ahead: it waits in the job's state for the watermark
        # when the kill comes, and the restart must still have it (the first half was applied long ago)
        later = second_half()
        produce(bootstrap, topic, lines(later))
        time.sleep(1.5)
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    finally:
        if first.poll() is None:
            first.kill()
    events = early + later
    (tmp_path / "events.jsonl").write_text("".join(f"{line}\n" for line in lines(events)))  # to look into
    resume_until_counted(out, topic, bootstrap, log, figures_topic, events)
    assert summary_of(out) == summarize(events)
    assert latest_by_key(bootstrap, figures_topic) == current_state(out), "the compacted topic's figures"
    assert (admin.topic_config(figures_topic) or {}).get("cleanup.policy") == "compact"
    assert "Traceback" not in log.read_text()


def test_an_existing_figures_topic_without_compaction_is_refused_in_one_sentence(
    tmp_path: Path, bootstrap: str, topic_factory: Callable[[int], str], run_cli: Callable[..., CliResult]
) -> None:
    events, plain = topic_factory(1), topic_factory(1)
    out = tmp_path / "out"
    result = run_cli(
        "pipeline",
        "run",
        f"kafka://{events}",
        "--out",
        str(out),
        "--bootstrap-server",
        bootstrap,
        "--figures-topic",
        plain,
    )
    assert result.code == 2, result.stderr
    assert f"--figures-topic {plain} exists with cleanup.policy=delete" in result.stderr
    assert not out.exists()


def test_a_figures_topic_the_broker_refuses_stops_the_job_with_exit_3_and_a_resumable_checkpoint(
    tmp_path: Path,
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    walked: list[dict[str, Any]],
) -> None:
    """The broker refuses every figure (records larger than the topic's `max.message.bytes`: the
    broker's own MESSAGE_TOO_LARGE, no fault injected in the client): the job stops after the batch
    committed, in one sentence with exit 3. The same command with a topic that takes the figures
    resumes from the checkpoint: nothing counted twice, and its topic holds the output's current state."""
    topic = topic_factory(3)
    early, second_half = halves(walked)
    produce(bootstrap, topic, lines(early))
    refusing, healthy = f"{topic}-refusing", f"{topic}-figures"
    admin.ensure_topic(refusing, 1, config={"cleanup.policy": "compact", "max.message.bytes": "16"})
    out, log = tmp_path / "out", tmp_path / "pipeline.log"
    first = start_cli(out, topic, bootstrap, log, "--figures-topic", refusing)
    try:
        code = first.wait(240)
    finally:
        if first.poll() is None:
            first.kill()
    said = log.read_text()
    assert code == 3, said
    refused = f"Could not write the figures to {refusing} on {bootstrap}: Broker: Message size too large."
    assert refused in said
    assert "run the same command again to resume" in said and "Traceback" not in said
    assert (out / PROGRESS_FILE).exists(), "the batch whose figures were refused had committed"
    later = second_half()  # new events: a restart with nothing new to read may run no batch at all
    produce(bootstrap, topic, lines(later))
    events = early + later
    resume_until_counted(out, topic, bootstrap, log, healthy, events)
    assert summary_of(out) == summarize(events)
    assert latest_by_key(bootstrap, healthy) == current_state(out), "the healthy topic's figures"

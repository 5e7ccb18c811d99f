"""The Spark engine gives the reference engine's summary, from files and from a Kafka topic.

Real local Spark (local[2], one SparkSession for the module) and the sandbox broker. To keep Spark's
per-job overhead down, several independent streams share one run: each stream's members, groups and
topics get their own prefix, so per-member and per-partition figures of the combined summary are the
figures of each stream, and the totals are their sums. Nothing here skips: no Java or no pyspark fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_coop.analytics import (
    PhaseWindow,
    Summary,
    generate_events,
    read_event_lines,
    run_report,
    summarize,
)
from kafka_coop.analytics._spark import get_session, stop_session
from kafka_coop.events import RebalanceEvent
from kafka_coop.sinks import KafkaTopicSink
from tests.conftest import CliResult
from tests.unit.test_analytics_engine import STREAMS
from tests.unit.test_analytics_read import BAD_LINES

MASTER = "local[2]"


@pytest.fixture(scope="module", autouse=True)
def spark() -> Iterator[None]:
    get_session(MASTER, kafka=True)
    yield
    stop_session()


def prefixed(events: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """The same stream with its own members, group and topic, so streams can share a run."""

    def name(value: Any) -> Any:
        return None if value is None else f"{prefix}{value}"

    return [
        {
            **e,
            "group": name(e["group"]),
            "member_id": name(e["member_id"]),
            "instance_id": name(e["instance_id"]),
            "client_id": name(e["client_id"]),
            "partitions": [[name(t), p] for t, p in e["partitions"]],
            "owned": [[name(t), p] for t, p in e["owned"]],
            "committed": None if e["committed"] is None else [[name(t), p, o] for t, p, o in e["committed"]],
        }
        for e in events
    ]


def write(path: Path, events: list[dict[str, Any]], extra: list[str] | None = None) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + "".join(extra or []))
    return path


def spark_report(tmp_path: Path, sources: list[Any], **kwargs: Any) -> Any:
    return run_report(sources, tmp_path / "out", engine="spark", master=MASTER, **kwargs)


def test_hand_written_streams_and_malformed_lines_give_the_reference_summary(tmp_path: Path) -> None:
    streams = {name: prefixed(events, f"{name}/") for name, events in STREAMS.items()}
    (tmp_path / "in").mkdir()
    for name, events in streams.items():
        # the malformed lines sit between good lines of the first file
        extra = list(BAD_LINES.values()) if name == "eager" else []
        write(tmp_path / "in" / f"{name}.jsonl", events, extra)
    phases = [
        PhaseWindow(name="early", start_ms=0, end_ms=1200),
        PhaseWindow(name="late", start_ms=1200, end_ms=20_000),
    ]

    result = spark_report(tmp_path, [tmp_path / "in"], phases=phases)

    events, malformed = read_event_lines([tmp_path / "in"])
    expected = summarize(events, phases).model_copy(update={"malformed": len(BAD_LINES)})
    assert result.summary == expected
    assert [(m.path, m.line) for m in result.malformed] == [(m.path, m.line) for m in malformed]
    for name, stream in streams.items():  # each stream's own figures, as in the unit tests
        alone = summarize(stream)
        assert [m for m in result.summary.members if m.name.startswith(f"{name}/")] == alone.members
        assert [p for p in result.summary.partitions if p.topic.startswith(f"{name}/")] == alone.partitions
    out = tmp_path / "out"
    assert {"summary.json", "unowned.png", "malformed.jsonl", "intervals", "pauses"} <= {
        p.name for p in out.iterdir()
    }
    assert list((out / "intervals").glob("*.parquet")), "intervals are written as Parquet"


def test_generated_random_streams_give_the_reference_summary(tmp_path: Path) -> None:
    """A seeded set of random fleets (every protocol, kills, losses, out-of-order lines) in one run."""
    events: list[dict[str, Any]] = []
    for seed in (11, 12, 13):
        events.extend(generate_events(1500, members=7, partitions=5, seed=seed, prefix=f"r{seed}-"))
    write(tmp_path / "gen.jsonl", events)
    result = spark_report(tmp_path, [tmp_path / "gen.jsonl"])
    assert result.summary == summarize(events)
    assert result.summary.intervals > 100 and result.summary.pauses > 100


def test_a_kafka_topic_gives_the_same_summary_as_the_files(
    tmp_path: Path, bootstrap: str, topic_factory: Callable[[int], str]
) -> None:
    topic = topic_factory(3)
    events = [e for stream in ("eager", "lost", "killed") for e in prefixed(STREAMS[stream], f"{stream}/")]
    sink = KafkaTopicSink(topic, {"bootstrap.servers": bootstrap})
    for event in events:
        sink.emit(RebalanceEvent.model_validate(event))
    sink.close()
    from_topic = spark_report(tmp_path, [f"kafka://{topic}"], bootstrap=bootstrap)
    from_files = run_report([write(tmp_path / "e.jsonl", events)], tmp_path / "files", engine="python")
    assert from_topic.summary == from_files.summary
    assert from_topic.summary.events == len(events)


def test_cli_end_to_end_writes_every_product_and_reports_malformed_lines(
    tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    source = write(tmp_path / "events.jsonl", prefixed(STREAMS["eager"], "x/"), ["{not json\n"])
    result = run_cli(
        "report",
        str(source),
        "--out",
        str(tmp_path / "out"),
        "--engine",
        "spark",
        "--master",
        MASTER,
        "-o",
        "json",
    )
    assert result.code == 0, result.stderr
    summary = Summary.model_validate(result.json())
    assert (summary.events, summary.malformed) == (len(STREAMS["eager"]), 1)
    assert f"{source}:{len(STREAMS['eager']) + 1}: invalid JSON" in result.stderr
    out = tmp_path / "out"
    assert Summary.model_validate_json((out / "summary.json").read_text()) == summary
    assert (out / "unowned.png").read_bytes()[:4] == b"\x89PNG"
    assert list((out / "pauses").glob("*.parquet"))


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["missing.jsonl"], 2, "No such file or directory"),
        (["empty.jsonl"], 2, "hold no valid rebalance events"),
        (["kafka://events", "--bootstrap-server", "127.0.0.1:1"], 3, "Could not reach the Kafka cluster"),
        (["kafka://events"], 2, "need --bootstrap-server"),
    ],
)
def test_cli_errors_are_one_sentence_with_the_right_exit_code(
    tmp_path: Path, run_cli: Callable[..., CliResult], args: list[str], code: int, message: str
) -> None:
    (tmp_path / "empty.jsonl").write_text("\n")
    args = [str(tmp_path / a) if a.endswith(".jsonl") else a for a in args]
    result = run_cli("report", *args, "--out", str(tmp_path / "out"))
    assert result.code == code, result.stderr
    assert message in result.stderr
    assert not (tmp_path / "out").exists(), "a failed run writes nothing"

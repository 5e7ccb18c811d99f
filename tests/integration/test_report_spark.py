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
from pyspark.sql import functions as F

from kafka_coop.analytics import (
    PhaseWindow,
    Summary,
    generate_events,
    read_event_lines,
    run_report,
    summarize,
)
from kafka_coop.analytics._columnar import decode_event
from kafka_coop.analytics._read import validate_line
from kafka_coop.analytics._spark import DECODE, get_session, stop_session
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


GOOD = {
    "v": 1,
    "ts_ms": 1700000000123,
    "seq": 4,
    "group": "g",
    "member_id": "m-1",
    "instance_id": None,
    "client_id": "c",
    "protocol": "cooperative",
    "kind": "assigned",
    "partitions": [["t", 0], ["u", 7]],
    "owned": [["t", 0]],
    "callback_ms": 12.0625,
    "committed": None,
    "error": None,
}
BIG = str(2**63)


def variant(old: str, new: str) -> str:
    line = json.dumps(GOOD)
    assert old in line, old
    return line.replace(old, new, 1)


TRICKY_LINES = [
    json.dumps(GOOD),
    json.dumps({k: v for k, v in GOOD.items() if k not in ("v", "committed", "error")}),
    variant('"v": 1', '"v": true'),
    variant('"v": 1', '"v": 1.0'),
    variant('"v": 1', '"v": 2'),
    variant('"v": 1', '"v": null'),
    variant('"v": 1', '"v": "1"'),
    variant('"ts_ms": 1700000000123', '"ts_ms": "5"'),
    variant('"ts_ms": 1700000000123', '"ts_ms": 5.0'),
    variant('"ts_ms": 1700000000123', '"ts_ms": 5e2'),
    variant('"ts_ms": 1700000000123', f'"ts_ms": {BIG}'),
    variant('"ts_ms": 1700000000123', '"ts_ms": -0'),
    variant('"seq": 4', '"seq": true'),
    variant('"group": "g"', '"group": 5'),
    variant('"group": "g"', '"group": null'),
    variant('"group": "g"', r'"group": "\ud83d\ude00"'),
    variant('"group": "g"', r'"group": "\ud800"'),
    variant('"group"', r'"gr\u006fup"'),
    variant('"instance_id": null', '"instance_id": ""'),
    variant('"instance_id": null', '"instance_id": "pod-3"'),
    variant('"instance_id": null', '"instance_id": 5'),
    variant('"client_id": "c"', '"client_id": ""'),
    variant('"protocol": "cooperative"', '"protocol": "Cooperative"'),
    variant('"kind": "assigned"', '"kind": "exploded"'),
    variant('"partitions": [["t", 0], ["u", 7]]', '"partitions": null'),
    variant('"partitions": [["t", 0], ["u", 7]]', '"partitions": {}'),
    variant('"partitions": [["t", 0], ["u", 7]]', '"partitions": [["t"]]'),
    variant('"partitions": [["t", 0], ["u", 7]]', '"partitions": [["t", 0, 1]]'),
    variant('"partitions": [["t", 0], ["u", 7]]', '"partitions": [[5, 0]]'),
    variant('"partitions": [["t", 0], ["u", 7]]', '"partitions": [["t", "0"]]'),
    variant('"partitions": [["t", 0], ["u", 7]]', '"partitions": [["t", 0.0]]'),
    variant('"partitions": [["t", 0], ["u", 7]]', '"partitions": [["t", true]]'),
    variant('"partitions": [["t", 0], ["u", 7]]', f'"partitions": [["t", {BIG}]]'),
    variant('"partitions": [["t", 0], ["u", 7]]', '"partitions": [["t", 0], ["t", 0]]'),
    variant('"owned": [["t", 0]]', '"owned": [1]'),
    variant('"committed": null', '"committed": [["t", 0]]'),
    variant('"committed": null', '"committed": [["t", 0, "x"]]'),
    variant('"committed": null', '"committed": [["t", 0, 9]]'),
    variant('"callback_ms": 12.0625', '"callback_ms": "1"'),
    variant('"callback_ms": 12.0625', '"callback_ms": -1'),
    variant('"callback_ms": 12.0625', '"callback_ms": 1e13'),
    variant('"callback_ms": 12.0625', '"callback_ms": NaN'),
    variant('"callback_ms": 12.0625', '"callback_ms": Infinity'),
    variant('"callback_ms": 12.0625', '"callback_ms": 3'),
    variant('"callback_ms": 12.0625', '"callback_ms": 0.0005'),
    variant('"error": null', '"error": 5'),
    variant('"error": null', '"error": {"a": 1}'),
    variant('"error": null', '"error": "boom"'),
    variant('"error": null', '"error": null, "colour": "red"'),
    variant('"error": null', '"error": null, "commit_ms": 3.5'),
    variant('"error": null', '"error": null, "commit_ms": null'),
    variant('"error": null', '"error": null, "commit_ms": "3"'),
    variant('"error": null', '"error": null, "commit_ms": -1'),
    variant('"error": null', '"error": null, "commit_ms": NaN'),
    variant('"seq": 4', '"seq": "x", "seq": 4'),
    variant('"seq": 4', '"seq": 4, "seq": "x"'),
    json.dumps(GOOD) + " x",
    json.dumps(GOOD) + json.dumps(GOOD),
    "  " + json.dumps(GOOD) + " \t ",
    json.dumps(GOOD)[:60],
    "[1, 2, 3]",
    "5",
    "null",
    "{}",
    '"text"',
    "",
    "   ",
    "\t",
]


def test_the_decoder_refuses_exactly_the_lines_the_python_reader_refuses() -> None:
    """The JVM decoder and the Python reader (pydantic, strict) agree line by line: same verdict, and
    for an event the same decoded values (member name, partitions, callback microseconds)."""
    spark = get_session(MASTER)
    frame = spark.createDataFrame([(line,) for line in TRICKY_LINES], "value string")
    rows = frame.select(F.call_function(DECODE, F.col("value")).alias("d")).select("d.*").collect()
    for line, row in zip(TRICKY_LINES, rows, strict=True):
        if not line.strip():
            assert row["reason"] == "", line
            continue
        verdict = validate_line(line)
        if isinstance(verdict, str):
            assert row["reason"], f"the decoder took a line the reader refuses ({verdict}): {line}"
        else:
            assert row["reason"] is None, f"the decoder refused a valid line ({row['reason']}): {line}"
            decoded = {k: v for k, v in row.asDict().items() if k != "reason"}
            assert decoded == decode_event(verdict), line


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
        # the broker-free cases run in the unit tier (tests/unit/test_report_cli.py)
        (["kafka://events", "--bootstrap-server", "127.0.0.1:1"], 3, "Could not reach the Kafka cluster"),
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

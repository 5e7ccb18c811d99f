"""The Spark engine gives the reference engine's summary, from files and from a Kafka topic.

Real local Spark (local[2], one SparkSession for the module), the sandbox broker, and a Spark
standalone cluster (a master and two workers on loopback, started from the installed PySpark
distribution) that the real CLI's `report --master spark://HOST:PORT` runs on. To keep Spark's
per-job overhead down, several independent streams share one run: each stream's members, groups and
topics get their own prefix, so per-member and per-partition figures of the combined summary are the
figures of each stream, and the totals are their sums. Nothing here skips: no Java or no pyspark fails.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

from kafka_coop.analytics import (
    Malformed,
    PhaseWindow,
    Summary,
    generate_events,
    read_event_lines,
    run_report,
    summarize,
)
from kafka_coop.analytics._columnar import decode_event
from kafka_coop.analytics._generate import event_line
from kafka_coop.analytics._read import validate_line
from kafka_coop.analytics._report import python_engine
from kafka_coop.analytics._spark import DECODE, DECODED, get_session, spark_engine, stop_session
from kafka_coop.analytics._spark_jars import DECODER_CLASS
from kafka_coop.events import RebalanceEvent
from kafka_coop.sinks import KafkaTopicSink
from tests.conftest import CliResult
from tests.integration.analytics.spark_cluster import StandaloneCluster
from tests.unit.analytics.test_engine import STREAMS, prefixed
from tests.unit.analytics.test_read import BAD_LINES

# One xdist worker runs this module, so each module-scoped Spark set-up (a session, a cluster, a
# member walk: 90-235 s on 2 cores) runs once, not once on every worker its tests landed on.
# (spark: needs the spark extra, PySpark.)
pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("report-spark")]

MASTER = "local[2]"


@pytest.fixture(scope="module", autouse=True)
def spark() -> Iterator[None]:
    get_session(MASTER, kafka=True)
    yield
    stop_session()


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
    variant('"error": null', '"error": null, "process": "host-a:11:aa"'),
    variant('"error": null', '"error": null, "process": null'),
    variant('"error": null', '"error": null, "process": ""'),
    variant('"error": null', '"error": null, "process": 5'),
    variant('"client_id": "c", "protocol"', '"client_id": "", "process": "host-a:11:aa", "protocol"'),
    variant('"instance_id": null', '"instance_id": "pod-3", "process": "host-a:11:aa"'),
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
    "\x1c",  # whitespace to Python's str.strip()
    # lines that are not ASCII: the decoder parses them as text, ASCII lines from their bytes
    variant('"group": "g"', '"group": "grüppe"'),
    variant('"group": "g"', r'"group": "é\ud800"'),
    variant('"client_id": "c"', '"client_id": "客户"'),
    "\u00a0" + json.dumps(GOOD),
    json.dumps(GOOD) + "\u3000",
    "\u00a0\u3000",
]


def compact(line: str) -> str:
    """The line with the separators kafka-coop's writers use (no space), which the decoder's fast path
    takes; the spaced form mostly exercises the same path with whitespace between tokens."""
    return line.replace('", "', '","').replace('": ', '":').replace("], [", "],[").replace(", ", ",")


def test_the_decoder_refuses_exactly_the_lines_the_python_reader_refuses() -> None:
    """The JVM decoder and the Python reader (pydantic, strict) agree line by line: same verdict, and
    for an event the same decoded values (member name, partitions, callback microseconds)."""
    spark = get_session(MASTER)
    lines = TRICKY_LINES + [compact(line) for line in TRICKY_LINES]
    frame = spark.createDataFrame([(line,) for line in lines], "value string")
    utf8 = F.col("value").cast("binary")  # the engine hands the decoder each line's bytes
    rows = frame.select(F.call_function(DECODE, utf8).alias("d")).select("d.*").collect()
    for line, row in zip(lines, rows, strict=True):
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


def writers_lines() -> list[str]:
    """Lines as kafka-coop writes them: the event sinks (pydantic's JSON) and the generator."""
    events = list(generate_events(400, seed=3, members=5, partitions=6))
    lines = [RebalanceEvent.model_validate(e).model_dump_json() for e in events]
    lines += [event_line(e).rstrip("\n") for e in events]
    lines += [
        RebalanceEvent.model_validate(
            {**e, "error": "commit failed: broker down", "commit_ms": 0.5, "instance_id": None}
        ).model_dump_json()
        for e in events[:50]
    ]
    lines += [
        RebalanceEvent.model_validate({**e, "process": "host-a:4711:0f3c9a2e"}).model_dump_json()
        for e in events[:50]
    ]
    return lines


MUTATION_BYTES = '{}[],:" 0123456789.-+eEnulltruefalse\\\tx\u00e9'


def mutations(lines: list[str], count: int, seed: int) -> list[str]:
    """Lines one or two random edits away from a writer's line: mostly invalid, some still valid."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        line = rng.choice(lines)
        for _ in range(rng.choice((1, 1, 2))):
            at = rng.randrange(len(line))
            edit = rng.randrange(4)
            if edit == 0:
                line = line[:at] + line[at + 1 :]
            elif edit == 1:
                line = line[:at] + rng.choice(MUTATION_BYTES) + line[at:]
            elif edit == 2:
                line = line[:at] + rng.choice(MUTATION_BYTES) + line[at + 1 :]
            else:
                line = line[:at] + line[at] + line[at:]
        out.append(line)
    return out


def decoded_by(udf_class: str, lines: list[str]) -> list[Any]:
    spark = get_session(MASTER)
    name = "kc_" + udf_class.rsplit("$", 1)[-1].lower()
    spark.udf.registerJavaFunction(name, f"{DECODER_CLASS}${udf_class}", DECODED)
    frame = spark.createDataFrame([(line,) for line in lines], "value string")
    return [
        row["d"]
        for row in frame.select(F.call_function(name, F.col("value").cast("binary")).alias("d")).collect()
    ]


def test_the_decoders_fast_path_takes_every_line_kafka_coops_writers_write() -> None:
    """The fast path is the decoder's speed (docs/benchmarks.md): a writer's line that fell through to
    the general path would still decode right, only slower, so only this test would notice."""
    lines = writers_lines()
    fast = decoded_by("FastOnly", lines)
    assert [line for line, row in zip(lines, fast, strict=True) if row is None] == []
    assert fast == decoded_by("General", lines)


def test_the_decoders_fast_path_agrees_with_the_general_path_on_every_line_it_takes() -> None:
    """Differential check over mutated lines: the fast path may decline any line, but a line it takes
    must decode exactly as the general (Jackson) path decodes it, and the general path must take it."""
    lines = mutations(writers_lines(), 20_000, seed=18)
    lines += [compact(line) for line in TRICKY_LINES]
    fast = decoded_by("FastOnly", lines)
    general = decoded_by("General", lines)
    taken = [(line, f, g) for line, f, g in zip(lines, fast, general, strict=True) if f is not None]
    assert len(taken) > 1_000, "the mutations should leave many lines valid for the fast path"
    assert [(line, f, g) for line, f, g in taken if f != g] == []
    assert any(f is None and g["reason"] is None for f, g in zip(fast, general, strict=True)), (
        "some valid lines should fall to the general path (exponents, escapes, spaces at the ends)"
    )


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


def test_lines_with_bytes_that_are_not_utf8_read_as_the_python_reader_reads_them(tmp_path: Path) -> None:
    """Undecodable bytes become U+FFFD in both engines (the Python reader's errors="replace"), so a
    group named with one is the same group, and a line of nothing else is refused by both."""
    events = prefixed(STREAMS["eager"], "utf8/")
    text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events)
    raw = text.replace('"utf8/', '"utf8\u00e9/').encode().replace(b"\xc3\xa9/", b"\xff/", 2) + b"\xfe\xff\n"
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "bytes.jsonl").write_bytes(raw)

    result = spark_report(tmp_path, [tmp_path / "in"])

    events_read, malformed = read_event_lines([tmp_path / "in"])
    assert result.summary == summarize(events_read).model_copy(update={"malformed": len(malformed)})
    assert [(m.path, m.line, m.reason) for m in result.malformed] == [
        (m.path, m.line, m.reason) for m in malformed
    ]
    assert any("\ufffd" in str(e["group"]) for e in events_read), "the test holds an undecodable byte"


def test_lines_of_a_newer_event_version_are_refused_as_that_version_by_both_engines(tmp_path: Path) -> None:
    """The `v` rule (`_versions`) holds in the Spark engine too: the JVM decoder trips on the newer
    schema's new kind first, and the reported reason is still the version, as the Python reader says."""
    newer = {**GOOD, "v": 2, "kind": "resized", "extra": [1]}
    (tmp_path / "in").mkdir()
    write(
        tmp_path / "in" / "mixed.jsonl",
        STREAMS["eager"],
        [json.dumps(newer) + "\n", json.dumps({**GOOD, "v": 3.0}) + "\n"],
    )

    result = spark_report(tmp_path, [tmp_path / "in"])

    _, malformed = read_event_lines([tmp_path / "in"])
    assert [m.reason for m in malformed] == ["unsupported version 2", "unsupported version 3"]
    assert [(m.path, m.line, m.reason) for m in result.malformed] == [
        (m.path, m.line, m.reason) for m in malformed
    ]


def test_generated_random_streams_give_the_reference_summary(tmp_path: Path) -> None:
    """A seeded set of random fleets (every protocol, kills, losses, out-of-order lines) in one run."""
    events: list[dict[str, Any]] = []
    for seed in (11, 12, 13):
        events.extend(generate_events(1500, members=7, partitions=5, seed=seed, prefix=f"r{seed}-"))
    write(tmp_path / "gen.jsonl", events)
    result = spark_report(tmp_path, [tmp_path / "gen.jsonl"])
    assert result.summary == summarize(events)
    assert result.summary.intervals > 100 and result.summary.pauses > 100


def test_the_plot_series_are_the_python_engines(tmp_path: Path) -> None:
    """Unowned partitions and paused members over time: the tasks' summed changes, thinned by the
    Python engine's own `levels`, are exactly the Python engine's series."""
    events: list[dict[str, Any]] = []
    for seed in (31, 32):
        events.extend(generate_events(4000, members=9, partitions=8, seed=seed, prefix=f"p{seed}-"))
    source = str(write(tmp_path / "gen.jsonl", events))
    (tmp_path / "out").mkdir()

    spark = spark_engine([source], tmp_path / "out", master=MASTER)
    python = python_engine([source], None, None)

    assert spark.unowned == python.unowned and spark.paused == python.paused
    assert len(python.unowned) > 1000 and len(python.paused) > 100


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
        # the broker-free cases run in the unit tier (tests/unit/cli/test_report.py)
        (["kafka://events", "--bootstrap-server", "127.0.0.1:1"], 3, "Nothing is listening at 127.0.0.1:1"),
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


# --- a Spark standalone cluster ---------------------------------------------------------------------
CLUSTER_BAD = ['{"v": 1, "ts_ms": "soon"}\n', "{not json\n"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"), workers=2) as running:
        yield running


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("events")
    for n, seed in enumerate((21, 22, 23, 24)):
        lines = [
            json.dumps(e) + "\n"
            for e in generate_events(3000, members=6, partitions=6, seed=seed, prefix=f"f{n}-")
        ]
        if n == 1:  # refused lines in the middle of a file: their line numbers must survive the split
            lines[1000:1000] = CLUSTER_BAD
        (root / f"fleet-{n}.jsonl").write_text("".join(lines))
    return root


def cli_report(
    run_cli: Callable[..., CliResult], source: Path, out: Path, *engine: str
) -> tuple[Summary, str]:
    result = run_cli("report", str(source), "--out", str(out), *engine, "-o", "json", timeout=300.0)
    assert result.code == 0, result.stderr
    summary = Summary.model_validate(result.json())
    assert Summary.model_validate_json((out / "summary.json").read_text()) == summary
    return summary, (out / "malformed.jsonl").read_text()


@pytest.fixture(scope="module")
def on_cluster(
    cluster: StandaloneCluster,
    fleet_dir: Path,
    tmp_path_factory: pytest.TempPathFactory,
    run_cli: Callable[..., CliResult],
) -> tuple[Summary, str, Path]:
    """The CLI's report on the cluster (its own driver JVM, executors on the two workers)."""
    out = tmp_path_factory.mktemp("cluster-report") / "out"
    summary, malformed = cli_report(run_cli, fleet_dir, out, "--engine", "spark", "--master", cluster.url)
    return summary, malformed, out


def test_a_standalone_cluster_gives_the_summary_of_local_spark_and_of_the_python_engine(
    on_cluster: tuple[Summary, str, Path], fleet_dir: Path, tmp_path: Path
) -> None:
    summary, malformed, out = on_cluster
    local = spark_report(tmp_path, [fleet_dir])  # this module's local[2] session
    python = run_report([fleet_dir], tmp_path / "python", engine="python")

    assert summary == local.summary == python.summary
    assert [(m.path, m.line) for m in local.malformed] == [(m.path, m.line) for m in python.malformed]
    assert [Malformed.model_validate_json(line) for line in malformed.splitlines()] == python.malformed
    assert summary.malformed == len(CLUSTER_BAD) and summary.events == 4 * 3000
    assert [json.loads(line)["line"] for line in malformed.splitlines()] == [1001, 1002]
    assert list((out / "intervals").glob("*.parquet")), "the executors wrote the Parquet parts"


def test_the_cluster_report_ran_as_an_application_with_an_executor_on_each_worker(
    cluster: StandaloneCluster, on_cluster: tuple[Summary, str, Path]
) -> None:
    status = cluster.status()
    apps = [app["name"] for app in status.get("completedapps", []) + status.get("activeapps", [])]
    assert apps == ["kafka-coop report"]
    assert {p.parent.parent.name for p in cluster.executor_dirs()} == {"worker0", "worker1"}

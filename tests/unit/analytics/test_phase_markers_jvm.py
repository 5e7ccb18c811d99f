"""The JVM step's `PhaseMarkers.java` refuses phase markers and refused event records with exactly the
dead-letter reasons of the Python reference (`_markers.parse_marker`, `_versions.refusal`): one JVM reads
a corpus of records and every record's output is compared with Python's.

Known differences, kept out of the corpus and held to here by their own cases: a `phase` or `phases`
above 2**63-1 (pydantic takes it, the Java marker's long cannot hold it), and `json.loads`'s nesting
limit (about 1000 levels less the caller's Python stack; Java's is 900), so depths 801..999 are left out.
A negative number of exactly 4,300 digits is a number to the newest pydantic, as to Java, but invalid
JSON to the oldest one kafka-coop allows (2.11, the min-versions lane): there such records are left out.
"""

from __future__ import annotations

import base64
import json
import random
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kafka_coop.analytics._markers import parse_marker
from kafka_coop.analytics._versions import refusal
from tests.unit.analytics.jvm_replay import main_classpath

pytestmark = pytest.mark.spark  # javac and PySpark's jars

MAIN = Path(__file__).parent / "java" / "PhaseMarkersMain.java"
REASON = "some reason"
BIG = 2**63

FIELDS: dict[str, Any] = {"ts_ms": 1_700_000_000_000, "group": "g", "migration": "eager-to-cooperative"}
FIELDS |= {"phase": 1, "phases": 2}


def marker(**changes: Any) -> bytes:
    """A valid marker with `changes` (a value of `...` drops the key), json.dumps'd."""
    fields = {k: v for k, v in {**FIELDS, **changes}.items() if v is not ...}
    return json.dumps(fields).encode()


def raw_marker(**changes: bytes) -> bytes:
    """A marker whose values are given as JSON text (for what json.dumps cannot write)."""
    fields = {k: json.dumps(v).encode() for k, v in FIELDS.items()} | changes
    return b"{" + b",".join(b'"' + k.encode() + b'":' + v for k, v in fields.items()) + b"}"


def event(v: bytes) -> bytes:
    return b'{"v":' + v + b',"ts_ms":1,"seq":2,"group":"g","kind":"resized","extra":[1,{"a":null}]}'


def event_with(piece: bytes) -> bytes:
    """An event with v 2 and `piece` (keys and values, each followed by a comma) before its last key."""
    return event(b"2").replace(b'"extra":', piece + b'"extra":')


def nested(depth: int, inner: bytes = b"") -> bytes:
    return b"[" * depth + inner + b"]" * depth


def corpus() -> list[bytes | None]:
    records: list[bytes | None] = [
        marker(),
        marker(v=1),
        b'{"v":1,"ts_ms":0,"group":"","migration":"m","phase":0,"phases":1}',
        marker(group="gr\u00fcppe \u2603 \U0001f600", migration="m\u00e9\u0000\u007f"),
        json.dumps({**FIELDS, "group": "\U0001f600"}, ensure_ascii=False).encode(),
        marker(ts_ms=BIG - 1),
        marker(ts_ms=-BIG),
        marker(ts_ms=BIG),
        marker(ts_ms=-BIG - 1),
        marker(ts_ms=10**30),
        marker(ts_ms=-(10**30)),
        marker(phase=BIG - 1, phases=BIG - 1),
        marker(phase=0, phases=1),
        marker(phase=-1),
        marker(phases=0),
        marker(phase=-BIG - 1),
        marker(phases=-(10**40)),
        marker(migration=""),
        b"{}",
        b"[]",
        b"[1, 2]",
        b"1",
        b"-1.5",
        b'"marker"',
        b"null",
        b"true",
        b"NaN",
        b"",
        b" ",
        b"\n",
        b"{",
        b"}",
        b'{"v":1,}',
        b'{"a" 1}',
        b"{'a': 1}",
        b'{"a":1 "b":2}',
        marker() + b" x",
        marker() + b"{}",
        marker() + b"\n\r\t ",
        b" \t\r\n" + marker(),
        b"\x0b" + marker(),
        marker() + b"\x0c",
        marker() + b"\x00",
        b"\xef\xbb\xbf" + marker(),
        marker().decode().encode("utf-16"),
        marker().decode().encode("utf-16-le"),
        marker().decode().encode("utf-16-be"),
        marker().decode().encode("utf-32"),
        marker().decode().encode("utf-32-le"),
        marker().decode().encode("utf-32-be"),
        event(b"2").decode().encode("utf-16"),
        event(b"2").decode().encode("utf-16-le"),
        event(b"2").decode().encode("utf-16-be"),
        event(b"2").decode().encode("utf-32"),
        event(b"2").decode().encode("utf-32-le"),
        event(b"2").decode().encode("utf-32-be"),
        event(b"2").decode().encode("utf-8-sig"),
        event(b"2").decode().encode("utf-16-le")[:-1],
        event(b"2").decode().encode("utf-32-be")[:-2],
        b"\x00\x00\x00\x7b\x00\x11\x00\x00",
        b'{\x00"\x00v\x00"\x00:\x002\x00,\x00"\x00a\x00"\x00:\x00"\x00\x00\xd8"\x00}\x00',
        b'\x00{\x00"\x00v\x00"\x00:\x003\x00}',
        b"2\x00",
        b"\x002",
        b"{}\x00",
        # strings
        raw_marker(group=b'"\\u0067\\n\\t\\/\\\\\\"\\b\\f\\r"'),
        raw_marker(group=b'"\\ud83d\\ude00"'),
        raw_marker(group=b'"\\uD83D\\uDE00"'),
        raw_marker(group=b'"\\ud800"'),
        raw_marker(group=b'"\\udc00"'),
        raw_marker(group=b'"\\ud800\\u0041"'),
        raw_marker(group=b'"\\ud800\\ud800"'),
        raw_marker(group=b'"\\ud800x"'),
        raw_marker(group=b'"\\udc00\\ud800"'),
        raw_marker(group=b'"\\u12"'),
        raw_marker(group=b'"\\u12g4"'),
        raw_marker(group=b'"\\x41"'),
        raw_marker(group=b'"\\U0041"'),
        raw_marker(group=b'"\\'),
        raw_marker(group=b'"a\x01"'),
        raw_marker(group=b'"a\t"'),
        raw_marker(group=b'"a\x7f"'),
        raw_marker(group=b'"\xff"'),
        raw_marker(group=b'"\xc3"'),
        raw_marker(group=b'"\xc0\x80"'),
        raw_marker(group=b'"\xe0\x80\x80"'),
        raw_marker(group=b'"\xed\xa0\x80"'),
        raw_marker(group=b'"\xed\x9f\xbf"'),
        raw_marker(group=b'"\xf4\x8f\xbf\xbf"'),
        raw_marker(group=b'"\xf4\x90\x80\x80"'),
        raw_marker(group=b'"\xf5\x80\x80\x80"'),
        raw_marker(group=b'"\xf0\x9f\x98\x80"'),
        raw_marker(migration=b'"\\u0000"'),
        raw_marker(x=b'"\\ud800"'),
        raw_marker(x=b'["\\udc00"]'),
        raw_marker(x=b'"\xed\xa0\x80"'),
        raw_marker(**{"\\ud800": b"1"}),
        raw_marker(**{"\\u0076": b"2"}),
        raw_marker(**{"\\u0076": b"1"}),
        raw_marker(**{"gr\\u006fup": b"1"}),
        event(b"2").replace(b'"extra":', b'"\\ud800":'),  # as the key
        event_with(b'"x":"\\ud800",'),
        event_with(b'"x":"\\ud83d\\ude00\\udc00\\ud800\\u0041",'),
        event_with(b'"x":1e400,"y":NaN,"z":-Infinity,'),
        event_with(b'"x":' + b"9" * 4300 + b","),
        event_with(b'"x":"\xc3\xa9\xf0\x9f\x98\x80\x7f",'),
        event_with(b'"x":"\\udc00",'),
        event_with(b'"x":"\xed\xa0\x80",'),
        event_with(b'"x":"\xed\xa0",'),
        event_with(b'"x":"\xff",'),
        event_with(b'"x":"\x1f",'),
        event_with(b'"x":"\\q",'),
        # extra keys, duplicate keys, order of errors
        marker(x=1),
        raw_marker(x=b"1", y=b"2"),
        b'{"x":1,' + marker()[1:],
        b'{"z":1,"y":2,' + marker()[1:-1] + b',"x":3}',
        b'{"":1,' + marker()[1:],
        marker()[:-1] + b',"":[]}',
        b'{"a.b":1,' + marker()[1:],
        b'{"x":1}',
        b'{"x":1,"ts_ms":"a"}',
        b'{"group":3,"x":1}',
        b'{"ts_ms":1,"ts_ms":"a"}',
        raw_marker(phase=b'-1,"phase":0'),
        raw_marker(phase=b'0,"phase":-1'),
        raw_marker(migration=b'"m","migration":""'),
        raw_marker(v=b'2,"v":1'),
        raw_marker(v=b'1,"v":2'),
        event(b'2,"v":1'),
        event(b'1,"v":3'),
        raw_marker(x=b"1", v=b"2"),
        # numbers
        raw_marker(phase=b"-0"),
        raw_marker(phases=b"-0"),
        raw_marker(ts_ms=b"-0"),
        raw_marker(x=b"01"),
        raw_marker(x=b"-01"),
        raw_marker(x=b"1."),
        raw_marker(x=b".5"),
        raw_marker(x=b"-"),
        raw_marker(x=b"+1"),
        raw_marker(x=b"1e"),
        raw_marker(x=b"1e+"),
        raw_marker(x=b"1.e5"),
        raw_marker(x=b"1E5"),
        raw_marker(x=b"1e+5"),
        raw_marker(x=b"1.5E-3"),
        raw_marker(x=b"0x1"),
        raw_marker(x=b"1_0"),
        raw_marker(x=b"- 1"),
        raw_marker(x=b"NaN"),
        raw_marker(x=b"-NaN"),
        raw_marker(x=b"Infinity"),
        raw_marker(x=b"-Infinity"),
        raw_marker(x=b"+Infinity"),
        raw_marker(x=b"Infinit"),
        raw_marker(x=b"inf"),
        raw_marker(x=b"INF"),
        raw_marker(x=b"-INF"),
        raw_marker(x=b"nan"),
        raw_marker(x=b"True"),
        raw_marker(x=b"nul"),
        raw_marker(x=b"9" * 4300),
        raw_marker(x=b"9" * 4301),
        raw_marker(x=b"-" + b"9" * 4300),
        raw_marker(x=b"-" + b"9" * 4301),
        raw_marker(x=b"9" * 4300 + b".5"),
        raw_marker(x=b"9" * 4301 + b".5"),
        raw_marker(x=b"9" * 4301 + b"e5"),
        raw_marker(x=b"0." + b"9" * 5000),
        raw_marker(x=b"1e" + b"9" * 5000),
        raw_marker(phase=b"9" * 4300),
        raw_marker(phase=b"-" + b"9" * 4300),
        raw_marker(ts_ms=b"9" * 4300),
        event(b"9" * 4300),
        event(b"9" * 4301),
        event(b"1" + b"0" * 4300),
        event_with(b'"x":' + b"9" * 4301 + b","),
        event_with(b'"x":' + b"9" * 4301 + b".5,"),
        # nesting
        nested(199),
        nested(200),
        nested(201),
        nested(202),
        nested(201, b"1"),
        nested(200, b"1"),
        b'{"a":' * 200 + b"1" + b"}" * 200,
        b'{"a":' * 201 + b"1" + b"}" * 201,
        b'{"a":' * 200 + b"{}" + b"}" * 200,
        raw_marker(x=nested(199)),
        raw_marker(x=nested(200)),
        raw_marker(x=nested(201)),
        raw_marker(x=nested(199, b"1")),
        raw_marker(x=nested(200, b"1")),
        raw_marker(x=nested(100000)),
        raw_marker(x=b"[" * 100000),
        event(nested(500, b"2")),
        event(b'2,"x":' + nested(500)),
        event(b'2,"x":' + nested(800)),
        event(b'2,"x":' + nested(1000)),
        event(b'2,"x":' + nested(5000)),
        event(b'2,"x":' + b'{"a":' * 700 + b"1" + b"}" * 700),
        event(b'2,"x":' + b'{"a":' * 1000 + b"1" + b"}" * 1000),
        # size
        event_with(b'"pad":"' + b"x" * (64 * 1024 - 110) + b'",'),
        None,
    ]
    pad = 64 * 1024 - len(event(b"2")) - len(b'"pad":"",')
    records += [event_with(b'"pad":"' + b"x" * (pad + d) + b'",') for d in (-1, 0, 1)]
    for field in ("v", "ts_ms", "group", "migration", "phase", "phases"):
        values = [
            b"null", b'"1"', b'""', b'"x"', b"1.0", b"1.5", b"true", b"false", b"[]", b"[1]", b"{}",
            b'{"a":1}', b"0", b"1", b"2", b"-1", b"1e0", b"0.1e1", b"10e-1", b"1.0000000000000001",
            b"1e400", b"-1e400", b"NaN", b"Infinity", b"-Infinity", b"2.0", b"-0.0",
            str(BIG - 1).encode(), str(BIG).encode(), str(-BIG).encode(), str(-BIG - 1).encode(),
            str(10**30).encode(), str(-(10**30)).encode(), str(2**64).encode(),
        ]  # fmt: skip
        records += [raw_marker(**{field: value}) for value in values]
        records.append(marker(**{field: ...}))
        records.append(marker(**{field: ..., "x": 1}))
    for v in [
        b"2", b"2.0", b"3", b"1e400", b"-1e400", b"true", b"false", b'"2"', b"-1", b"0", b"1", b"1.0",
        b"2.5", b"NaN", b"Infinity", b"-Infinity", b"1e300", b"1e308", b"1.7976931348623157e308",
        b"2e0", b"0.2e1", b"20e-1", b"9007199254740993", b"9007199254740993.0", b"1e22", b"1e23",
        str(10**30).encode(), str(-(10**30)).encode(), str(BIG).encode(), b"null", b"[2]", b'{"v":2}',
        b"-0", b"-0.0", b"2.000000000000001", b"1.9999999999999999",
    ]:  # fmt: skip
        records += [event(v), b'{"v":' + v + b"}", raw_marker(v=v), b'{"x":{"v":' + v + b'},"v":1}']
    records += [b"[" + event(b"2") + b"]", b'{"a":' + event(b"2") + b"}", b'"' + event(b"2") + b'"']
    records += [event(b"2")[:k] for k in range(0, len(event(b"2")), 7)]
    return records + mutations(random.Random(20240611), 600)


TOKENS = [
    b'"', b"{", b"}", b"[", b"]", b",", b":", b"\\", b"\\u", b"\\ud800", b"-", b"0", b"1", b"2", b".", b"e",
    b" ", b"\n", b"\t", b"\x00", b"\x1f", b"\x7f", b"\xff", b"\xc3\xa9", b"\xed\xa0\x80", b"null", b"true",
    b"NaN", b"Infinity", b"1e400", b"2.0", b"9223372036854775808", b'"v":2,', b'"x":1,', b'"phase":-1,',
    b'"":0,', b'"ts_ms":"1",', b"\xef\xbb\xbf",
]  # fmt: skip


def mutations(rng: random.Random, count: int) -> list[bytes]:
    seeds = [marker(), marker(v=1), event(b"2"), event(b"2.0"), raw_marker(v=b"2", x=b'[1,{"a":"b"}]')]
    out = []
    for _ in range(count):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(data) + 1)
            piece = rng.choice(TOKENS) if rng.random() < 0.6 else bytes([rng.randrange(256)])
            edit = rng.randrange(3)
            if edit == 0:
                data[at:at] = piece
            elif edit == 1:
                del data[at : at + rng.randint(1, 4)]
            else:
                data[at : at + len(piece)] = piece
        out.append(bytes(data))
    return out


def expected(raw: bytes | None) -> dict[str, Any]:
    found = parse_marker(raw if raw is not None else b"")
    parse: Any = found if isinstance(found, str) else found.model_dump(exclude={"v"})
    return {"parse": parse, "refusal": refusal(REASON, raw)}


def run_java(records: list[bytes | None]) -> list[dict[str, Any]]:
    """Every record through one JVM running the library's own jar (what the pipeline ships)."""
    lines = ["-" if raw is None else base64.b64encode(raw).decode() for raw in records]
    proc = subprocess.run(
        ["java", "-cp", main_classpath(MAIN, "PhaseMarkersMain"), "kafkacoop.PhaseMarkersMain"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return [json.loads(line) for line in proc.stdout.splitlines()]


def known_difference(want: dict[str, Any]) -> str | None:
    """Java's reason where it knowingly differs from Python: a phase beyond int64, which pydantic takes
    (its int is unbounded) and the Java marker's long cannot hold, refused with pydantic's wording of an
    int64 bound."""
    parse = want["parse"]
    if isinstance(parse, str):
        return None
    field = next((f for f in ("phase", "phases") if parse[f] >= BIG), None)
    return None if field is None else f"marker {field}: Input should be less than or equal to {BIG - 1}"


LONGEST_NEGATIVE = re.compile(rb"-[0-9]{4300}(?![0-9])")
# whether this pydantic takes a negative number of 4,300 digits, as the newest one (and Java) do
TAKES_LONGEST_NEGATIVES = parse_marker(b'{"x": -' + b"9" * 4300 + b"}") != "marker: invalid JSON"


@pytest.fixture(scope="module")
def checked() -> tuple[int, list[Any], int]:
    """(records, the records whose output differs, the known differences met)."""
    records: list[bytes | None] = list(corpus())
    outputs = run_java(records)
    assert len(outputs) == len(records)
    differing, known = [], 0
    for raw, got in zip(records, outputs, strict=True):
        if not TAKES_LONGEST_NEGATIVES and raw is not None and LONGEST_NEGATIVE.search(raw):
            continue
        want = expected(raw)
        reason = known_difference(want)
        if reason is not None:
            known += 1
            want = {**want, "parse": reason}
        if got != want:
            differing.append((raw if raw is None else raw[:200], got, want))
    return len(records), differing, known


def test_the_corpus_covers_enough_records(checked: tuple[int, list[Any], int]) -> None:
    assert checked[0] >= 300


def test_java_gives_every_record_the_python_reasons(checked: tuple[int, list[Any], int]) -> None:
    _, differing, _ = checked
    assert not differing, f"{len(differing)} records differ, e.g. {differing[:5]}"


def test_a_phase_beyond_int64_is_the_one_known_difference(checked: tuple[int, list[Any], int]) -> None:
    assert checked[2] >= 5  # held to its documented reason above

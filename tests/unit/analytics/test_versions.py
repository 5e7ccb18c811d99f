"""The live pipeline's rule for events of another `v`: v 1 is read; a newer whole-number `v` is a dead
letter `unsupported version N` whatever else the decoder tripped on; anything else keeps the decoder's
reason (there is no older version to upgrade: v 1 is the first)."""

from __future__ import annotations

import json

import pytest

from kafka_coop.analytics._figures import outcome_from_rows, rows_table
from kafka_coop.analytics._versions import refusal
from tests.unit.analytics.stream_feed import Feed, raw_rows
from tests.unit.analytics.test_engine import ev


def record(**fields: object) -> bytes:
    return json.dumps({**ev("a", 9, 9, "started"), **fields}).encode()


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (record(v=2), "unsupported version 2"),
        (record(v=7, kind="resized", extra=[1]), "unsupported version 7"),  # newer schema, new kinds
        (record(v=3.0), "unsupported version 3"),
        (bytearray(record(v=2)), "unsupported version 2"),
    ],
)
def test_a_newer_version_is_refused_as_unsupported(raw: bytes, reason: str) -> None:
    assert refusal("v: Input should be 1", raw) == reason


@pytest.mark.parametrize(
    "raw",
    [record(v=0), record(v=-1), record(v=True), record(v="2"), record(v=2.5), b"[2]", b"{not json", None],
)
def test_anything_else_keeps_the_decoders_reason(raw: bytes | None) -> None:
    assert refusal("v: Input should be 1", raw) == "v: Input should be 1"


def test_the_step_files_a_newer_version_in_the_dead_letters_and_counts_it_as_malformed() -> None:
    feed = Feed()
    rows = raw_rows([record(v=2), record(v=0)], marker=False, reason="v: Input should be 1", kts=7)
    feed.batch(10_000, {None: rows})
    dead = [(r["offset"], r["reason"]) for r in feed.rows if r["kind"] == "deadletter"]
    assert dead == [(0, "unsupported version 2"), (1, "v: Input should be 1")]
    assert outcome_from_rows(rows_table(feed.rows)).summary.malformed == 2

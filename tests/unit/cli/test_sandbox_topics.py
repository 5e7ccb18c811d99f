"""`sandbox start --topic NAME[:PARTITIONS]`: a topic Kafka would refuse is bad input (exit 2, one
sentence), told before anything starts, never as an unreachable cluster after the broker is up."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafka_coop.cli.sandbox import TopicArg
from tests.conftest import CliResult


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port held by this test: a start that got past the topic check fails on it, running nothing."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def _start(invoke_cli: Callable[..., CliResult], tmp_path: Path, port: int, topic: str) -> CliResult:
    return invoke_cli(
        "sandbox", "start", "--dir", str(tmp_path / "sb"), "--port", str(port), "--topic", topic
    )


@pytest.mark.parametrize(
    ("topic", "says"),
    [
        ("my orders:3", "'my orders'"),
        ("orders/eu", "a-z, A-Z, 0-9"),
        (".", "'.' and '..'"),
        ("..:2", "'.' and '..'"),
        ("x" * 250, "at most 249"),
        ("orders:0", "at least 1"),
        ("orders:-1", "at least 1"),
        ("orders:two", "whole number"),
        (":3", "no topic name"),
    ],
    ids=["space", "slash", "dot", "dot-dot", "too-long", "zero-partitions", "negative", "words", "no-name"],
)
def test_a_topic_kafka_would_refuse_is_exit_2_before_anything_starts(
    invoke_cli: Callable[..., CliResult], tmp_path: Path, busy_port: int, topic: str, says: str
) -> None:
    result = _start(invoke_cli, tmp_path, busy_port, topic)
    assert result.code == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and says in errors[0], result.stderr
    assert "reach" not in result.stderr
    assert not (tmp_path / "sb").exists(), "nothing was started or written"


@pytest.mark.parametrize(
    ("topic", "parsed"),
    [("Orders_v2.eu-1:3", ("Orders_v2.eu-1", 3)), ("x" * 249, ("x" * 249, 1)), ("..a", ("..a", 1))],
    ids=["every-kind-of-character", "249-characters", "dots-and-more"],
)
def test_a_topic_kafka_accepts_is_taken_with_its_partition_count(topic: str, parsed: tuple[str, int]) -> None:
    assert TopicArg().convert(topic, None, None) == parsed

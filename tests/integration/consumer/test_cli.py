"""`kafka-coop consume` when the cluster is not there, or the settings cannot work."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from kafka_coop.sandbox import free_port
from tests.conftest import CliResult

SENTENCE = "cannot be reached"


def test_consume_against_a_refusing_cluster_says_so_once_in_one_sentence_and_keeps_retrying() -> None:
    port = free_port()  # nothing listens there: every connection is refused
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kafka_coop.cli",
            "consume",
            "g",
            "t",
            "--bootstrap-server",
            f"127.0.0.1:{port}",
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
    )
    lines: list[str] = []
    seen = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if SENTENCE in line:
                seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert seen.wait(60), "".join(lines)
        time.sleep(3.0)  # librdkafka keeps retrying meanwhile; nothing more may be printed about it
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
        reader.join(10)
    text = "".join(lines)
    assert code == 0, text
    [sentence] = [line for line in lines if SENTENCE in line]
    assert sentence.startswith(f"The Kafka cluster at 127.0.0.1:{port} {SENTENCE} (")
    assert sentence.rstrip().endswith("the consumer keeps retrying.")
    assert "%3|" not in text and "FAIL" not in text and "Traceback" not in text, text


def test_consume_with_a_poll_interval_below_the_session_timeout_exits_2_naming_both_keys(
    run_cli: Callable[..., CliResult],
) -> None:
    result = run_cli(
        "consume", "g", "t", "--bootstrap-server", "127.0.0.1:1", "--conf", "max.poll.interval.ms=1000"
    )
    assert result.code == 2
    assert "max.poll.interval.ms=1000 is shorter than session.timeout.ms=45000" in result.stderr

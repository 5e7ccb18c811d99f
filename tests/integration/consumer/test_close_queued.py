"""`close()` of a member whose assignment is queued and not yet served returns (librdkafka issue 4041).

The client's close terminates the group handler first; a classic member's terminate made the queued
assign stale, the close then served it, and confluent-kafka's callback waited for good on the
terminated handler while holding the GIL (seen in CI, reproduced on the sandbox: 3 hangs in 192
runs). kafka-coop now serves every queued rebalance before the client closes. The hang is a race: at
03fabe2 the cooperative static case hung in 1 of 3 runs, the others in none. Each case runs in its own
process: a hang would stop pytest's own timeout too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

CLOSE_WITHIN_S = 90.0  # joining and the broker's report included; a hung close never returns
ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("rebalance", "membership"),
    [
        ("eager-range", "dynamic"),
        ("eager-range", "static"),
        ("cooperative-sticky", "static"),
        ("consumer", "dynamic"),
    ],
)
def test_close_with_the_assignment_queued_and_never_polled_returns(
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    rebalance: str,
    membership: str,
) -> None:
    topic = topic_factory(2)
    group = unique(f"close-queued-{rebalance}-{membership}")
    argv = [bootstrap, group, topic, rebalance, membership]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "testbed.unpolled_member", *argv],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=CLOSE_WITHIN_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"close() did not return within {CLOSE_WITHIN_S:g} s (librdkafka issue 4041)")
    assert done.returncode == 0, done.stderr[-2000:]
    kinds = json.loads(done.stdout.strip().splitlines()[-1])
    assert kinds[0] == "started" and kinds[-1] == "closed", kinds

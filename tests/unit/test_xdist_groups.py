"""`make test` runs on pytest-xdist workers with `--dist loadgroup`, and the suite's expensive module and
session set-ups (Spark clusters, the SASL sandbox, Kafka 3.x brokers, the wheel's venvs) are shared only
because their tests are in one `xdist_group`. A pytest/xdist pair that ignores the mark still passes
every test, just slower: pytest 9.2 with xdist 3.8 did, and each worker ran every group's set-ups again
(about ten minutes of a CI run). This runs a two-module project on the pinned pair and says so."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

GROUPED = """
import os, time
import pytest

pytestmark = pytest.mark.xdist_group("together")

@pytest.fixture(scope="module")
def started() -> int:
    return os.getpid()

def test_one(started): time.sleep(0.2); print("PID", os.getpid())
def test_two(started): time.sleep(0.2); print("PID", os.getpid())
def test_three(started): time.sleep(0.2); print("PID", os.getpid())
"""

LOOSE = """
import time

def test_a(): time.sleep(0.2)
def test_b(): time.sleep(0.2)
def test_c(): time.sleep(0.2)
"""


def test_the_tests_of_one_xdist_group_run_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "test_loose.py").write_text(LOOSE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "3", "--dist", "loadgroup", "-rA"],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    workers = set(re.findall(r"^PID (\d+)$", proc.stdout, re.M))
    assert len(re.findall(r"^PID ", proc.stdout, re.M)) == 3, proc.stdout[-3000:]
    assert len(workers) == 1, (
        "the three tests of one xdist_group ran on different workers: this pytest and pytest-xdist do "
        "not honour --dist loadgroup together; pin a pair that does (constraints.txt)"
    )

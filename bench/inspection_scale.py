"""Inspection at scale: describe and verify-group on a 200-member group (Java members, many per JVM).

Target (issue 5 / 8): each finishes in < 2 s wall. Timed end to end through the real CLI in a
subprocess (interpreter start included, as a pipeline would see it), median of repeats, plus the
in-process snapshot time as the baseline the CLI adds to.
Run: `.venv/bin/python -m bench.inspection_scale` -> bench/results/inspection-scale.json
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kafka_coop.admin import ClusterAdmin
from kafka_coop.inspect import take_snapshot
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC, MANIFEST_TOPIC_CONFIG
from kafka_coop.sandbox import Fleet, MemberSpec, Sandbox, free_port

MEMBERS = 200
JVMS = 4
REPEATS = 5
TARGET_S = 2.0
OUT = Path(__file__).resolve().parent / "results" / "inspection-scale.json"


def _cli(*args: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "kafka_coop.cli", *args], capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise RuntimeError(proc.stderr)
    return elapsed


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, Sandbox(dir=Path(tmp) / "k", port=free_port()) as kafka:
        admin = ClusterAdmin(kafka.bootstrap)
        admin.ensure_topic("scale", MEMBERS)
        admin.ensure_topic(DEFAULT_MANIFEST_TOPIC, 1, config=MANIFEST_TOPIC_CONFIG)
        with Fleet(kafka.bootstrap, Path(tmp) / "fleet") as fleet:
            fleet.add_many(
                MemberSpec(
                    name=f"jvm{j}",
                    kind="java",
                    group="big",
                    topics=("scale",),
                    assignors=("cooperative-sticky",),
                    members=MEMBERS // JVMS,
                    properties={"session.timeout.ms": "45000"},
                )
                for j in range(JVMS)
            )
            t0 = time.monotonic()
            fleet.wait_stable("big", members=MEMBERS, timeout_s=300)
            settle_s = time.monotonic() - t0
            snap = take_snapshot(admin, "big")
            in_process = []
            for _ in range(REPEATS):
                start = time.perf_counter()
                take_snapshot(admin, "big")
                in_process.append(time.perf_counter() - start)
            common = ["--bootstrap-server", kafka.bootstrap]
            describe = [_cli("describe", "big", *common, "-o", "json") for _ in range(REPEATS)]
            verify = [
                _cli("verify-group", "big", *common, "--lag-window", "0", "-o", "json")
                for _ in range(REPEATS)
            ]
            verify_default = [_cli("verify-group", "big", *common, "-o", "json") for _ in range(REPEATS)]
    result: dict[str, Any] = {
        "name": "inspection-scale",
        "machine": {"cores": os.cpu_count()},
        "parameters": {"members": MEMBERS, "jvms": JVMS, "repeats": REPEATS, "target_s": TARGET_S},
        "observed": {
            "members_seen": snap.member_count,
            "declared": sum(m.manifest is not None for m in snap.members),
            "settle_s": round(settle_s, 1),
        },
        "samples_s": {
            "snapshot_in_process": in_process,
            "describe_cli": describe,
            "verify_cli_lag_window_0": verify,
            "verify_cli_default_lag_window_1s": verify_default,
        },
        "figures": {
            "describe_median_s": statistics.median(describe),
            "verify_median_s": statistics.median(verify),
            "verify_default_median_s": statistics.median(verify_default),
            "snapshot_median_s": statistics.median(in_process),
        },
    }
    result["figures"]["describe_pass"] = result["figures"]["describe_median_s"] < TARGET_S
    result["figures"]["verify_pass"] = result["figures"]["verify_median_s"] < TARGET_S
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["figures"], indent=2), json.dumps(result["observed"]))


if __name__ == "__main__":
    main()

"""`make soak`: generated programs on a sandbox broker of its own for SOAK_MINUTES (default 10), each
failure shrunk and printed as a literal for regressions.py; ends with the programs tried and the rate.

    SOAK_MINUTES=30 SOAK_SEED=1000 make soak
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from kafka_coop.admin import ClusterAdmin
from kafka_coop.sandbox import Sandbox, free_port
from tests.differential.program import generate
from tests.differential.runner import run_program, shrink


def main() -> int:
    minutes = float(os.environ.get("SOAK_MINUTES", "10"))
    seed = int(os.environ.get("SOAK_SEED", str(int(time.time()) % 100_000)))
    attempts = int(os.environ.get("SOAK_SHRINK", "30"))  # runs each failure may spend on shrinking
    box = Sandbox(
        dir=Path(tempfile.mkdtemp(prefix="soak-kafka-")),
        port=free_port(),
        config={"group.consumer.min.session.timeout.ms": "6000"},
    )
    box.start()
    tried = failed = 0
    refused: Counter[str] = Counter()  # errors the steps caught (commits the group refused), by kind
    started = time.monotonic()
    try:
        admin = ClusterAdmin(box.bootstrap)
        while time.monotonic() - started < minutes * 60:
            program = generate(seed)
            verdict = run_program(program, box.bootstrap, admin)
            tried += 1
            status = "FAIL" if verdict.violations else "ok"
            print(f"[{tried}] seed {seed} {status} {verdict.seconds:.1f}s {program!r}", flush=True)
            refused.update(verdict.errors)
            for error in verdict.errors:
                print(f"    step error: {error}", flush=True)
            if verdict.violations:
                failed += 1
                for v in verdict.violations:
                    print(f"    {v}", flush=True)
                if attempts:
                    small = shrink(verdict, lambda p: run_program(p, box.bootstrap, admin), attempts=attempts)
                    print(f"    shrunk: {small.program!r}", flush=True)
                    for v in small.violations:
                        print(f"      {v}", flush=True)
            seed += 1
    finally:
        box.stop()
    elapsed = (time.monotonic() - started) / 60
    print(
        f"soak: {tried} programs in {elapsed:.1f} min ({tried / elapsed:.1f} programs/min, shrinking "
        f"included), {failed} failed"
    )
    for error, count in refused.most_common():
        print(f"  step error {error}: {count}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

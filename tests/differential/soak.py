"""`make soak`: generated programs on a sandbox broker of its own for SOAK_MINUTES (default 10), each
failure shrunk and printed as a literal for regressions.py; ends with the programs tried, how many
passed on each client, and the rate. The generator's third stream (commits under network faults,
through a toxiproxy of the soak's own) is on unless SOAK_NETWORK=0.

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
from testbed.faults import NetworkFaults, Toxiproxy
from tests.differential.program import Program, generate
from tests.differential.runner import Verdict, run_program, shrink


def main() -> int:
    minutes = float(os.environ.get("SOAK_MINUTES", "10"))
    seed = int(os.environ.get("SOAK_SEED", str(int(time.time()) % 100_000)))
    attempts = int(os.environ.get("SOAK_SHRINK", "30"))  # runs each failure may spend on shrinking
    network = os.environ.get("SOAK_NETWORK", "1") != "0"
    workdir = Path(tempfile.mkdtemp(prefix="soak-kafka-"))
    box = Sandbox(
        dir=workdir / "kafka",
        port=free_port(),
        proxied=True,
        config={"group.consumer.min.session.timeout.ms": "6000"},
    )
    box.start()
    proxy = Toxiproxy(workdir / "toxiproxy")
    tried = failed = confluent_failed = networked = 0
    refused: Counter[str] = Counter()  # errors the steps caught (commits the group refused), by kind
    started = time.monotonic()
    try:
        proxy.start()
        faults = NetworkFaults(box, proxy)
        admin = ClusterAdmin(box.bootstrap)

        def run(program: Program) -> Verdict:
            return run_program(program, box.bootstrap, admin, faults)

        while time.monotonic() - started < minutes * 60:
            program = generate(seed, network=network)
            verdict = run(program)
            tried += 1
            networked += program.network
            confluent_failed += bool(verdict.confluent_violations)
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
                    small = shrink(verdict, run, attempts=attempts)
                    print(f"    shrunk: {small.program!r}", flush=True)
                    for v in small.violations:
                        print(f"      {v}", flush=True)
            for v in verdict.confluent_violations:
                print(f"    confluent: {v}", flush=True)
            seed += 1
    finally:
        proxy.stop()
        box.stop()
    elapsed = (time.monotonic() - started) / 60
    print(
        f"soak: {tried} programs ({networked} with network faults) in {elapsed:.1f} min "
        f"({tried / elapsed:.1f} programs/min, shrinking included); passed: kafka-coop {tried - failed}, "
        f"confluent-kafka (its own ledger) {tried - confluent_failed}"
    )
    for error, count in refused.most_common():
        print(f"  step error {error}: {count}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

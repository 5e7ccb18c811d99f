"""One `ClusterAdmin` kept alive across an outage, driven by test_coordinator_back.py over stdin/stdout.

Run as its own process because what it guards against is librdkafka aborting the process.
argv: bootstrap group call (describe | describe-all | offsets)
"""

from __future__ import annotations

import sys
import time

from kafka_coop.admin import ClusterAdmin
from kafka_coop.errors import ClusterUnavailable


def _ask(admin: ClusterAdmin, group: str, call: str, timeout_s: float) -> str:
    if call == "describe":
        return admin.describe_group(group, timeout_s=timeout_s).state
    if call == "describe-all":
        return admin.describe_groups([group], timeout_s=timeout_s)[group].state
    return f"{len(admin.offsets(group, timeout_s=timeout_s))} partitions"


def main() -> None:
    bootstrap, group, call = sys.argv[1:4]
    admin = ClusterAdmin(bootstrap)
    print("answered", _ask(admin, group, call, 10.0), flush=True)
    sys.stdin.readline()  # the cluster is gone now
    try:
        print("answered", _ask(admin, group, call, 2.0), flush=True)
    except ClusterUnavailable as exc:
        print("unavailable", str(exc).splitlines()[0], flush=True)
    sys.stdin.readline()  # the cluster is back: this client lives on while it reconnects
    time.sleep(6.0)
    print("answered", _ask(admin, group, call, 10.0), flush=True)


if __name__ == "__main__":
    main()

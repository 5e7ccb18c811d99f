"""A member that closes with its assignment queued and never served, in its own process.

`python -m testbed.unpolled_member BOOTSTRAP GROUP TOPIC REBALANCE MEMBERSHIP`
subscribes a CoopConsumer (librdkafka's defaults otherwise), never polls, waits until the broker reports
the member's assignment (so the client has queued the assign), then calls `close()` and prints the event
kinds as JSON. A close that never returns (librdkafka issue 4041, under confluent-kafka's GIL) stops the
whole process; the parent test's timeout turns that into a failure instead of a CI hang.
"""

from __future__ import annotations

import json
import sys
import time

from kafka_coop.admin import ClusterAdmin
from kafka_coop.consumer import CoopConsumer
from kafka_coop.events import RebalanceEvent
from testbed.rebalance_protocols import REBALANCE_CONF

QUEUED_MARGIN_S = 1.0  # past the broker's report, the client has read the SyncGroup/heartbeat answer
ASSIGNED_WITHIN_S = 60.0


def main(argv: list[str]) -> int:
    bootstrap, group, topic, rebalance, membership = argv
    conf = {"bootstrap.servers": bootstrap, "group.id": group, **REBALANCE_CONF[rebalance]}
    if membership == "static":
        conf["group.instance.id"] = f"{group}-0"
    events: list[RebalanceEvent] = []
    consumer = CoopConsumer(conf, events=events.append)
    consumer.subscribe([topic])
    admin = ClusterAdmin(bootstrap)
    deadline = time.monotonic() + ASSIGNED_WITHIN_S
    while time.monotonic() < deadline:
        members = admin.describe_group(group).members
        if any(m.assignment for m in members):
            break
        time.sleep(0.2)
    else:
        print("the broker never reported an assignment", file=sys.stderr)
        return 2
    time.sleep(QUEUED_MARGIN_S)
    consumer.close()
    print(json.dumps([e.kind for e in events]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

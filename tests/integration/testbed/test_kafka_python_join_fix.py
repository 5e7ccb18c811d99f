"""kafka-python 3.0.12 keeps a join that finished while its main thread was away from poll().

Without the member's workaround (testbed/interop/python/kafka_python_join_fix.py) such a join is thrown away
and the consumer ends up with heartbeats off, never assigned: the coordinator expires it after
session.timeout.ms (the kafka-python flake of tests/e2e/test_family_walks.py and of the interop member
test on a loaded machine). Each test runs one late-polling consumer in the members' own venv.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from testbed.interop import build_dir

# The patched library, a listener collecting assigned partitions, and a main thread that returns to
# poll() only after a join has finished, every time. argv: interop dir, bootstrap, group, topic.
LATE_POLLING_CONSUMER = """
import sys, time
sys.path.insert(0, sys.argv[1])
import kafka_python_join_fix
kafka_python_join_fix.install()
from kafka import ConsumerRebalanceListener, KafkaConsumer
from kafka.admin import KafkaAdminClient, NewPartitions
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor

assigned = []

class Listener(ConsumerRebalanceListener):
    def on_partitions_revoked(self, revoked):
        pass

    def on_partitions_assigned(self, partitions):
        assigned.extend(sorted(tp.partition for tp in partitions))

def late_polls_until(done, seconds):
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        consumer.poll(timeout_ms=1)
        time.sleep(0.5)
"""

# A static member's first join.
FIRST_JOIN = """
consumer = KafkaConsumer(
    bootstrap_servers=sys.argv[2], group_id=sys.argv[3], group_instance_id="late-0",
    partition_assignment_strategy=[CooperativeStickyAssignor],
)
consumer.subscribe([sys.argv[4]], listener=Listener())
late_polls_until(lambda: assigned, 60)
print("assigned", sorted(assigned), flush=True)
consumer.close()
"""

# The group's leader rejoins because the topic grew (its metadata no longer matches what it assigned),
# not because the coordinator asked.
REJOIN_AFTER_GROWTH = """
consumer = KafkaConsumer(
    bootstrap_servers=sys.argv[2], group_id=sys.argv[3], metadata_max_age_ms=1000,
    partition_assignment_strategy=[CooperativeStickyAssignor],
)
consumer.subscribe([sys.argv[4]], listener=Listener())
late_polls_until(lambda: len(assigned) == 3, 60)
admin = KafkaAdminClient(bootstrap_servers=sys.argv[2])
admin.create_partitions({sys.argv[4]: NewPartitions(total_count=4)})
admin.close()
late_polls_until(lambda: 3 in assigned, 30)
print("assigned", sorted(assigned), flush=True)
consumer.close()
"""


def _last_line_of(scenario: str, bootstrap: str, group: str, topic: str) -> str:
    root = build_dir("python")
    python = str(root / "venv" / "bin" / "python")
    done = subprocess.run(
        [python, "-c", LATE_POLLING_CONSUMER + scenario, str(root), bootstrap, group, topic],
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-1500:]
    return done.stdout.strip().splitlines()[-1]


def test_a_kafka_python_member_polling_late_is_still_assigned_its_partitions(
    bootstrap: str, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    """A join that succeeded with no poll() waiting was thrown away and joined again."""
    topic, group = topic_factory(3), unique("kpy-late")
    assert _last_line_of(FIRST_JOIN, bootstrap, group, topic) == "assigned [0, 1, 2]"


def test_a_late_polling_leader_that_rejoins_for_new_partitions_is_assigned_them(
    bootstrap: str, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    """poll() drives a join only while need_rejoin(), and a leader's own assignment makes that false
    mid-join when metadata caused the rejoin: the finished join was never consumed, heartbeats stayed
    off and the member was expired, never to come back."""
    topic, group = topic_factory(3), unique("kpy-growth")
    assert _last_line_of(REJOIN_AFTER_GROWTH, bootstrap, group, topic) == "assigned [0, 1, 2, 3]"

"""kafka-python 3.0.12 keeps a join that finished while its main thread was away from poll().

Without the member's workaround (interop/python/kafka_python_join_fix.py) such a join is thrown away
and the consumer rejoins with heartbeats off, forever when its main thread is always late: it is never
assigned and the coordinator expires it after session.timeout.ms (the cutover flake of
tests/e2e/test_family_walks.py on a loaded machine).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from testbed.interop import build_dir

# A consumer whose main thread returns to poll() only after the join has finished, every time.
LATE_POLLER = """
import sys, time
sys.path.insert(0, sys.argv[1])
import kafka_python_join_fix
kafka_python_join_fix.install()
from kafka import ConsumerRebalanceListener, KafkaConsumer
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor

assigned = []

class Listener(ConsumerRebalanceListener):
    def on_partitions_revoked(self, revoked):
        pass

    def on_partitions_assigned(self, partitions):
        assigned.extend(sorted(tp.partition for tp in partitions))

consumer = KafkaConsumer(
    bootstrap_servers=sys.argv[2], group_id=sys.argv[3], group_instance_id="late-0",
    partition_assignment_strategy=[CooperativeStickyAssignor],
)
consumer.subscribe([sys.argv[4]], listener=Listener())
deadline = time.monotonic() + 60
while not assigned and time.monotonic() < deadline:
    consumer.poll(timeout_ms=1)
    time.sleep(0.5)
print("assigned", assigned, flush=True)
consumer.close()
"""


def test_a_kafka_python_member_polling_late_is_still_assigned_its_partitions(
    bootstrap: str, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    topic, group = topic_factory(3), unique("kpy-late")
    root = build_dir("python")
    python = str(root / "venv" / "bin" / "python")
    done = subprocess.run(
        [python, "-c", LATE_POLLER, str(root), bootstrap, group, topic],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-1500:]
    assert done.stdout.strip().splitlines()[-1] == "assigned [0, 1, 2]"


# The leader of a group rejoins because the topic grew (its metadata no longer matches what it
# assigned), not because the coordinator asked; its main thread is away when that join ends.
LATE_LEADER_AFTER_GROWTH = """
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


def test_a_late_polling_leader_that_rejoins_for_new_partitions_is_assigned_them(
    bootstrap: str, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    """kafka-python 3.0.12's poll() drives a join only while need_rejoin(), and a leader's own
    assignment makes that false mid-join when metadata caused the rejoin: the finished join is never
    consumed, heartbeats stay off and the member is expired (the interop and e2e flake on CI)."""
    topic, group = topic_factory(3), unique("kpy-growth")
    root = build_dir("python")
    python = str(root / "venv" / "bin" / "python")
    done = subprocess.run(
        [python, "-c", LATE_LEADER_AFTER_GROWTH, str(root), bootstrap, group, topic],
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-1500:]
    assert done.stdout.strip().splitlines()[-1] == "assigned [0, 1, 2, 3]"

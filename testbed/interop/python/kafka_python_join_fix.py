"""Works around kafka-python 3.0.12 dropping a group join that finished between two poll() calls.

Two ways lead there; both are patched here.

kafka-python 3 runs JoinGroup+SyncGroup as a task on its IO thread; poll(timeout_ms=N) waits for it at
most N ms and leaves it running. On the next poll, join_group_async (kafka/coordinator/base.py) starts a
NEW join when `self._join_task.is_done` - true as well for a join that SUCCEEDED while no poll() was
waiting. Its assignment is thrown away, the rebalance listener never runs, heartbeats stay disabled
(they are re-enabled only on the consumed success path) and the member joins again; whenever the main
thread is late again the same happens, and the coordinator finally expires the silent member after
session.timeout.ms and hands its partitions to the others. A busy machine makes the main thread late.

The fix hands the finished join's assignment to the library's own success path: a fresh future on the
IO loop resolving to it, which join_group_async then awaits as the join still in flight. Only a join
that succeeded is replayed; a failed one is retried as the library does. kafka-python 3.0.12 is the
latest release (pinned in requirements.txt); drop this when a release consumes a finished join.

The second way: KafkaConsumer.poll() drives the join only while coordinator.need_rejoin() holds. When
the rejoin was caused by metadata (the topic gained partitions, or the leader first assigned before it
knew the topic: "No partition metadata"), need_rejoin() is true only while the metadata differs from
what the leader last assigned, and the leader's own assignment in the new join makes them equal again,
on the IO thread, mid-join. A main thread away from poll() at that moment never comes back to the join:
same silence, same expiry. Java asks rejoinNeededOrPending() (rejoin needed OR a join in flight); the
patched need_rejoin() does the same.
"""

from __future__ import annotations

from typing import Any

from kafka.coordinator.base import BaseCoordinator
from kafka.coordinator.consumer import ConsumerCoordinator


def install() -> None:
    _keep_finished_joins()
    _count_pending_joins_as_rejoin()


def _count_pending_joins_as_rejoin() -> None:
    original = ConsumerCoordinator.need_rejoin
    if getattr(original, "_counts_pending_join", False):
        return

    def need_rejoin(self: Any) -> Any:
        if getattr(self, "_join_task", None) is not None:
            return True
        return original(self)

    need_rejoin._counts_pending_join = True  # type: ignore[attr-defined]
    ConsumerCoordinator.need_rejoin = need_rejoin  # type: ignore[method-assign]


def _keep_finished_joins() -> None:
    original = BaseCoordinator.join_group_async
    if getattr(original, "_keeps_finished_join", False):
        return

    async def join_group_async(self: Any, timeout_ms: Any = None) -> Any:
        task = self._join_task
        if task is not None and task.is_done and task.exception is None and self.rejoining:
            assignment = task.value
            self._join_task = self._manager.call_soon(lambda: assignment)
        return await original(self, timeout_ms)

    join_group_async._keeps_finished_join = True  # type: ignore[attr-defined]
    BaseCoordinator.join_group_async = join_group_async  # type: ignore[method-assign]

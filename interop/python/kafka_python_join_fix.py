"""Works around kafka-python 3.0.12 dropping a group join that finished between two poll() calls.

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
"""

from __future__ import annotations

from typing import Any

from kafka.coordinator.base import BaseCoordinator


def install() -> None:
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

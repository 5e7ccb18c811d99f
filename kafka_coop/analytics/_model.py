"""The report's data contract: phase windows in, `Summary` (summary.json, schema v2) out.

Every figure is an integer number of milliseconds or a count, except callback times, which are summed
as whole microseconds (each event's `callback_ms` rounded half-up to 0.001 ms first) so the Python and
Spark engines add the same integers in any order and agree exactly.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field, model_validator

SUMMARY_VERSION: Final = 2
ALL_PHASE: Final = "all"


class PhaseWindow(BaseModel):
    """A named rollout phase, half-open `[start_ms, end_ms)` in event wall-clock time."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    start_ms: int
    end_ms: int

    @model_validator(mode="after")
    def _ordered(self) -> PhaseWindow:
        if self.end_ms < self.start_ms:
            raise ValueError(f"end_ms ({self.end_ms}) is before start_ms ({self.start_ms})")
        return self


class Malformed(BaseModel):
    """A line that is not a valid RebalanceEvent: where it is (file and 1-based line, or
    `kafka://topic/partition` and offset) and why it was refused."""

    model_config = ConfigDict(frozen=True)

    path: str
    line: int
    reason: str


class PartitionStat(BaseModel):
    """One partition of one group (two groups reading a topic own its partitions independently)."""

    group: str
    topic: str
    partition: int
    unavailable_ms: int
    intervals: int


class MemberStat(BaseModel):
    """One member of one group, named by `instance_id or client_id or member_id` (a static member
    keeps its name across restarts, so its pause spans the restart)."""

    group: str
    name: str
    events: int
    pause_ms: int
    pauses: int
    rebalances: int  # `assigned` callbacks: rebalance rounds this member completed
    revoked_partitions: int
    lost_partitions: int
    callback_ms_total: float
    callback_ms_max: float


class ProtocolStat(BaseModel):
    """Rebalance callbacks of the members that ran one protocol."""

    members: int  # distinct (group, name)
    events: int  # assigned + revoked + lost callbacks
    rebalances: int  # assigned callbacks
    revoked: int
    lost: int
    revoked_partitions: int
    lost_partitions: int


class PhaseStat(BaseModel):
    name: str
    start_ms: int
    end_ms: int
    events: int
    partition_unavailable_ms: int  # intervals clipped to the window
    pause_ms: int  # pauses clipped to the window
    rebalances: int  # assigned callbacks in the window
    revoked_partitions: int  # partitions revoked in the window


class Summary(BaseModel):
    """summary.json: documented in docs/report.md and docs/contracts.md."""

    v: int = SUMMARY_VERSION
    events: int
    malformed: int
    first_ts_ms: int | None
    last_ts_ms: int | None
    intervals: int
    partition_unavailable_ms_total: int
    # of those, the intervals whose owner vanished (SIGKILL, OOM, a lost node): counted from its last
    # event, so each is an upper bound of the real gap, which no event bounds from below (v2)
    vanished_intervals: int = 0
    vanished_unavailable_ms: int = 0
    pauses: int
    pause_ms_total: int
    partitions: list[PartitionStat]
    members: list[MemberStat]
    rebalances: dict[str, ProtocolStat]
    phases: list[PhaseStat]

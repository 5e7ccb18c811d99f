"""Rollout phase markers: the record a passing gate writes so that figures can be told per phase.

`verify-group ... --phase N --events SRC` writes one when it passes: phase N of the migration is done
and the next one begins now. The live pipeline labels its windows with the phase they fall in, the
report turns markers into phase windows, and the next gate's pause budget is measured from its
phase's marker. A public contract (docs/contracts.md), pure: no client here.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kafka_coop.events import Int64

MARKERS_TOPIC: Final = "_kafka_coop_rollout"
# one partition: markers are few and a reader wants them in order; compacted on group/migration/phase
MARKERS_TOPIC_CONFIG: Final = {"cleanup.policy": "compact"}


class PhaseMarker(BaseModel):
    """The gate after phase `phase` of `migration` passed on `group` at `ts_ms` (phase 0: the start
    state was verified). Phase `phase + 1` begins then; after the last phase the migration is done."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    v: Literal[1] = 1
    ts_ms: Int64
    group: str
    migration: str = Field(min_length=1)
    phase: int = Field(ge=0)
    phases: int = Field(ge=1)

    @property
    def key(self) -> str:
        return f"{self.group}/{self.migration}/{self.phase}"

    @property
    def begins(self) -> str:
        """The label of what begins at this marker."""
        return phase_label(self.migration, self.phase, self.phases)


def phase_label(migration: str, passed: int, phases: int) -> str:
    """`eager-to-cooperative 2/2` while phase 2 of 2 runs, `eager-to-cooperative done` after it."""
    return f"{migration} done" if passed >= phases else f"{migration} {passed + 1}/{phases}"


def parse_marker(text: str | bytes) -> PhaseMarker | str:
    """The marker, or why the record is not one (one line)."""
    try:
        return PhaseMarker.model_validate_json(text, strict=True)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        if first["type"] == "json_invalid":
            return "marker: invalid JSON"
        where = ".".join(str(x) for x in first["loc"]) or "record"
        return f"marker {where}: {first['msg']}"

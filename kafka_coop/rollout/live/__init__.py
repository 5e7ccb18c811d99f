"""Rollout's shell: what a gate and a walk do on a live group. The rest of `rollout` is pure.

- `_verify`: a gate run (`run_gate`: looks on a live group, `--wait`) returning the typed GateReport.
- `_run`: `rollout run`'s effects: the restart hook, the control topic, the gates, the journal.

Each loads on first use, so `verify-group` does not load `rollout run`'s appliers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_coop._lazy import lazy_attributes

if TYPE_CHECKING:
    from kafka_coop.rollout.live._run import Runner, resume_walk, start_walk
    from kafka_coop.rollout.live._verify import GateProgress, group_missing, run_gate

# name -> the module that defines it, imported on first use
_LAZY: dict[str, str] = {
    "GateProgress": "kafka_coop.rollout.live._verify",
    "group_missing": "kafka_coop.rollout.live._verify",
    "run_gate": "kafka_coop.rollout.live._verify",
    "Runner": "kafka_coop.rollout.live._run",
    "resume_walk": "kafka_coop.rollout.live._run",
    "start_walk": "kafka_coop.rollout.live._run",
}

__getattr__ = lazy_attributes(__name__, _LAZY)

__all__ = ["GateProgress", "Runner", "group_missing", "resume_walk", "run_gate", "start_walk"]

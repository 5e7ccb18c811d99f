"""A named check with its verdict, as the gate prints it and a plan lists its preconditions.

A check carries its data whole: the reason, the hint of what to do, and the members it concerns, so
renderers and the planner never parse them back out of text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

# "not-judged": the evidence could not decide (a lag window too short): said, and no verdict either way.
Status = Literal["pass", "not-judged", "warn", "fail"]
RANK: dict[Status, int] = {"pass": 0, "not-judged": 0, "warn": 1, "fail": 2}


def worst(statuses: Iterable[Status]) -> Status:
    """The verdict of several: any fail fails, else any warn warns; a check not judged decides nothing."""
    return max((s for s in statuses if s != "not-judged"), key=RANK.__getitem__, default="pass")


class Check(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    status: Status
    reason: str
    members: tuple[str, ...] = ()
    hint: str = ""
    rule: str = ""  # the broker code (or client code) whose rule the check mirrors, where it mirrors one

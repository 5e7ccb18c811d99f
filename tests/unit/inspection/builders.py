"""Builders of what inspection reads, from the bytes real members sent (tests/unit/vectors)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kafka_coop.inspection import MemberAnswers
from tests.unit.builders import live_member

VECTORS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "vectors" / "member_metadata.json").read_text()
)
"""Every captured group moment: its scenario, moment, protocol and members' hex bytes."""


def vector_members(vector: dict[str, Any], client_id: str | None = None) -> list[MemberAnswers]:
    """The vector's members as the cluster answers for them (each its own client id unless given)."""
    return [
        live_member(
            member_id=m["member_id"],
            client_id=client_id or m["client_id"],
            host="/127.0.0.1",
            instance_id=None,
            assignment=(),
            subscription=bytes.fromhex(m["subscription_hex"]),
            assignment_bytes=bytes.fromhex(m["assignment_hex"]),
        )
        for m in vector["members"]
    ]


def vector_id(vector: dict[str, Any]) -> str:
    """A vector's test id: scenario@moment."""
    return f"{vector['scenario']}@{vector['moment']}"

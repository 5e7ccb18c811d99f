"""The live pipeline's rule for events of another schema version (`v`), pure.

`v` 1 is the first version of the event schema (`kafka_coop.events.EVENT_VERSION`): no older version
was ever written, so there is nothing to upgrade, and a `v` below 1 is a malformed record like any
other (the decoder's reason stands). A record with a whole-number `v` above the one this kafka-coop
reads was written by a newer kafka-coop: whatever else in it the decoder tripped on first, it is a dead
letter with the reason `unsupported version N`, so that a fleet upgraded ahead of its pipeline shows
up as one reason in the dead letters (upgrade the pipeline), not as scattered schema errors.
"""

from __future__ import annotations

import json
from typing import Final

from kafka_coop.events import EVENT_VERSION

UNSUPPORTED: Final = "unsupported version {v}"
MAX_PARSED: Final = 64 * 1024  # a refused record larger than this keeps the decoder's reason


def newer_version(raw: str | bytes | None) -> int | None:
    """The `v` of a JSON object whose whole-number `v` is above EVENT_VERSION, else None."""
    if raw is None or len(raw) > MAX_PARSED:
        return None
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    v = value.get("v") if isinstance(value, dict) else None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or v <= EVENT_VERSION:
        return None
    return v


def refusal(reason: str, raw: str | bytes | None) -> str:
    """The dead letter's reason for a record the decoder refused with `reason`."""
    v = newer_version(raw)
    return reason if v is None else UNSUPPORTED.format(v=v)

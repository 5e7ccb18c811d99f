"""`--phases FILE`: rollout phases as JSON, `[{"name", "start_ms", "end_ms"}, ...]` or `{"phases": [...]}`.

A bad file is refused with one sentence naming the file, the phase and the field, so a user can fix it
without reading a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kafka_coop.analytics._model import PhaseWindow
from kafka_coop.errors import InvalidInput

PHASES_HINT = 'Write [{"name": "bounce-1", "start_ms": 1700000000000, "end_ms": 1700000060000}, ...].'


def parse_phases(data: Any, source: str = "phases") -> list[PhaseWindow]:
    """Phase windows from decoded JSON; `source` names the file in error messages."""
    items = data.get("phases") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise InvalidInput(
            f"{source} must hold a list of phases or an object with a 'phases' list.", hint=PHASES_HINT
        )
    out: list[PhaseWindow] = []
    for index, item in enumerate(items):
        try:
            out.append(PhaseWindow.model_validate(item, strict=True))
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            field = ".".join(str(x) for x in first["loc"]) or "phase"
            raise InvalidInput(
                f"{source}: phase {index} field {field!r}: {first['msg']}.", hint=PHASES_HINT
            ) from None
    names = [p.name for p in out]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidInput(f"{source}: phase name {duplicates[0]!r} is used twice.", hint=PHASES_HINT)
    return out


def load_phases(path: str | Path) -> list[PhaseWindow]:
    """Read and validate a phases file."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInput(f"Phases file {file} does not exist.", hint=PHASES_HINT) from None
    except OSError as exc:
        raise InvalidInput(f"Phases file {file} cannot be read: {exc.strerror}.") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"Phases file {file} is not valid JSON (line {exc.lineno}).", hint=PHASES_HINT
        ) from None
    return parse_phases(data, str(file))

"""The JSON Schema of every command's `--output json`: one file per output and version, `NAME.vN.json`.

Generated from the pydantic models the commands print (`python -m kafka_coop.cli.schema --write`),
shipped with the package and printed by `kafka-coop schema NAME`. A version's file never changes: a
changed model bumps its `v` and gets a new file (tests/unit/cli/test_schemas.py holds both rules).
"""

from __future__ import annotations

import re
from importlib.resources import files
from importlib.resources.abc import Traversable

_FILE = re.compile(r"(?P<name>[a-z][a-z0-9-]*)\.v(?P<v>\d+)\.json")


def schema_files() -> dict[str, dict[int, Traversable]]:
    """name -> version -> the shipped file."""
    found: dict[str, dict[int, Traversable]] = {}
    for entry in files(__name__).iterdir():
        match = _FILE.fullmatch(entry.name)
        if match:
            found.setdefault(match["name"], {})[int(match["v"])] = entry
    return found


def read_schema(name: str, version: int | None = None) -> tuple[int, str] | None:
    """(version, text) of `name`'s schema, the latest version unless `version`; None if there is none."""
    versions = schema_files().get(name, {})
    chosen = max(versions, default=None) if version is None else version
    if chosen is None or chosen not in versions:
        return None
    return chosen, versions[chosen].read_text(encoding="utf-8")

"""Where a sandbox keeps its broker's data, logs and state file (the jar cache is kafka_coop._jvm's)."""

from __future__ import annotations

import os
from pathlib import Path


def state_dir() -> Path:
    """Default home of the sandbox broker's data, logs and pid/state file."""
    explicit = os.environ.get("KAFKA_COOP_SANDBOX_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kafka-coop" / "sandbox"

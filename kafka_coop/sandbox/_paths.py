"""Where the sandbox keeps jars (cache, shared, reusable offline) and broker state (per sandbox)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Jar and compiled-class cache; `KAFKA_COOP_CACHE_DIR` wins over the XDG default."""
    explicit = os.environ.get("KAFKA_COOP_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafka-coop"


def state_dir() -> Path:
    """Default home of the sandbox broker's data, logs and pid/state file."""
    explicit = os.environ.get("KAFKA_COOP_SANDBOX_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kafka-coop" / "sandbox"

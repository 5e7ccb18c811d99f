"""What every AppCDS archive kafka-coop trains has in common (the Java test-bed member's, the Spark
driver's): a key that changes with the JDK, since a JVM maps only an archive its own binary wrote, and a
training run's output that becomes the archive only once the JVM has written it whole.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def jdk_key(java: str) -> str:
    """The JDK part of an archive's key: the resolved `java` binary, its size and modification time."""
    binary = Path(java).resolve()
    stat = binary.stat()
    return f"{binary}:{stat.st_size}:{stat.st_mtime_ns}"


def partial_path(archive: Path) -> Path:
    """Where this process's training run writes, beside the archive (one rename publishes it)."""
    return archive.with_name(f"{archive.name}.{os.getpid()}.partial")


def publish(partial: Path, archive: Path, *, trained: bool = True) -> bool:
    """Rename a training run's output into place if the run succeeded and the JVM wrote something;
    otherwise drop whatever it left. True when the archive now exists."""
    if trained and partial.exists() and partial.stat().st_size > 0:
        os.replace(partial, archive)
        return True
    with contextlib.suppress(OSError):
        partial.unlink()
    return False

"""`kafka-coop sandbox` run as a user runs it: a process of its own, its output captured."""

from __future__ import annotations

import subprocess
import sys


def sandbox_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """`kafka-coop sandbox ARGS...` in a new interpreter (this one's environment unless `env`)."""
    return subprocess.run(
        [sys.executable, "-m", "kafka_coop.cli", "sandbox", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )

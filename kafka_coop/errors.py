"""The exception tree of kafka-coop.

Every error a user can cause or meet carries a one-sentence message that says what is wrong and a
hint that says what to do, plus the exit code the CLI uses for it::

    KafkaCoopError                  exit 1
    ├── GateFailed                  exit 1  a verify-group gate did not pass / a plan is blocked
    ├── InvalidInput                exit 2  bad flags, files, settings; missing prerequisites
    │   └── SettingsError           exit 2  a consumer setting that cannot work
    └── ClusterUnavailable          exit 3  broker unreachable, not authorized, failed to start

The CLI catches only `KafkaCoopError` at its top level; anything else is a bug and shows a traceback.
"""

from __future__ import annotations

from pathlib import Path


class KafkaCoopError(Exception):
    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None, log_path: Path | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.log_path = log_path

    def __str__(self) -> str:
        parts = [self.message]
        if self.hint:
            parts.append(self.hint)
        if self.log_path:
            parts.append(f"Log: {self.log_path}")
        return " ".join(parts)


class GateFailed(KafkaCoopError):
    exit_code = 1


class InvalidInput(KafkaCoopError):
    exit_code = 2


class SettingsError(InvalidInput):
    pass


class ClusterUnavailable(KafkaCoopError):
    exit_code = 3

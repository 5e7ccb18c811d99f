"""The exception tree of kafka-coop.

Every error a user can cause or meet carries a one-sentence message that says what is wrong and a
hint that says what to do, plus the exit code the CLI uses for it::

    KafkaCoopError                  exit 1
    ├── GateFailed                  exit 1  a verify-group gate did not pass / a plan is blocked
    ├── InvalidInput                exit 2  bad flags, files, settings; missing prerequisites
    │   └── SettingsError           exit 2  a consumer setting that cannot work
    ├── ClusterUnavailable          exit 3  broker unreachable, not authorized, failed to start
    ├── Interrupted                 exit 130 Ctrl-C (128 + the signal's number for SIGTERM, SIGHUP)
    └── ConsumerFailed              exit 1  librdkafka raised a fatal error: this consumer cannot go on
        └── InstanceIdConflict      exit 1  another member holds this group.instance.id (fenced)

The CLI's top level (cli/main.py) is the one place that turns errors into messages and exit codes: a
`KafkaCoopError` as it is, and what the system or a client library raises for bad input (a path that
cannot be used, a setting librdkafka refuses), an interrupt or a closed pipe through cli/_exit_codes.py;
anything else is a bug and shows a traceback.
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


class Interrupted(KafkaCoopError):
    """The user (Ctrl-C) or the system (SIGTERM, SIGHUP) stopped a command; what it started is stopped."""

    exit_code = 130

    def __init__(self, message: str, *, hint: str | None = None, signum: int = 2) -> None:
        super().__init__(message, hint=hint)
        self.exit_code = 128 + signum


class ConsumerFailed(KafkaCoopError):
    """A fatal client error: librdkafka stopped this consumer for good, so the service must make a new one.

    `code` is librdkafka's error name (e.g. FENCED_INSTANCE_ID). Raised from `poll`/`consume` after the
    `lost` event (with an empty `owned`) was emitted and the `on_lost` hook ran.
    """

    exit_code = 1

    def __init__(self, message: str, *, code: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.code = code


class InstanceIdConflict(ConsumerFailed):
    """Two members used one group.instance.id: classic fences the old one, KIP-848 refuses the new one.

    A FENCED_INSTANCE_ID right after librdkafka evicted this member itself (its poll limit or session ran
    out) is not a conflict: that is a plain `ConsumerFailed` whose message says so.
    """

"""The one error the protocol codecs raise for bytes they cannot accept."""

from __future__ import annotations


class ProtocolDecodeError(ValueError):
    """Raised for any malformed ConsumerProtocol payload.

    Member metadata comes from other processes (possibly other client libraries or versions), so a bad
    payload is an input problem, not a bug: callers catch this one type instead of guessing among
    `struct.error`, `UnicodeDecodeError`, `IndexError` and friends. The field path and byte offset are
    kept as attributes so a caller can report exactly where a foreign member's metadata went wrong.
    """

    def __init__(self, field: str, offset: int, reason: str) -> None:
        super().__init__(f"cannot decode {field} at offset {offset}: {reason}")
        self.field = field
        self.offset = offset
        self.reason = reason

"""The error object a command prints on stdout when it fails under `--output json` (schema `error`).

A pipeline that parses a command's JSON gets one object either way: the command's own (schema named
after it) or this one, told apart by `kind`. stderr keeps the `Error:` sentence. The object says what
failed (the command, the sentence, the hint) and what the exit code means; it is made only from the
sentence and the hint the command prints, which never hold a secret.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict

ExitMeaning = Literal["verdict", "bad input", "cluster", "interrupted", "failed"]
ERROR_MEANINGS: dict[int, ExitMeaning] = {1: "verdict", 2: "bad input", 3: "cluster"}


def meaning_of(code: int) -> ExitMeaning:
    """What an exit code means (docs/cli.md "Errors and exit codes"); 128 + N is a signal."""
    if code in ERROR_MEANINGS:
        return ERROR_MEANINGS[code]
    return "interrupted" if code > 128 else "failed"


class ErrorDetail(BaseModel):
    model_config = ConfigDict(frozen=True)

    command: str
    exit_code: int
    meaning: ExitMeaning
    message: str
    hint: str | None


class ErrorOutput(BaseModel):
    """`{"v": 1, "kind": "error", "error": {...}}`: printed instead of a command's result."""

    model_config = ConfigDict(frozen=True)

    v: Literal[1] = 1
    kind: Literal["error"] = "error"
    error: ErrorDetail


def error_json(
    command: str, exit_code: int, message: str, hint: str | None, *, one_line: bool = False
) -> str:
    """The error object as the command prints it: indented like every other `-o json`, or on one line
    for a command whose `-o json` is a record a line (`rollout run`, `watch`)."""
    detail = ErrorDetail(
        command=command, exit_code=exit_code, meaning=meaning_of(exit_code), message=message, hint=hint
    )
    return json.dumps(ErrorOutput(error=detail).model_dump(mode="json"), indent=None if one_line else 2)


def wants_json(args: list[str]) -> bool:
    """True when the command line asks for `--output json` (`-o json`, `--output=json`, `-ojson`),
    read from the words themselves: a usage error comes before click has parsed them."""
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg in ("-o", "--output") and i + 1 < len(args) and args[i + 1] == "json":
            return True
        if arg in ("--output=json", "-ojson", "-o=json"):
            return True
    return False

"""Reading RebalanceEvent JSON lines from files, directories and globs, refusing nothing silently.

Each line is validated against `RebalanceEvent` in pydantic's strict JSON mode (a number where a string
belongs, `"5"` where an int belongs, a missing or unknown field, an unknown kind or protocol: refused),
because the Spark engine applies the same rules with its own JSON parser and the two must agree on
what counts. Blank lines are not events and are skipped; a torn last line (a SIGKILLed writer) is a
malformed line like any other.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kafka_coop.analytics._model import Malformed
from kafka_coop.analytics._versions import refusal
from kafka_coop.errors import InvalidInput
from kafka_coop.events import RebalanceEvent

KAFKA_SCHEME = "kafka://"
GLOB_CHARS = frozenset("*?[")


def is_kafka_source(source: str) -> bool:
    return source.startswith(KAFKA_SCHEME)


def kafka_topic(source: str) -> str:
    topic = source[len(KAFKA_SCHEME) :].strip("/")
    if not topic or "/" in topic:
        raise InvalidInput(
            f"{source!r} does not name one topic.", hint="Write a topic source as kafka://TOPIC."
        )
    return topic


def expand_paths(sources: Iterable[str | Path]) -> list[Path]:
    """Files named by paths, directories (every regular, non-hidden file under them) and globs, in a
    stable order. A path that does not exist, or a glob or directory that holds no file, is an error."""
    out: list[Path] = []
    for source in sources:
        text = str(source)
        if any(c in text for c in GLOB_CHARS):
            found = sorted(Path(p) for p in glob.glob(text, recursive=True) if Path(p).is_file())
            if not found:
                raise InvalidInput(f"No file matches {text!r}.", hint="Check the pattern and quote it.")
            out.extend(found)
            continue
        path = Path(text)
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(path).parts)
            )
            if not found:
                raise InvalidInput(f"Directory {text} holds no event files.")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise InvalidInput(
                f"No such file or directory: {text}.", hint="Give JSONL files, directories or globs."
            )
    return list(dict.fromkeys(out))


def validate_line(text: str) -> dict[str, Any] | str:
    """The event as a plain dict, or the reason the line is refused (one line of text): a line of a
    newer event version is refused as that version (`_versions`), as the pipeline refuses it."""
    try:
        event = RebalanceEvent.model_validate_json(text, strict=True)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        if first["type"] == "json_invalid":
            return "invalid JSON"
        where = ".".join(str(x) for x in first["loc"]) or "line"
        return refusal(f"{where}: {first['msg']}", text)
    return event.model_dump()


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    # utf-8-sig: a byte-order mark opening the file is not part of line 1 (Hadoop's reader drops it too)
    with path.open("r", encoding="utf-8-sig", errors="replace", newline=None) as fh:
        yield from enumerate(fh, start=1)


def read_event_lines(sources: Iterable[str | Path]) -> tuple[list[dict[str, Any]], list[Malformed]]:
    """Every valid event of every file, and every refused line with its file and 1-based line number."""
    events: list[dict[str, Any]] = []
    malformed: list[Malformed] = []
    for path in expand_paths(sources):
        for number, line in iter_lines(path):
            if not line.strip():
                continue
            result = validate_line(line)
            if isinstance(result, str):
                malformed.append(Malformed(path=str(path.absolute()), line=number, reason=result))
            else:
                events.append(result)
    return events, malformed

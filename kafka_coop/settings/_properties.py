"""Java `.properties` files, because `--command-config` files are shared with Kafka's own tools.

Two entry points and no guessing: `parse_properties(text)` for text, `read_properties(path)` for a file.
(A path may well contain `=`, e.g. `env=prod/client.properties`, so a string cannot tell which it is.)
"""

from __future__ import annotations

import re
from pathlib import Path

from kafka_coop.errors import SettingsError

_PROPERTY_WHITESPACE = " \t\f"


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java `.properties` text, because `--command-config` files are shared with Java tools.

    Follows java.util.Properties.load: `#`/`!` comment lines, `=`, `:` or whitespace separators, an odd
    number of trailing backslashes continues the line (leading whitespace of the next line is dropped),
    and the escapes `\\t \\n \\r \\f \\uXXXX`. Later keys win, as in Java.
    """
    result: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(_PROPERTY_WHITESPACE)
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(_PROPERTY_WHITESPACE)
            i += 1
        if _continues(line):  # a final backslash with nothing after it is dropped, as in Java
            line = line[:-1]
        key, value = _split_property(line)
        result[_unescape(key)] = _unescape(value)
    return result


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split_property(line: str) -> tuple[str, str]:
    """Split where java.util.Properties does: the first unescaped `=`, `:` or whitespace."""
    end = 0
    value_start = len(line)
    has_separator = False
    while end < len(line):
        ch = line[end]
        if ch == "\\":
            end += 2
            continue
        if ch in "=:":
            value_start, has_separator = end + 1, True
            break
        if ch in _PROPERTY_WHITESPACE:
            value_start = end + 1
            break
        end += 1
    key = line[: min(end, len(line))]
    while value_start < len(line):
        ch = line[value_start]
        if ch in _PROPERTY_WHITESPACE:
            value_start += 1
        elif ch in "=:" and not has_separator:
            value_start, has_separator = value_start + 1, True
        else:
            break
    return key, line[value_start:]


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out: list[str] = []
    j = 0
    while j < len(text):
        ch = text[j]
        if ch != "\\" or j + 1 >= len(text):
            out.append(ch)
            j += 1
            continue
        nxt = text[j + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[j + 2 : j + 6]):
            out.append(chr(int(text[j + 2 : j + 6], 16)))
            j += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        j += 2
    return "".join(out)


def read_properties(path: str | Path) -> dict[str, str]:
    """Read and parse a properties file; a missing or unreadable file is one SettingsError naming it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SettingsError(
            f"Properties file {str(path)!r} does not exist.",
            hint="Check the path and the working directory.",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(
            f"Properties file {str(path)!r} cannot be read: {exc}.",
            hint="Check that it is a readable UTF-8 text file.",
        ) from None
    return parse_properties(text)

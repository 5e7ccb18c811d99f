"""Tables as plain aligned columns, one line per row, as Kafka's own tools print them.

Pipes and files get every row whole, whatever the width: group names, member and instance ids,
addresses and verdicts are what a CI log is read for. On a terminal (`fit_width`) a table wider than
the screen is fitted: its last column (free text) wraps under itself, and when the other columns alone
do not leave it room (or a word of it would be cut), each row becomes a record, its first cell on a
line of its own and the others as `column: value` under it. Words are broken at spaces; an id is cut
only when it is longer than a whole line. A rich Table would fold words ("committin g") and elide ids
("127.0.0.1:3…") instead, and costs ~3 ms a row to measure and wrap (a 200-member `describe`).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Span, Text

from kafka_coop._vocab import plural

if TYPE_CHECKING:
    from rich.console import Console

# a last column narrower than this is unreadable wrapped: the table becomes records instead
MIN_WRAPPED = 24
RECORD_INDENT = 2

__all__ = ["aligned_table", "fit_width", "fold", "fold_command", "heading", "plural"]

Cell = Text | str


def _text(cell: Cell) -> Text:
    return cell if isinstance(cell, Text) else Text(cell)


def fit_width(console: Console) -> int | None:
    """The width to fit to when the console writes to a terminal, None for a pipe or a file.

    The stream itself must be a tty: FORCE_COLOR (common in CI) makes rich treat a pipe as a terminal
    for colour, and rich takes a pipe's width from COLUMNS or from stdin's terminal; neither folds a log.
    """
    isatty = getattr(console.file, "isatty", None)
    try:
        tty = bool(isatty is not None and isatty())
    except ValueError:  # a closed stream
        tty = False
    return console.width if tty else None


def _breaks(plain: str, first: int, rest: int) -> list[tuple[int, int]]:
    """(start, end) of each line of `plain` word-wrapped to `first` columns, then `rest`."""
    lines: list[tuple[int, int]] = []
    start, room = 0, max(1, first)
    lead = len(plain) - len(plain.lstrip(" "))  # an indent is not a place to break
    while len(plain) - start > room:
        cut = plain.rfind(" ", start + lead + 1, start + room + 1)
        end, resume = (cut, cut + 1) if cut > 0 else (start + room, start + room)
        lines.append((start, end))
        start, room, lead = resume, max(1, rest), 0
    lines.append((start, len(plain)))
    return lines


def fold(text: Cell, width: int | None, *, at: int = 0, indent: int = 0) -> Text:
    """`text` word-wrapped to end by column `width`, its first line starting at column `at` and the
    others indented by `indent` spaces; a word longer than a line is cut only then. None: unchanged."""
    text = _text(text)
    if width is None or at + len(text.plain) <= width:
        return text
    pieces = [text[s:e] for s, e in _breaks(text.plain, width - at, width - indent)]
    return Text("\n" + " " * indent).join(pieces)


def fold_command(command: str, width: int | None, *, indent: int = 0) -> str:
    """A shell command that fits `width`: continued with ` \\` and indented, so it still pastes whole.
    `command` is one `shlex.join` wrote; None: unchanged."""
    if width is None or indent + len(command) <= width:
        return " " * indent + command
    words = [shlex.quote(w) for w in shlex.split(command)]
    lines, line = [], " " * indent + words[0]
    for word in words[1:]:
        if len(line) + 1 + len(word) + 2 > width:
            lines.append(line + " \\")
            line = " " * (indent + 4) + word
        else:
            line += " " + word
    return "\n".join([*lines, line])


def _record(columns: Sequence[str] | None, row: Sequence[Text], width: int, gap: int) -> Text:
    """One row as a record: its first cell alone, then `column: value` pairs flowed under it."""
    head = fold(row[0], width) if row else Text("")
    pairs = [
        Text.assemble(((columns[i] + ": ") if columns and i < len(columns) else "", "dim"), cell)
        for i, cell in enumerate(row[1:], 1)
        if cell.plain
    ]
    out = [head]
    line = Text(" " * RECORD_INDENT)
    for pair in pairs:
        if line.plain.strip() and len(line.plain) + gap + len(pair.plain) > width:
            out.append(line)
            line = Text(" " * RECORD_INDENT)
        if line.plain.strip():
            line.append(" " * gap)
        line.append_text(fold(pair, width, at=len(line.plain), indent=RECORD_INDENT * 2))
    if line.plain.strip():
        out.append(line)
    return Text("\n").join(out)


def aligned_table(
    columns: Sequence[str] | None,
    rows: Sequence[Sequence[Cell]],
    *,
    gap: int = 2,
    title: str | None = None,
    width: int | None = None,
) -> Text:
    """`columns` as a bold header with a rule under it (None: no header), then one line per row;
    styles of the cells are kept. `width`: fitted to it (see the module doc); None: rows whole."""
    body = [[_text(c) for c in row] for row in rows]
    table = _aligned(columns, body, gap=gap, title=title)
    if width is None or max((len(line) for line in table.plain.splitlines()), default=0) <= width:
        return table
    widths = [max((r[i].cell_len for r in body if i < len(r)), default=0) for i in range(max(map(len, body)))]
    if columns is not None:
        widths = [max(w, len(c)) for w, c in zip(widths, [*columns, *[""] * len(widths)], strict=False)]
    at = sum(widths[:-1]) + gap * (len(widths) - 1)
    head = [fold(Text(title, style="italic"), width)] if title is not None else []
    longest = max((len(w) for row in body if row for w in row[-1].plain.split()), default=0)
    if width - at >= max(MIN_WRAPPED, longest):  # no id in the last column is cut
        wrapped = [
            [*row[:-1], fold(row[-1], width, at=at, indent=at)] if len(row) == len(widths) else row
            for row in body
        ]
        lines = _aligned(columns, wrapped, gap=gap, title=None, rule_cap=width - at)
        return Text("\n").join([*head, lines])
    return Text("\n").join([*head, *(_record(columns, row, width, gap) for row in body)])


def _aligned(
    columns: Sequence[str] | None,
    body: list[list[Text]],
    *,
    gap: int,
    title: str | None,
    rule_cap: int | None = None,
) -> Text:
    """The table, each column as wide as its widest cell (the first line of a wrapped one)."""
    lines: list[list[Text]] = []
    if columns is not None:
        header = [Text(c, style="bold") for c in columns]
        lines.append(header)
    width = max((len(line) for line in [*lines, *body]), default=0)
    padded = [line + [Text("")] * (width - len(line)) for line in [*lines, *body]]
    widths = [
        max((max(map(len, line[i].plain.split("\n"))) for line in padded), default=0) for i in range(width)
    ]
    if columns is not None:
        rules = [*widths[:-1], min(widths[-1], rule_cap or widths[-1])] if widths else []
        padded.insert(1, [Text("─" * w, style="dim") for w in rules])
    parts: list[str] = []
    spans: list[Span] = []
    pos = 0
    if title is not None:
        parts.append(title + "\n")
        spans.append(Span(0, len(title), "italic"))
        pos = len(title) + 1
    for n, line in enumerate(padded):
        if n:
            parts.append("\n")
            pos += 1
        last = max((i for i, cell in enumerate(line) if cell.plain), default=0)
        for i, (cell, cell_width) in enumerate(zip(line, widths, strict=True)):
            if i > last:
                break
            plain = cell.plain
            if cell.style:
                spans.append(Span(pos, pos + len(plain), cell.style))
            spans.extend(Span(pos + s.start, pos + s.end, s.style) for s in cell.spans)
            parts.append(plain)
            pos += len(plain)
            if i < last:
                pad = " " * (cell_width - cell.cell_len + gap)
                parts.append(pad)
                pos += len(pad)
    return Text("".join(parts), spans=spans)


def heading(text: str, style: str = "bold") -> Text:
    """A section heading that, unlike a rich Rule, is never cut to the width: `── text ──`."""
    return Text(f"── {text} ──", style=style)

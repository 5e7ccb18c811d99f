"""Tables as plain aligned columns, one line per row, as Kafka's own tools print them.

Nothing in a cell is ever cut or wrapped, whatever the width: group names, member and instance ids,
addresses and verdicts are what a CI log is read for, and a rich Table fits a narrow or unknown width
by folding words ("committin g") and eliding ids ("127.0.0.1:3…"). A line is as wide as its content; a
narrow terminal wraps it, pipes and files get it whole. Free text goes in the last column. Measuring is
cheap too: a rich Table costs ~3 ms a row to measure and wrap (a 200-member `describe`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Span, Text

Cell = Text | str


def _text(cell: Cell) -> Text:
    return cell if isinstance(cell, Text) else Text(cell)


def aligned_table(
    columns: Sequence[str] | None, rows: Sequence[Sequence[Cell]], *, gap: int = 2, title: str | None = None
) -> Text:
    """`columns` as a bold header with a rule under it (None: no header), then one line per row;
    styles of the cells are kept."""
    body = [[_text(c) for c in row] for row in rows]
    lines: list[list[Text]] = []
    if columns is not None:
        header = [Text(c, style="bold") for c in columns]
        lines.append(header)
    width = max((len(line) for line in [*lines, *body]), default=0)
    padded = [line + [Text("")] * (width - len(line)) for line in [*lines, *body]]
    widths = [max((line[i].cell_len for line in padded), default=0) for i in range(width)]
    if columns is not None:
        padded.insert(1, [Text("─" * w, style="dim") for w in widths])
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


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """`1 group`, `2 groups`."""
    return f"{count} {noun if count == 1 else (plural_form or noun + 's')}"


def heading(text: str, style: str = "bold") -> Text:
    """A section heading that, unlike a rich Rule, is never cut to the width: `── text ──`."""
    return Text(f"── {text} ──", style=style)

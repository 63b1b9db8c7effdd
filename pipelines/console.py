"""Tables for the terminal and for logs: in a terminal a rich table that fits its width and wraps cells at
spaces only (a word is never cut in two: a column is at least as wide as its longest word, and a word
that cannot fit is shortened with an ellipsis); elsewhere (a pipe, a CI log, a test) one plain line per
row, columns padded, nothing wrapped, so the output stays short and greppable."""
from __future__ import annotations

import sys
from typing import Any, Sequence, TextIO


def _words(text: str) -> list[str]:
    return str(text).split() or [""]


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> str:
    """Fixed-width text: a header line, a rule and one line per row (cells on one line each)."""
    table = [[" ".join(str(c).split()) for c in headers]] + [[" ".join(str(c).split()) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(([title] if title else []) + lines)


def column_widths(headers: Sequence[str], rows: Sequence[Sequence[Any]], width: int) -> list[int]:
    """Content widths that fit ``width`` with a rich table's borders and padding: each column as wide as
    its longest cell if that fits; else the widest columns are narrowed one character at a time, never
    below their longest word (below it only when the words alone cannot fit: then a word ends in '…')."""
    cells = [[str(h), *(str(r[i]) for r in rows)] for i, h in enumerate(headers)]
    natural = [max(len(" ".join(c.split())) for c in col) for col in cells]
    least = [max(len(w) for c in col for w in _words(c)) for col in cells]
    room = max(width - 3 * len(headers) - 1, len(headers))  # "│ " + " " per column, and the last "│"
    widths = list(natural)
    while sum(widths) > room:
        slack = [w - m for w, m in zip(widths, least)]
        if max(slack) > 0:
            i = max(range(len(widths)), key=lambda k: (slack[k] > 0, widths[k]))
        else:  # the words alone are too wide: narrow the widest column below its longest word
            i = max(range(len(widths)), key=lambda k: widths[k])
            if widths[i] <= 4:
                break
        widths[i] -= 1
    return widths


def rich_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "", width: int = 80):
    """A rich Table that fits ``width`` and never breaks a word (:func:`column_widths`)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title or None, show_lines=False)
    for header, w in zip(headers, column_widths(headers, rows, width)):
        table.add_column(str(header), width=w, overflow="ellipsis")
    for row in rows:
        table.add_row(*(Text(str(c)) for c in row))  # cells are text, never rich markup ('[paper.txt:12]')
    return table


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "",
                file: TextIO | None = None) -> None:
    """The table on ``file`` (stdout): rich in a terminal, :func:`plain_table` elsewhere."""
    out = file or sys.stdout
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        print(plain_table(headers, rows, title), file=out)
        return
    from rich.console import Console

    console = Console(file=out, highlight=False)
    console.print(rich_table(headers, rows, title, console.width))


__all__ = ["column_widths", "plain_table", "print_table", "rich_table"]

"""Tables that fit the terminal: a table whose columns cannot all be as wide as their longest word is
folded, one record per block (each column's name beside its value), instead of squeezing every cell to
an ellipsis. A table that fits is printed as it is (cells wrap at spaces)."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.rule import Rule
from rich.table import Table
from rich.text import Text


def _longest_word(cell: object) -> int:
    return max((len(word) for word in _text(cell).plain.split()), default=0)


def fits(table: Table, console: Console) -> bool:
    """Every column as wide as its header and its longest word, within the console's width: each column's
    padding and a border beside it counted."""
    widths = [max(len(_text(c.header).plain), *map(_longest_word, c.cells)) for c in table.columns]
    _, right, _, left = table.padding
    return sum(w + left + right + 1 for w in widths) + 1 <= console.width


def records(table: Table, label: int | None = None, compact: bool = False) -> Group:
    """One block per row: a rule naming the row (the value of column `label`, else its number), then each
    column's name and value on a line; empty values left out. compact: each row one paragraph instead
    ("name value · name value ...", wrapped), for many rows of few columns."""
    names = [Text.from_markup(c.header) if isinstance(c.header, str) else c.header for c in table.columns]
    columns = [list(c.cells) for c in table.columns]
    count = max((len(c) for c in columns), default=0)
    parts: list[RenderableType] = []
    if table.title:
        parts.append(Text.from_markup(table.title) if isinstance(table.title, str) else table.title)
    for i in range(count):
        head = f"{i + 1} of {count}"
        if label is not None:
            head += f": {Text.from_markup(str(columns[label][i])).plain}"
        if compact:
            pairs = [
                Text.assemble((name.plain if isinstance(name, Text) else str(name), "bold"), " ", _text(cells[i]))
                for j, (name, cells) in enumerate(zip(names, columns, strict=True))
                if j != label and _text(name).plain != "#" and i < len(cells) and _text(cells[i]).plain not in ("", "-")
            ]
            parts.append(Text.assemble((head, "bold"), "  ", Text(" · ").join(pairs)))
            continue
        parts.append(Rule(head, align="left", style="dim"))
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column()
        for name, cells in zip(names, columns, strict=True):
            value = cells[i] if i < len(cells) else ""
            if _text(value).plain in ("", "-") or _text(name).plain == "#":  # the block's head numbers it
                continue
            grid.add_row(name, value)
        parts.append(grid)
    if count == 0:
        parts.append(Text("no rows"))
    return Group(*parts)


def _text(cell: object) -> Text:
    if isinstance(cell, Text):
        return cell
    return Text.from_markup(cell) if isinstance(cell, str) else Text(str(cell))


def fitted(table: Table, console: Console, label: int | None = None, compact: bool = False) -> RenderableType:
    """The table as it is if it fits the console, else folded into records."""
    return table if fits(table, console) else records(table, label, compact)

"""Tables that fit the terminal: a table whose columns cannot all be as wide as their longest word is
folded, one record per block (each column's name beside its value), instead of squeezing every cell to
an ellipsis. A table that fits is printed as it is (cells wrap at spaces)."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.rule import Rule
from rich.table import Table
from rich.text import Text


def fits(table: Table, console: Console) -> bool:
    """Every column at least as wide as its longest word, within the console's width."""
    unbounded = console.options.update_width(1_000_000)  # the table's own minimum, not clamped to the console
    return Measurement.get(console, unbounded, table).minimum <= console.width


def records(table: Table, label: int | None = None) -> Group:
    """One block per row: a rule naming the row (the value of column `label`, else its number), then each
    column's name and value on a line; empty values left out."""
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
        parts.append(Rule(head, align="left", style="dim"))
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column()
        for name, cells in zip(names, columns, strict=True):
            value = cells[i] if i < len(cells) else ""
            if isinstance(value, str) and value in ("", "-"):
                continue
            grid.add_row(name, value)
        parts.append(grid)
    if count == 0:
        parts.append(Text("no rows"))
    return Group(*parts)


def fitted(table: Table, console: Console, label: int | None = None) -> RenderableType:
    """The table as it is if it fits the console, else folded into records."""
    return table if fits(table, console) else records(table, label)

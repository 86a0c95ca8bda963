"""The one rule every terminal table follows: a cell is never broken. Columns are dropped
whole, in the order the command gives, until the rest fits at full width, and the caption names
what was left out (`--wide` shows every column). Nothing is squeezed: a table that still does
not fit (a key longer than the terminal, or `--wide`) is printed at full width, each row one
line that the terminal wraps, so a run key, a date or a branch name can always be copied."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

Cell = str | Text  # plain data (never read as markup), or text the command styled


def print_table(
    console: Console,
    headers: list[str],
    rows: Sequence[Sequence[Cell]],
    *,
    keep: str,
    drop_first: list[str],
    wide: bool = False,
    title: str | None = None,
) -> None:
    """Print `rows` under `headers` by the rule above; `keep` (what commands take) is never
    dropped, the `drop_first` columns go in that order."""
    if keep in drop_first:
        raise ValueError(f"column {keep!r} is the one a table never drops")
    cells = [[Text(c) if isinstance(c, str) else c for c in r] for r in rows]
    widths = {h: max([cell_len(h), *(r[i].cell_len for r in cells)]) for i, h in enumerate(headers)}
    shown = list(headers)

    def needed() -> int:
        return sum(widths[h] + 3 for h in shown) + 1  # a cell's padding and border, the edge

    for name in [] if wide else drop_first:
        if needed() <= console.width:
            break
        shown.remove(name)
    left_out = [h for h in headers if h not in shown]
    caption = f"not shown at this width: {', '.join(left_out)} (--wide)" if left_out else None
    table = Table(title=title, caption=caption)
    for h in shown:
        table.add_column(h, no_wrap=True, min_width=widths[h])
    for r in cells:
        table.add_row(*(r[headers.index(h)] for h in shown))
    # Rich fits any table to its console's width: one that does not fit gets a console of its
    # own, as wide as the table.
    out = Console(width=needed()) if needed() > console.width else console
    out.print(table)

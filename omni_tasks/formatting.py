"""How fractions read, the same in the terminal, the report, Slack and Grafana texts.

A fraction is a percentage with one decimal and a space before the sign (`13.9 %`), its 95 %
interval in brackets (`13.9 % [12.1 %, 15.9 %]`); a difference of fractions is in percentage
points with its sign (`+6.2 pts [+3.9, +8.5]`). A missing value is `n/a`.
"""

from __future__ import annotations

from collections.abc import Sequence

MISSING = "n/a"


def pct(x: float | None, digits: int = 1) -> str:
    return MISSING if x is None else f"{100 * x:.{digits}f} %"


def _with_ci(x: float | None, ci: Sequence[float | None] | None, main: str, bound: str) -> str:
    lo, hi = ci if ci else (None, None)
    if x is None:
        return MISSING
    if lo is None or hi is None:
        return main.format(100 * x)
    return f"{main.format(100 * x)} [{bound.format(100 * lo)}, {bound.format(100 * hi)}]"


def pct_ci(x: float | None, ci: Sequence[float | None] | None) -> str:
    return _with_ci(x, ci, "{:.1f} %", "{:.1f} %")


def pts(x: float | None) -> str:
    return MISSING if x is None else f"{100 * x:+.1f} pts"


def pts_ci(x: float | None, ci: Sequence[float | None] | None) -> str:
    return _with_ci(x, ci, "{:+.1f} pts", "{:+.1f}")


def within_pts(x: float) -> str:
    """A symmetric margin: `±4.1 pts`."""
    return f"±{100 * x:.1f} pts"

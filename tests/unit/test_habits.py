"""Habits the package keeps, read from its source: the formatter formats (no `# fmt: skip`)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "omni_tasks"

# None left: a call the formatter lays out badly reads better with keyword arguments, a small
# named type or a helper than with the formatter turned off.
FMT_SKIPS = 0


def test_fmt_skips_do_not_grow() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "fmt: skip" in line or "fmt: off" in line
    ]
    assert len(found) <= FMT_SKIPS, "\n".join(found)

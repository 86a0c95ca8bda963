"""Every command's `--help` at 80 columns: no line past the edge, each paragraph of its
description wrapped by the terminal's width (a docstring's own line breaks inside a sentence
are not kept), the commonest options name what they take (`--nightly DATE`, not `<str>`), no
option shows a bare type (`--limit N`, not `<int>`) and a flag shows none (`--json`, not
`--json <bool>`)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import pytest
import typer
from typer.testing import CliRunner

from omni_tasks.cli import app

WIDTH = 80
METAVARS = {
    "--nightly": "DATE",
    "--branch": "BRANCH",
    "--benchmark": "BENCHMARK",
    "--model": "MODEL",
    "--lane": "LANE",
    "--note": "TEXT",
    "--by": "NAME",
    "--link": "URL",
}


def commands(cmd: object = None, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    cmd = cmd or typer.main.get_command(app)
    yield path
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from commands(sub, (*path, name))


ALL = list(commands())


def early_breaks(help_text: str) -> list[str]:
    """Lines of the description (above the first panel) that end although the next line's
    first word would have fitted: a line break kept from the docstring."""
    lines = help_text.splitlines()
    start = next(i for i, line in enumerate(lines) if "Usage:" in line) + 1
    end = next((i for i, line in enumerate(lines) if line.startswith("╭")), len(lines))
    text = [line.strip() for line in lines[start:end]]
    room = WIDTH - 2  # Rich pads the description by one column each side
    return [
        a for a, b in itertools.pairwise(text) if a and b and len(a) + 1 + len(b.split()[0]) <= room
    ]


@pytest.mark.parametrize("path", ALL, ids=[" ".join(p) or "omni-tasks" for p in ALL])
def test_help_fits_80_columns_rewrapped_with_real_metavars(path: tuple[str, ...]) -> None:
    out = CliRunner(env={"COLUMNS": str(WIDTH)}).invoke(app, [*path, "--help"])
    assert out.exit_code == 0, out.output
    assert max(len(line) for line in out.output.splitlines()) <= WIDTH, out.output
    assert early_breaks(out.output) == [], out.output
    for option, metavar in METAVARS.items():
        shown = re.findall(rf"│ [ *]*{option} +(\S+)", out.output)
        assert all(m == metavar for m in shown), (option, shown)
    assert "<bool>" not in out.output, out.output
    assert re.findall(r"│ [ *]*(--[\w-]+ +<\S+)", out.output) == [], out.output
    assert re.search(r"│ [ *]*--help +Show this message", out.output), out.output


def test_the_commands_are_walked() -> None:
    assert ("gate",) in ALL and ("alerts", "list") in ALL and ("runs", "list") in ALL

"""The docs' command reference (`docs/users/cli-reference.md`), generated from the CLI itself:
every command and group with its help, usage and options. `make docs` runs `--check`, so a
command, option or help text changed without regenerating the page fails the docs build. A
docs tool, not part of the package (like `tests.conformance.latest`).

    python -m tests.cli_reference docs/users/cli-reference.md           # write it
    python -m tests.cli_reference docs/users/cli-reference.md --check   # or fail on drift
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

PROG = "omni-tasks"
HEADER = (
    "# Command reference\n\n"
    "Every `omni-tasks` command with its options, generated from the CLI "
    "(`python -m tests.cli_reference docs/users/cli-reference.md`; `make docs` fails when "
    "this page is stale). [Every command](commands.md) says what each is for, one line each.\n"
)


def walk(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Each command and group under `cmd`, depth first, by name."""
    yield path, cmd
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from walk(sub, (*path, name))


def _prose(text: str | None) -> str:
    """A docstring as Markdown paragraphs, each on one line (as `--help` rewraps them)."""
    paragraphs = inspect.cleandoc(text or "").split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _option_rows(cmd: Any, ctx: Any) -> list[str]:
    rows = []
    for p in cmd.get_params(ctx):  # each option's metavar set (common._show_values)
        if getattr(p, "hidden", False) or p is cmd.get_help_option(ctx):
            continue
        names = ", ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts])
        if p.param_type_name == "argument":
            names = f"`{p.name.upper()}`"
        takes = p.display_type_rich(ctx) or ""
        notes = []
        if p.required:
            notes.append("required")
        elif p.default not in (None, False, (), []) and not callable(p.default):
            notes.append(f"default: `{p.default}`")
        help_text = _cell(p.help or "") + (f" ({'; '.join(notes)})" if notes else "")
        rows.append(f"| {names} | {_cell(takes).strip('<>')} | {help_text} |")
    return rows


def render(app: typer.Typer) -> str:
    root = typer.main.get_command(app)
    out = [HEADER]
    for path, cmd in walk(root):
        name = " ".join((PROG, *path))
        ctx = cmd.make_context(name, [], resilient_parsing=True)
        usage = " ".join([name, *cmd.collect_usage_pieces(ctx)])
        out.append(f"\n## `{name}`\n\n{_prose(cmd.help)}\n\n```text\n{usage}\n```\n")
        subs = getattr(cmd, "commands", {})
        if subs:
            out.append("\n| command | what it does |\n|---|---|")
            for sub_name, sub in sorted(subs.items()):
                anchor = _anchor(f"{name} {sub_name}")
                first = _prose(sub.help).split("\n\n")[0]
                out.append(f"| [`{sub_name}`](#{anchor}) | {_cell(first)} |")
            out.append("")
        rows = _option_rows(cmd, ctx)
        if rows:
            out.append("\n| option | takes | what it does |\n|---|---|---|")
            out.extend(rows)
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def _anchor(heading: str) -> str:
    """The id Python-Markdown's toc gives a `## \\`HEADING\\`` heading."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", heading).strip().lower())


def main(argv: list[str]) -> int:
    from omni_tasks.cli import app

    page, check = Path(argv[0]), "--check" in argv[1:]
    text = render(app)
    if check:
        if not page.is_file() or page.read_text(encoding="utf-8") != text:
            sys.stderr.write(f"{page} is stale: run `python -m tests.cli_reference {page}`\n")
            return 1
        return 0
    page.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

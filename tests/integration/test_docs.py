"""The docs as a newcomer meets them: a README of at most 150 lines that points into docs/,
every page in mkdocs' nav, and every `omni-tasks` command a page shows in a bash block run as
written (paths under /backups become a temporary directory), each exiting 0."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml
from typer.testing import CliRunner

from omni_tasks.cli import app
from omni_tasks.config import reset_settings
from tests.conftest import scratch_database

REPO = Path(__file__).resolve().parents[2]


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def shown_commands() -> list[tuple[Path, str]]:
    """Each `omni-tasks …` line of a ```bash block, in page order, its comment dropped."""
    out = []
    for page in _pages():
        for block in re.findall(r"```bash\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            for line in block.splitlines():
                line = line.split("  #", 1)[0].strip()
                if re.match(r"^(\.venv/bin/)?omni-tasks\b", line):
                    out.append((page, line))
    return out


def test_the_readme_is_a_landing_page_and_every_page_is_in_the_nav() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    assert "make demo" in readme and "make test" in readme
    for link in re.findall(r"\]\((docs/[^)#]+)\)", readme):
        assert (REPO / link).is_file(), link
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]
    listed = set(re.findall(r"'([\w/-]+\.md)'", repr(nav)))
    pages = {str(p.relative_to(REPO / "docs")) for p in (REPO / "docs").rglob("*.md")}
    assert pages == listed, pages ^ listed


def test_every_command_the_docs_show_runs_as_written(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    commands = shown_commands()
    assert len(commands) >= 8, commands  # the pages do show commands
    with scratch_database("omni_docs") as dsn:
        monkeypatch.setenv("OMNI_DATABASE_URL", dsn)
        monkeypatch.setenv("OMNI_HOME", str(tmp_path / "home"))
        monkeypatch.delenv("OMNI_NIGHTLY_CONFIG", raising=False)
        reset_settings()
        runner = CliRunner()
        for page, line in commands:
            args = shlex.split(line.replace("/backups/", f"{tmp_path}/backups/"))[1:]
            out = runner.invoke(app, args)
            assert out.exit_code == 0, (page.name, line, out.output[-2000:])
        reset_settings()

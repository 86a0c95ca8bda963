"""The docs as a newcomer meets them: a README of at most 150 lines that points into docs/,
every page in mkdocs' nav, the strict build failing on a broken link or anchor, the command
reference as the CLI is now, and every `omni-tasks` command a page shows in a bash block run as
written (paths under /backups become a temporary directory), each exiting 0."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from typer.testing import CliRunner

from omni_tasks.cli import app
from omni_tasks.config import get_settings
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
        get_settings.cache_clear()
        runner = CliRunner()
        for page, line in commands:
            args = shlex.split(line.replace("/backups/", f"{tmp_path}/backups/"))[1:]
            out = runner.invoke(app, args)
            assert out.exit_code == 0, (page.name, line, out.output[-2000:])
        get_settings.cache_clear()


def _mkdocs(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_strict_build_passes_and_fails_on_a_broken_anchor(tmp_path: Path) -> None:
    built = _mkdocs(REPO, tmp_path / "site")
    assert built.returncode == 0, built.stderr[-3000:]
    copy = tmp_path / "copy"
    shutil.copytree(REPO / "docs", copy / "docs")
    shutil.copy(REPO / "mkdocs.yml", copy / "mkdocs.yml")
    page = copy / "docs" / "users" / "commands.md"
    page.write_text(page.read_text() + "\n[gate](cli-reference.md#omni-tasks-no-such-command)\n")
    broken = _mkdocs(copy, tmp_path / "site2")
    assert broken.returncode != 0 and "#omni-tasks-no-such-command" in broken.stderr


def test_the_command_reference_is_the_cli_as_it_is() -> None:
    """Every command and group has its section, with every option it takes; the page on disk
    is what the generator writes now (else `make docs` fails the same way)."""
    import typer

    from tests.cli_reference import main, walk

    page = (REPO / "docs" / "users" / "cli-reference.md").read_text(encoding="utf-8")
    for path, cmd in walk(typer.main.get_command(app)):
        section = page.split(f"## `{' '.join(('omni-tasks', *path))}`\n", 1)
        assert len(section) == 2, path
        body = section[1].split("\n## ", 1)[0]
        for param in cmd.params:
            assert all(f"`{o}`" in body for o in param.opts if o.startswith("-")), (path, param)
    assert "| `--nightly` | DATE |" in page.split("## `omni-tasks gate`")[1].split("\n## ")[0]
    assert main([str(REPO / "docs" / "users" / "cli-reference.md"), "--check"]) == 0

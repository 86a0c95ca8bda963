"""The built wheel ships every SQL statement: an installed omni-tasks finds its migrations and
queries without the repository (sql/ stays one top-level place; omni_tasks/sql links to it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_wheel_carries_sql_and_an_install_reads_it(tmp_path: Path) -> None:
    # Built from a clean copy of the sources: an in-tree build would also ship whatever the
    # editable install's egg-info and an earlier build/ list, and hide a missing package-data.
    src = tmp_path / "src"
    shutil.copytree(
        REPO,
        src,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "build", "*.egg-info", "__pycache__", ".*_cache", "site", "bench"
        ),
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "dist"),
            str(src),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = (tmp_path / "dist").glob("omni_tasks-*.whl")
    shipped = {n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".sql")}
    expected = {
        f"omni_tasks/sql/{p.relative_to(REPO / 'sql')}" for p in (REPO / "sql").rglob("*.sql")
    }
    assert shipped == expected
    assert "omni_tasks/templates/report.html" in zipfile.ZipFile(wheel).namelist()  # the report
    # Every data file of the package (rules, gate tables, ablations, policies, demo sets).
    data = {
        str(p.relative_to(REPO))
        for p in (REPO / "omni_tasks").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc", ".sql") and "__pycache__" not in p.parts
    }
    assert data and data <= set(zipfile.ZipFile(wheel).namelist()), data - set(
        zipfile.ZipFile(wheel).namelist()
    )

    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = (
        "import omni_tasks, pathlib; from omni_tasks.store.migrate import MIGRATIONS_DIR, discover;"
        "from omni_tasks.store.queries import sql; sql('list_runs');"
        "print(omni_tasks.__file__, MIGRATIONS_DIR, len(discover(MIGRATIONS_DIR)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={"PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    module, migrations, count = out.stdout.split()
    assert module.startswith(str(site)) and migrations.startswith(str(site))
    assert int(count) == len(list((REPO / "sql" / "migrations").glob("*.sql")))

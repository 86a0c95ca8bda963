"""The built wheel ships every SQL statement: an installed omni-tasks finds its migrations and
queries without the repository (sql/ stays one top-level place; omni_tasks/sql links to it)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_wheel_carries_sql_and_an_install_reads_it(tmp_path: Path) -> None:
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
            str(REPO),
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

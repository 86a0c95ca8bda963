"""The built wheel is the product: installed into a fresh virtualenv (no editable path, no
repository on sys.path), `omni-tasks benchmarks list` and `omni-tasks demo --transcript-mode`
run from it, as a new user's install would. It ships every SQL statement (sql/ stays one
top-level place; omni_tasks/sql links to it), every data file the code reads, and the DAG
files and plugins the demo runs.

The fresh venv gets its third-party dependencies from the project's venv by a path entry (the
machine has no index to install them from again); that directory's `.pth` files, the editable
install's among them, are not processed for a path entry, so `omni_tasks` is the wheel's."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Built from a clean copy of the sources: an in-tree build would also ship whatever the
    # editable install's egg-info and an earlier build/ list, and hide a missing package-data.
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(
        REPO,
        src,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "build", "*.egg-info", "__pycache__", ".*_cache", "site", "bench"
        ),
    )
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "-o", str(tmp / "dist")],
        cwd=src,
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = (tmp / "dist").glob("omni_tasks-*.whl")
    return built


@pytest.fixture(scope="module")
def fresh_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    deps = site.getsitepackages()[0]
    (Path(purelib) / "project_dependencies.pth").write_text(deps + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--no-index", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )  # fmt: skip
    return venv


def test_the_wheel_carries_sql_data_and_dags(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n for n in names if n.endswith(".sql")}
    expected = {
        f"omni_tasks/sql/{p.relative_to(REPO / 'sql')}" for p in (REPO / "sql").rglob("*.sql")
    }
    assert shipped == expected
    assert "omni_tasks/templates/report.html" in names  # the report
    # Every data file of the package (rules, gate tables, ablations, policies, demo sets).
    data = {
        str(p.relative_to(REPO))
        for p in (REPO / "omni_tasks").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc", ".sql") and "__pycache__" not in p.parts
    }
    assert data and data <= names, data - names
    for folder in ("dags", "plugins"):
        files = {f"omni_tasks/{folder}/{p.name}" for p in (REPO / folder).glob("*.py")}
        assert files and files <= names, files - names


def test_every_data_file_the_code_opens_is_in_the_wheel(wheel: Path) -> None:
    """The package's own reads (`Path(__file__)…`, `resources.files(…)`) name files by
    literal; each named file must ship."""
    import re

    names = set(zipfile.ZipFile(wheel).namelist())
    literal = re.compile(r"""["']([\w./-]+\.(?:yaml|json|lst|html|sql|parquet))["']""")
    opened = set()
    for path in (REPO / "omni_tasks").rglob("*.py"):
        for name in literal.findall(path.read_text(encoding="utf-8")):
            candidates = [p for p in (REPO / "omni_tasks").rglob(Path(name).name) if p.is_file()]
            opened.update(str(c.relative_to(REPO)) for c in candidates)
    assert opened, "no data file named in the package"
    assert opened <= names, sorted(opened - names)


def test_an_install_from_the_wheel_runs_the_cli_and_the_demo(
    fresh_venv: Path, db, results_dsn: str, tmp_path: Path
) -> None:
    exe = fresh_venv / "bin" / "omni-tasks"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMNI_", "AIRFLOW"))}
    env.update(OMNI_DATABASE_URL=results_dsn, OMNI_HOME=str(tmp_path / "home"), COLUMNS="120")
    probe = "import omni_tasks; print(omni_tasks.__file__)"
    where = subprocess.run(
        [str(fresh_venv / "bin" / "python"), "-c", probe],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert where.startswith(str(fresh_venv)), where  # the wheel's, not the checkout's

    listed = subprocess.run(
        [str(exe), "benchmarks", "list", "--json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr[-3000:]
    by_id = {b["id"]: b for b in json.loads(listed.stdout)}
    assert {"seed_tts_en", "daily_omni", "duplex_eval"} <= set(by_id)
    assert "bisect" in by_id["daily_omni"]["capabilities"]

    # What `make demo` runs, from the wheel: Airflow runs the nightly it ships, which ends in a
    # confirmed REGRESSED and one Slack message in the local outbox.
    out = subprocess.run(
        [str(exe), "demo", "--transcript-mode"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = out.stdout
    assert "SIMULATED" in text and "rebase-demo" in text
    assert "REGRESSED (confirmed)" in text
    assert "task run_branch (rebase)" in text and "task dispatch_alerts" in text
    outbox = list((tmp_path / "home" / "outbox").glob("*.json"))
    posts = [json.loads(f.read_text()) for f in outbox]
    assert [p["op"] for p in posts] == ["post"]
    assert "REGRESSED, confirmed" in posts[0]["payload"]["text"]
    assert (tmp_path / "home" / "dashboards" / "omni-seed-tts-trend.json").is_file()
    assert list((tmp_path / "home" / "reports").glob("*.html"))

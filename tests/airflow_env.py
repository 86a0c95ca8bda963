"""A private Airflow home for tests: SQLite metadata DB, our dags/ and plugins/."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def airflow_env(home: Path, results_dsn: str, omni_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "OMNI_"))}
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__DAGS_FOLDER=str(REPO / "dags"),
        AIRFLOW__CORE__PLUGINS_FOLDER=str(REPO / "plugins"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__UNIT_TEST_MODE="False",
        OMNI_DATABASE_URL=results_dsn,
        OMNI_HOME=str(omni_home),
    )
    return env


# This process's migrated SQLite metadata DB (`airflow db migrate` once, into a home of its own);
# each home gets a copy: a copy takes milliseconds, a migration seconds (tens on a busy machine).
_TEMPLATE: list[Path] = []


def migrate(env: dict[str, str]) -> None:
    """The home's metadata DB as `airflow db migrate` makes it (env from airflow_env: SQLite)."""
    assert "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN" not in env, "a copy serves SQLite homes only"
    if not _TEMPLATE:
        home = Path(tempfile.mkdtemp(prefix="airflow-template-"))
        atexit.register(shutil.rmtree, home, True)
        subprocess.run(
            [str(REPO / ".venv/bin/airflow"), "db", "migrate"],
            env={**env, "AIRFLOW_HOME": str(home)},
            check=True,
            capture_output=True,
            timeout=300,
        )
        _TEMPLATE.append(home / "airflow.db")
    home = Path(env["AIRFLOW_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_TEMPLATE[0], home / "airflow.db")


def dags_test(
    env: dict[str, str], dag_id: str, date: str, conf: str, *, every_dag: bool = False
) -> subprocess.CompletedProcess[str]:
    """`airflow dags test` of `dag_id`, reading only the DAG file named after it (Airflow's
    --dagfile-path): the whole folder costs every file's parse and serialization, a third of a
    run. `every_dag`: the folder, for a run that triggers another DAG (which must be in the
    metadata DB)."""
    path = Path(env["AIRFLOW__CORE__DAGS_FOLDER"]) / f"{dag_id}.py"
    only = [] if every_dag or not path.exists() else ["-f", str(path)]
    return subprocess.run(
        [str(REPO / ".venv/bin/airflow"), "dags", "test", dag_id, date, "-c", conf, *only],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )

"""A real Airflow 3 deployment for tests: api-server, scheduler, dag-processor (and Celery
workers), all on loopback, metadata in a private Postgres database, started and stopped here."""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / ".venv" / "bin"


def _sa_url(scheme: str, parts: dict[str, Any], db: str) -> str:
    """A SQLAlchemy URL for a database of the admin DSN's server (TCP, or the socket dir of
    the embedded server that tests use when no system Postgres answers)."""
    user, host = parts.get("user", "postgres"), str(parts.get("host", "127.0.0.1"))
    port = parts.get("port", 5432)
    if host.startswith("/"):
        return f"{scheme}://{user}@/{db}?host={host}&port={port}"
    return f"{scheme}://{user}@{host}:{port}/{db}"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    env: dict[str, str]
    api: str
    meta_dsn: str
    logs: Path

    def airflow(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "airflow"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def token(self) -> str:
        r = httpx.get(f"{self.api}/auth/token", timeout=30)
        r.raise_for_status()
        return str(r.json()["access_token"])

    def wait_for_run(self, dag_id: str, run_id: str, timeout: float = 600) -> str:
        deadline = time.monotonic() + timeout
        headers = {"Authorization": f"Bearer {self.token()}"}
        while time.monotonic() < deadline:
            r = httpx.get(
                f"{self.api}/api/v2/dags/{dag_id}/dagRuns/{run_id}", headers=headers, timeout=30
            )
            state = r.json().get("state") if r.status_code == 200 else None
            if state in ("success", "failed"):
                return str(state)
            time.sleep(1)
        raise TimeoutError(
            f"{dag_id} {run_id} did not finish in {timeout:g} s; logs in {self.logs}"
        )

    def trigger(
        self,
        dag_id: str,
        run_id: str,
        logical_date: str | None,
        conf: dict[str, object],
        *,
        gpu_slots: int = 4,
    ) -> None:
        """As an operator does it, through the REST API: the GPU pool set, the DAG parsed and
        unpaused, a run posted. (Not the `airflow` CLI: each call is a Python start with every
        provider loaded, tens of seconds on a busy two-core machine.)"""
        headers = {"Authorization": f"Bearer {self.token()}"}
        pool = {"name": "gpu", "slots": gpu_slots, "description": "GPU slots"}
        r = httpx.post(f"{self.api}/api/v2/pools", headers=headers, timeout=30, json=pool)
        if r.status_code == 409:  # set before, on a cluster shared between tests
            r = httpx.patch(f"{self.api}/api/v2/pools/gpu", headers=headers, timeout=30, json=pool)
        assert r.status_code in (200, 201), r.text
        self.wait_for_dag(dag_id)
        dag = f"{self.api}/api/v2/dags/{dag_id}"
        r = httpx.patch(dag, headers=headers, timeout=30, json={"is_paused": False})
        assert r.status_code == 200, r.text
        r = httpx.post(
            f"{dag}/dagRuns",
            headers=headers,
            timeout=30,
            json={"dag_run_id": run_id, "logical_date": logical_date, "conf": conf},
        )
        assert r.status_code in (200, 201), r.text

    def wait_for_dag(self, dag_id: str, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        headers = {"Authorization": f"Bearer {self.token()}"}
        while time.monotonic() < deadline:
            r = httpx.get(f"{self.api}/api/v2/dags/{dag_id}", headers=headers, timeout=30)
            if r.status_code == 200:
                return
            time.sleep(1)
        raise TimeoutError(f"{dag_id} was not parsed in {timeout:g} s; logs in {self.logs}")


# admin DSN → a metadata database `airflow db migrate` made in this process; each cluster's is
# a copy of it (CREATE DATABASE … TEMPLATE: a fraction of a second, where a migration takes
# tens of seconds on a busy two-core machine). Dropped when the process exits.
_TEMPLATES: dict[str, str] = {}


def _migrated_template(admin_dsn: str) -> str:
    if admin_dsn not in _TEMPLATES:
        name = f"airflow_template_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(admin_dsn, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        atexit.register(_drop, admin_dsn, name)
        parts = conninfo_to_dict(make_conninfo(admin_dsn, dbname=name))
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
        with tempfile.TemporaryDirectory() as home:
            subprocess.run(
                [str(BIN / "airflow"), "db", "migrate"],
                env={
                    **env,
                    "AIRFLOW_HOME": home,
                    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": _sa_url(
                        "postgresql+psycopg2", parts, name
                    ),
                },
                check=True,
                capture_output=True,
                timeout=300,
            )
        _TEMPLATES[admin_dsn] = name
    return _TEMPLATES[admin_dsn]


def _drop(admin_dsn: str, name: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """Stop each service's process group: SIGTERM, then SIGKILL to those still running 15 s
    later. A service shuts down in under 10 s on a busy two-core machine; now and then one
    (the dag-processor, seen) never does, and each such stop waited out the whole grace."""
    for p in procs:
        with suppress(ProcessLookupError):
            os.killpg(p.pid, 15)
    deadline = time.monotonic() + 15
    for p in procs:
        try:
            p.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)


@contextmanager
def airflow_cluster(
    admin_dsn: str,
    dags: Path,
    tmp: Path,
    *,
    executor: str,
    workers: list[str] = (),
    extra_env: dict[str, str] | None = None,
    process_env: dict[str, dict[str, str]] | None = None,
) -> Iterator[Cluster]:
    """`process_env` adds variables to one service's process by its label (`api-server`,
    `scheduler`, `dag-processor`, `worker-QUEUE`): a worker on its own log folder, say."""
    name = f"airflow_meta_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{_migrated_template(admin_dsn)}"')
    parts = conninfo_to_dict(make_conninfo(admin_dsn, dbname=name))
    meta = _sa_url("postgresql+psycopg2", parts, name)
    port = _port()
    api = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        AIRFLOW_HOME=str(tmp / "airflow-home"),
        AIRFLOW__CORE__DAGS_FOLDER=str(dags),
        AIRFLOW__CORE__PLUGINS_FOLDER=str(REPO / "plugins"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__EXECUTOR=executor,
        AIRFLOW__CORE__EXECUTION_API_SERVER_URL=f"{api}/execution/",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS="True",
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=meta,
        AIRFLOW__API__HOST="127.0.0.1",
        AIRFLOW__API__PORT=str(port),
        AIRFLOW__API__BASE_URL=api,
        AIRFLOW__API_AUTH__JWT_SECRET=uuid.uuid4().hex,
        # Each DAG file parsed once, at start: no test edits one while its cluster runs (every
        # config a DAG reads at parse time is written before), and a re-parse every 5 s of the
        # eight files, each in a new process, cost about a fifth of a cluster test's CPU.
        AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL="3600",
        AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL="3600",
        AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC="1",
        AIRFLOW__CELERY__BROKER_URL="redis://127.0.0.1:6379/7",
        AIRFLOW__CELERY__RESULT_BACKEND=_sa_url("db+postgresql", parts, name),
        AIRFLOW__CELERY__WORKER_CONCURRENCY="2",
        # As production: the Celery main and its pool processes seal themselves.
        AIRFLOW__CELERY__CELERY_CONFIG_OPTIONS="omni_tasks.dag_support.celery_config.CELERY_CONFIG",
        # A private key space on the shared Redis: no other test's worker can take our tasks.
        AIRFLOW__CELERY_BROKER_TRANSPORT_OPTIONS__GLOBAL_KEYPREFIX=f"{name}:",
        **(extra_env or {}),
    )
    logs = tmp / "airflow-logs"
    logs.mkdir(parents=True, exist_ok=True)
    commands = {
        "api-server": ["api-server", "--port", str(port), "--host", "127.0.0.1"],
        "scheduler": ["scheduler"],
        "dag-processor": ["dag-processor"],
        **{
            f"worker-{q}": [
                "celery",
                "worker",
                "--queues",
                q,
                "--concurrency",
                "2",
                "--celery-hostname",
                f"{q}@%h",
            ]
            for q in workers
        },
    }
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for label, args in commands.items():
            fh = (logs / f"{label}.log").open("wb")
            # Each worker serves its logs on its own port (the default one would clash).
            penv = {
                **env,
                "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(_port()),
                **(process_env or {}).get(label, {}),
            }
            procs.append(
                subprocess.Popen(
                    [str(BIN / "airflow"), *args],
                    env=penv,
                    stdout=fh,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{api}/api/v2/monitor/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"api-server did not come up; logs in {logs}")
            time.sleep(1)
        yield Cluster(env, api, make_conninfo(admin_dsn, dbname=name), logs)
    finally:
        stop(procs)
        _drop(admin_dsn, name)

"""The compose stack, stood up without Docker: each Airflow service of docker-compose.yml is
started natively with that service's own environment and command from the file (its values
from a .env made as .env.example says), each in its own AIRFLOW_HOME as each container has its
own filesystem. Only what a container network provides is mapped: service host names to
loopback ports, the image's paths to this checkout, volumes to temporary directories (the
airflow-logs volume to one folder every service logs into, as the volume is in each container).
airflow-init's own script creates the volumes' folders and hands them to AIRFLOW_UID.

The nightly is triggered through the REST API with the FAB admin airflow-init created; it
succeeds on the Celery workers and its alert reaches a Slack fake. Without the compose file's
shared JWT secret the same stack cannot run a task."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import yaml
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from omni_tasks.synthesis.simulator import serve_in_thread
from tests.airflow_cluster import stop
from tests.conftest import ADMIN_DSN
from tests.fakes.grafana_api import GrafanaState, grafana_app
from tests.fakes.slack_api import SlackState, slack_app
from tests.integration.test_compose import env_file

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
SERVICES = (
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
    "airflow-worker",
    "airflow-gpu-worker",
)
_VAR = re.compile(r"\$\$|\$\{(\w+)(?::([-?])([^}]*))?\}")


def interpolate(value: str, dotenv: dict[str, str]) -> str:
    """Compose's interpolation: ${VAR}, ${VAR:-default}, ${VAR:?error}, and $$ for a $."""

    def one(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name, kind, arg = m.group(1), m.group(2), m.group(3)
        value = dotenv.get(name, "")
        if kind == "?" and not value:
            raise AssertionError(f"compose would refuse: {arg}")
        return value or (arg if kind == "-" else "")

    return _VAR.sub(one, value)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Stack:
    api: str
    logs: Path  # each service's stdout and stderr
    task_logs: Path  # the airflow-logs volume
    admin: tuple[str, str]
    meta_dsn: str

    def token(self) -> str:
        user, password = self.admin
        r = httpx.post(
            f"{self.api}/auth/token", json={"username": user, "password": password}, timeout=60
        )
        assert r.status_code in (200, 201), r.text[:500]
        return str(r.json()["access_token"])

    def log(self, service: str) -> str:
        return (self.logs / f"{service}.log").read_text(errors="replace")


def native(value: str, repl: dict[str, str]) -> str:
    """A container-side value as the native service sees it."""
    for old, new in repl.items():
        value = value.replace(old, new)
    return value


@contextmanager
def compose_stack(tmp: Path, compose: dict[str, Any], dotenv: dict[str, str]) -> Iterator[Stack]:
    names = {
        "airflow": f"cs_meta_{uuid.uuid4().hex[:8]}",
        "omni": f"cs_omni_{uuid.uuid4().hex[:8]}",
    }
    with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
        for db in names.values():
            admin.execute(f'CREATE DATABASE "{db}"')
    parts = conninfo_to_dict(ADMIN_DSN)
    host, port_pg = str(parts.get("host", "127.0.0.1")), parts.get("port", 5432)
    user = parts.get("user", "postgres")
    api_port = _port()
    redis_db = 11
    data, srv, task_logs = tmp / "omni-data", tmp / "srv", tmp / "airflow-logs"
    repl = {
        "http://airflow-apiserver:8080": f"http://127.0.0.1:{api_port}",
        # The test's Redis has no password: the URL keeps compose's shape, with the password
        # checked in tests/integration/test_compose.py.
        f"redis://:{dotenv['REDIS_PASSWORD']}@redis:6379/0": f"redis://127.0.0.1:6379/{redis_db}",
        "/opt/omni-tasks/dags": str(REPO / "dags"),
        "/opt/omni-tasks/plugins": str(REPO / "plugins"),
        "/var/lib/omni-tasks": str(data),
        "/opt/airflow/logs": str(task_logs),
        "/srv/omni": str(srv),
    }
    pg = re.compile(r"(\w+)://(\w+):([^@]*)@postgres:5432/(\w+)")

    def service_env(name: str) -> dict[str, str]:
        service = compose["services"][name]
        raw = service.get("environment") or {}
        env = {
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            "HOME": os.environ.get("HOME", "/root"),
            "LANG": "C.UTF-8",
        }
        for key, value in raw.items():
            value = native(interpolate(str(value), dotenv), repl)
            # Postgres by its service name: the test server (trust auth), a private database.
            value = pg.sub(
                lambda m: (
                    f"{m.group(1)}://{user}:{m.group(3)}@{host}:{port_pg}/{names[m.group(4)]}"
                ),
                value,
            )
            env[key] = value
        # What a container has of its own: a filesystem (AIRFLOW_HOME), a hostname (the API's
        # address and the worker's log port, which the compose network gives each container).
        env.update(
            AIRFLOW_HOME=str(tmp / "homes" / name),
            AIRFLOW__API__HOST="127.0.0.1",
            AIRFLOW__API__PORT=str(api_port),
            AIRFLOW__API__BASE_URL=f"http://127.0.0.1:{api_port}",
            AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT=str(_port()),
            AIRFLOW__CELERY_BROKER_TRANSPORT_OPTIONS__GLOBAL_KEYPREFIX=f"{names['airflow']}:",
            AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC="1",
            # Each DAG file parsed once, as in tests/airflow_cluster.py: nothing edits one while
            # the stack runs, and a re-parse (a new process per file) only costs CPU here.
            AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL="3600",
            AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL="3600",
        )
        # The logs volume is the images' AIRFLOW_HOME/logs, Airflow's default log folder.
        if any(str(v).startswith("airflow-logs:/opt/airflow/logs") for v in service["volumes"]):
            env["AIRFLOW__LOGGING__BASE_LOG_FOLDER"] = str(task_logs)
        return env

    def argv(name: str) -> list[str]:
        command = compose["services"][name]["command"]
        if isinstance(command, list):
            args = [native(interpolate(str(a), dotenv), repl) for a in command]
        else:
            args = shlex.split(native(interpolate(str(command), dotenv), repl))
        return args if args[0] == "bash" else [str(BIN / "airflow"), *args]

    logs = tmp / "logs"
    logs.mkdir(exist_ok=True)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        init = subprocess.run(
            argv("airflow-init"),
            env=service_env("airflow-init"),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert init.returncode == 0, init.stdout[-3000:] + init.stderr[-3000:]
        # The volumes belong to the user the services run as (the test runs them as root).
        for folder in (data, task_logs):
            owner = (folder.stat().st_uid, folder.stat().st_gid)
            assert owner == (int(dotenv["AIRFLOW_UID"]), 0), (folder, owner)
        for name in SERVICES:
            fh = (logs / f"{name}.log").open("wb")
            procs.append(
                subprocess.Popen(
                    argv(name),
                    env=service_env(name),
                    stdout=fh,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        api = f"http://127.0.0.1:{api_port}"
        deadline = time.monotonic() + 180
        while True:
            with suppress(httpx.HTTPError):
                if httpx.get(f"{api}/api/v2/monitor/health", timeout=5).status_code == 200:
                    break
            assert time.monotonic() < deadline, "api-server did not come up"
            time.sleep(1)
        login = (dotenv["AIRFLOW_ADMIN_USER"], dotenv["AIRFLOW_ADMIN_PASSWORD"])
        yield Stack(api, logs, task_logs, login, make_conninfo(ADMIN_DSN, dbname=names["airflow"]))
    finally:
        stop(procs)
        with psycopg.connect(ADMIN_DSN, autocommit=True) as admin_conn:
            for db in names.values():
                admin_conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


def _dotenv(tmp: Path, **extra: str) -> dict[str, str]:
    values = dict(
        line.split("=", 1) for line in env_file(tmp).read_text().splitlines() if "=" in line
    )
    return {**values, **extra}


def _trigger(stack: Stack, headers: dict[str, str]) -> str:
    deadline = time.monotonic() + 240
    while (
        httpx.get(f"{stack.api}/api/v2/dags/omni_nightly", headers=headers, timeout=60).status_code
        != 200
    ):
        assert time.monotonic() < deadline, "the nightly was not parsed"
        time.sleep(1)
    r = httpx.patch(
        f"{stack.api}/api/v2/dags/omni_nightly",
        json={"is_paused": False},
        headers=headers,
        timeout=60,
    )
    assert r.status_code == 200, r.text[:500]
    r = httpx.post(
        f"{stack.api}/api/v2/dags/omni_nightly/dagRuns",
        json={"dag_run_id": "compose1", "logical_date": "2026-11-20T02:00:00Z", "conf": {}},
        headers=headers,
        timeout=60,
    )
    assert r.status_code == 200, r.text[:500]
    return "compose1"


def _write_config(srv: Path) -> None:
    srv.mkdir(parents=True, exist_ok=True)
    (srv / "nightly.yaml").write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "branches": ["main", "rebase"],
                "baseline": "main",
                # rebase's server is down: the night still decides, and says so in Slack.
                "targets": {"main": "simulator:main", "rebase": "http://127.0.0.1:1"},
                "transcript_mode": True,
                "limit": 5,
            }
        )
    )


def test_the_compose_stack_runs_the_nightly_and_its_alert_reaches_slack(tmp_path: Path) -> None:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    _write_config(tmp_path / "srv")
    slack, grafana = SlackState(), GrafanaState()
    with (
        serve_in_thread(slack_app(slack)) as slack_url,
        serve_in_thread(grafana_app(grafana)) as grafana_url,
    ):
        dotenv = _dotenv(
            tmp_path,
            OMNI_SLACK_TOKEN="xoxb-compose-test",
            OMNI_SLACK_CHANNEL="C0NIGHTLY",
            OMNI_SLACK_BASE_URL=f"{slack_url}/api/",
        )
        # Grafana is a service of the stack too: its host name maps to the local fake.
        for name in SERVICES:
            compose["services"][name]["environment"]["OMNI_GRAFANA_URL"] = grafana_url
        with compose_stack(tmp_path, compose, dotenv) as stack:
            headers = {"Authorization": f"Bearer {stack.token()}"}
            run_id = _trigger(stack, headers)
            deadline, state = time.monotonic() + 600, None
            while time.monotonic() < deadline:
                try:  # a stack of six services on two cores answers slowly at times
                    r = httpx.get(
                        f"{stack.api}/api/v2/dags/omni_nightly/dagRuns/{run_id}",
                        headers=headers,
                        timeout=60,
                    )
                except httpx.TimeoutException:
                    continue
                state = r.json().get("state")
                if state in ("success", "failed"):
                    break
                time.sleep(1)
            assert state == "success", (state, stack.log("airflow-worker")[-3000:])
            # The GPU tasks (the runs, the same-morning re-run) ran on the GPU worker's queue,
            # the rest on the default worker.
            with psycopg.connect(stack.meta_dsn) as meta:
                queues = meta.execute(
                    "SELECT DISTINCT task_id LIKE 'run_branch%%' OR task_id LIKE 'rerun%%', queue"
                    " FROM task_instance WHERE run_id = %s",
                    (run_id,),
                ).fetchall()
            assert sorted(queues) == [(False, "default"), (True, "gpu")], queues
            # The GPU task's log is in the logs volume, where the api-server reads it from after
            # the GPU worker's container is gone.
            gpu_logs = list(
                stack.task_logs.glob(
                    f"dag_id=omni_nightly/run_id={run_id}/task_id=run_branch*/**/*.log"
                )
            )
            assert gpu_logs, sorted(p.name for p in stack.task_logs.rglob("*"))[:50]
    texts = json.dumps([m for m in slack.messages])
    assert "INFRA" in texts and "C0NIGHTLY" in texts, texts[:2000]


def test_without_the_shared_jwt_secret_no_task_can_run(tmp_path: Path) -> None:
    """The same stack with AIRFLOW__API_AUTH__JWT_SECRET removed from the compose file: each
    service signs or checks task tokens with its own secret, and the first task fails on the
    worker (apache/airflow #49646)."""
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    for name in (*SERVICES, "airflow-init"):
        compose["services"][name]["environment"].pop("AIRFLOW__API_AUTH__JWT_SECRET", None)
    _write_config(tmp_path / "srv")
    with compose_stack(tmp_path, compose, _dotenv(tmp_path)) as stack:
        headers = {"Authorization": f"Bearer {stack.token()}"}
        _trigger(stack, headers)
        deadline, states = time.monotonic() + 300, []
        while time.monotonic() < deadline:  # any run of the nightly (unpausing schedules one)
            with psycopg.connect(stack.meta_dsn) as meta:
                states = [
                    r[0]
                    for r in meta.execute(
                        "SELECT state FROM task_instance WHERE dag_id = 'omni_nightly'"
                    )
                ]
            if any(s in ("up_for_retry", "failed", "success") for s in states):
                break
            time.sleep(1)
        assert "success" not in states and any(s in ("up_for_retry", "failed") for s in states), (
            states
        )
        assert "Failed to validate JWT" in stack.log("airflow-apiserver")


pytestmark = pytest.mark.timeout(1200)

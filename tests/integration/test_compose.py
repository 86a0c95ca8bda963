"""docker-compose.yml: valid for Debian's docker-compose, and consistent with the code."""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess
from pathlib import Path

import yaml

from omni_tasks.config import Settings

REPO = Path(__file__).resolve().parents[2]


def env_file(tmp_path: Path, **without: str) -> Path:
    """A filled-in .env as an operator makes it from .env.example: every empty value gets a
    generated secret (a real Fernet key for the Fernet key)."""
    from cryptography.fernet import Fernet

    lines = []
    for line in (REPO / ".env.example").read_text().splitlines():
        name, eq, value = line.partition("=")
        if eq and not line.startswith("#") and name not in without:
            if not value:
                value = (
                    Fernet.generate_key().decode()
                    if "FERNET" in name
                    else secrets.token_urlsafe(24)
                )
            lines.append(f"{name}={value}")
    path = tmp_path / ".env"
    path.write_text("\n".join(lines) + "\n")
    return path


def _config(env: Path | None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("docker-compose")
    assert exe, "Debian's docker-compose is required (`apt-get install docker-compose`)"
    args = [exe, *(["--env-file", str(env)] if env else []), "-f", str(REPO / "docker-compose.yml")]
    return subprocess.run(
        [*args, "config", "--quiet"], capture_output=True, text=True, timeout=60, check=False
    )


def test_compose_file_validates_and_refuses_to_start_without_its_secrets(tmp_path: Path) -> None:
    assert _config(env_file(tmp_path)).returncode == 0
    # No literal password or key: without .env, compose stops naming what is missing.
    empty = tmp_path / "empty.env"
    empty.write_text("")
    out = _config(empty)
    assert out.returncode != 0 and "in .env" in out.stderr, out.stderr
    assert ".env" in (REPO / ".gitignore").read_text().split()  # the filled-in file stays local


def test_compose_is_fit_for_a_team() -> None:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = compose["services"]
    env = services["airflow-scheduler"]["environment"]
    # One JWT secret and one Fernet key for every Airflow service, from .env.
    for var in ("AIRFLOW__API_AUTH__JWT_SECRET", "AIRFLOW__CORE__FERNET_KEY"):
        assert str(env[var]).startswith("${") and ":?" in str(env[var]), var
        assert all(
            services[s]["environment"][var] == env[var]
            for s in services
            if s.startswith("airflow-")
        ), var
    assert env["AIRFLOW__CORE__AUTH_MANAGER"].endswith("FabAuthManager")
    # Passwords only by reference.
    for name, service in services.items():
        for key, value in (service.get("environment") or {}).items():
            if re.search(r"PASSWORD|SECRET|_CONN|SQL_ALCHEMY|DATABASE_URL|BACKEND", key) and value:
                assert "${" in str(value), (name, key, value)
    for name, service in services.items():
        assert "healthcheck" in service or name == "airflow-init", name
        assert service.get("restart") == ("no" if name == "airflow-init" else "unless-stopped"), (
            name
        )
        tag = str(service.get("image", "")).rsplit(":", 1)[-1]
        assert re.search(r"\d", tag) and tag != "latest", (name, service.get("image"))
        if name.startswith("airflow-") and name != "airflow-init":
            init = service["depends_on"]["airflow-init"]
            assert init == {"condition": "service_completed_successfully"}, name
            assert any(v.endswith(":/srv/omni:ro") for v in service["volumes"]), name
    assert env["OMNI_TRUSTED_ROOTS"] == '["/srv/omni"]'
    assert {"pg-data", "omni-data", "grafana-data"} <= set(compose["volumes"])
    assert any(v.startswith("grafana-data:") for v in services["grafana"]["volumes"])
    gpu = (REPO / "docker" / "Dockerfile.gpu").read_text()
    assert gpu.startswith("#") and "FROM nvidia/cuda:" in gpu and "[airflow,whisper]" in gpu
    # The sandbox is in both images, and code under test cannot write the worker's code.
    for dockerfile in ("Dockerfile", "Dockerfile.gpu"):
        assert "bubblewrap" in (REPO / "docker" / dockerfile).read_text(), dockerfile
    chowned = " ".join(re.findall(r"chown[^\n&]*", gpu))
    assert "/opt/venv" not in chowned and "/srv/omni" not in chowned, chowned
    # Redis takes a password from .env, and the broker URL carries it.
    assert "--requirepass" in services["redis"]["command"]
    assert env["AIRFLOW__CELERY__BROKER_URL"].startswith("redis://:${REDIS_PASSWORD:?")
    worker_env = services["airflow-gpu-worker"]["environment"]
    assert worker_env["OMNI_SANDBOX"] == "bwrap"
    assert env["AIRFLOW__CELERY__CELERY_CONFIG_OPTIONS"].endswith("celery_config.CELERY_CONFIG")


def test_compose_matches_settings_provisioning_and_dags() -> None:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {
        "airflow-apiserver",
        "airflow-scheduler",
        "airflow-dag-processor",
        "airflow-triggerer",
        "airflow-worker",
        "airflow-gpu-worker",
        "postgres",
        "redis",
        "grafana",
    } <= set(services)
    env = services["airflow-scheduler"]["environment"]
    from omni_tasks.deployment import ENV as CONFIG_ENV

    known = {f"OMNI_{name.upper()}" for name in Settings.model_fields} | {CONFIG_ENV}
    omni_vars = {k for k in env if k.startswith("OMNI_")}
    assert omni_vars <= known, omni_vars - known  # every OMNI_* is a real setting
    # Links people click point where a browser can go, never at a container name.
    for var in ("OMNI_GRAFANA_PUBLIC_URL", "OMNI_PUBLIC_URL", "OMNI_AIRFLOW_URL"):
        default = re.sub(r"^\$\{\w+:-(.*)\}$", r"\1", str(env[var]))
        host = re.sub(r"^https?://([^:/]+).*$", r"\1", default)
        assert host not in services, (var, default)
    # The GPU worker consumes the queue the DAGs put GPU tasks on, with a device reservation.
    gpu = services["airflow-gpu-worker"]
    assert "--queues ${OMNI_GPU_QUEUES:-gpu}" in gpu["command"]  # the default lane's queue
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    # The nightly's GPU tasks go to their series' lane's queue (test_dags.py reads it off the
    # parsed DAG, per lane); a one-series config's lane is the default, whose queue is `gpu`.
    from omni_tasks.deployment import DEFAULT_LANES

    assert {lane.queue for lane in DEFAULT_LANES.values()} == {"gpu"}
    # Grafana gets every variable its datasource provisioning interpolates.
    datasource = (REPO / "dashboards/provisioning/datasources/omni-results.yaml").read_text()
    needed = set(re.findall(r"\$\{(\w+)\}", datasource))
    assert needed <= set(services["grafana"]["environment"]), needed
    mounts = " ".join(services["grafana"]["volumes"])
    assert "./dashboards/provisioning:/etc/grafana/provisioning" in mounts
    # The pool the DAGs use is created at init with room for at least one two-GPU server.
    assert "pools set gpu" in services["airflow-init"]["command"]

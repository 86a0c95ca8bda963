"""docker-compose.yml: valid for Debian's docker-compose, and consistent with the code."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import yaml

from omni_tasks.config import Settings

REPO = Path(__file__).resolve().parents[2]


def test_compose_file_validates() -> None:
    exe = shutil.which("docker-compose")
    assert exe, "Debian's docker-compose is required (`apt-get install docker-compose`)"
    out = subprocess.run(
        [exe, "-f", str(REPO / "docker-compose.yml"), "config", "--quiet"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr


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
    known = {f"OMNI_{name.upper()}" for name in Settings.model_fields}
    omni_vars = {k for k in env if k.startswith("OMNI_")}
    assert omni_vars <= known, omni_vars - known  # every OMNI_* is a real setting
    # Links people click point where a browser can go, never at a container name.
    for var in ("OMNI_GRAFANA_PUBLIC_URL", "OMNI_PUBLIC_URL", "OMNI_AIRFLOW_URL"):
        default = re.sub(r"^\$\{\w+:-(.*)\}$", r"\1", str(env[var]))
        host = re.sub(r"^https?://([^:/]+).*$", r"\1", default)
        assert host not in services, (var, default)
    # The GPU worker consumes the queue the DAGs put GPU tasks on, with a device reservation.
    gpu = services["airflow-gpu-worker"]
    assert "--queues gpu" in gpu["command"]
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    # The nightly's GPU tasks go to their lane's queue; a one-series config's lane is `gpu`.
    from omni_tasks.deployment import DEFAULT_LANES

    assert "queue=lane.queue" in (REPO / "dags" / "seed_tts_nightly.py").read_text()
    assert {lane.queue for lane in DEFAULT_LANES.values()} == {"gpu"}
    # Grafana gets every variable its datasource provisioning interpolates.
    datasource = (REPO / "dashboards/provisioning/datasources/omni-results.yaml").read_text()
    needed = set(re.findall(r"\$\{(\w+)\}", datasource))
    assert needed <= set(services["grafana"]["environment"]), needed
    mounts = " ".join(services["grafana"]["volumes"])
    assert "./dashboards/provisioning:/etc/grafana/provisioning" in mounts
    # The pool the DAGs use is created at init with room for at least one two-GPU server.
    assert "pools set gpu" in services["airflow-init"]["command"]

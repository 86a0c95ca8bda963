"""A GPU task's log, read through the REST API as a person reads last night's log, when the
task ran on a GPU worker started with the environment deploy/k8s/gpu-workers.yaml gives it:
its own log folder (its pod's disk), served by its log server, which answers only requests
signed with the shared API secret key the manifest mounts."""

from __future__ import annotations

import re
import secrets
from pathlib import Path

import httpx
import yaml

from tests.airflow_cluster import REPO, _port, airflow_cluster
from tests.conftest import ADMIN_DSN

CONFIG = """version: 1
branches: [main, rebase]
baseline: main
targets: {main: "simulator:main", rebase: "simulator:rebase"}
transcript_mode: true
limit: 5
"""


def _manifest_secret_key(secret_dir: Path, key: str) -> dict[str, str]:
    """The API secret key as the GPU worker's manifest gives it, with its mounted file here."""
    docs = yaml.safe_load_all((REPO / "deploy" / "k8s" / "gpu-workers.yaml").read_text())
    worker = next(d for d in docs if d and d["kind"] in ("StatefulSet", "Deployment"))
    env = {e["name"]: e for e in worker["spec"]["template"]["spec"]["containers"][0]["env"]}
    named = [n for n in env if n.startswith("AIRFLOW__API__SECRET_KEY")]
    assert named, "the GPU worker's manifest gives it no AIRFLOW__API__SECRET_KEY"
    (name,) = named
    if not name.endswith("_CMD"):
        return {name: key}  # valueFrom a Secret: the same value
    cmd = env[name]["value"]
    (path,) = re.findall(r"/var/run/secrets/\S+", cmd)
    local = secret_dir / Path(path).name
    local.write_text(key)
    return {name: cmd.replace(path, str(local))}


def test_a_gpu_tasks_log_is_read_through_the_api_from_its_worker(
    db, results_dsn: str, tmp_path: Path
) -> None:
    config = tmp_path / "nightly.yaml"
    config.write_text(CONFIG)
    key = secrets.token_urlsafe(32)
    (tmp_path / "secrets").mkdir()
    log_port = str(_port())
    extra = {
        "OMNI_NIGHTLY_CONFIG": str(config),
        "OMNI_DATABASE_URL": results_dsn,
        "OMNI_HOME": str(tmp_path / "omni-home"),
        "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False",
    }
    gpu_logs = tmp_path / "gpu-worker-disk"
    with airflow_cluster(
        ADMIN_DSN,
        REPO / "dags",
        tmp_path,
        executor="CeleryExecutor",
        workers=["default", "gpu"],
        extra_env=extra,
        process_env={
            # The API server reaches worker log servers on this port, signing with the key.
            "api-server": {
                "AIRFLOW__API__SECRET_KEY": key,
                "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": log_port,
            },
            # The GPU worker: its own disk, its log server, its key as the manifest gives it.
            "worker-gpu": {
                "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(gpu_logs),
                "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": log_port,
                **_manifest_secret_key(tmp_path / "secrets", key),
            },
        },
    ) as c:
        c.trigger("omni_nightly", "logs", "2026-11-22T02:00:00Z", {})
        auth = {"Authorization": f"Bearer {c.token()}"}
        assert c.wait_for_run("omni_nightly", "logs", timeout=600) == "success"
        tis = httpx.get(
            f"{c.api}/api/v2/dags/omni_nightly/dagRuns/logs/taskInstances",
            headers=auth,
            timeout=30,
        ).json()["task_instances"]
        gpu = [t for t in tis if t["task_id"].endswith("run_branch") and t["state"] == "success"]
        assert gpu, [(t["task_id"], t["queue"]) for t in tis]
        ti = gpu[0]
        # The log lives only on the GPU worker's disk…
        assert list(gpu_logs.rglob("*.log")) and not list(
            (tmp_path / "airflow-home" / "logs").rglob(f"*{ti['task_id']}*/*.log")
        )
        index = f"?map_index={ti['map_index']}" if ti["map_index"] >= 0 else ""
        read = httpx.get(
            f"{c.api}/api/v2/dags/omni_nightly/dagRuns/logs/taskInstances/"
            f"{ti['task_id']}/logs/{ti['try_number']}{index}",
            headers={**auth, "Accept": "application/json"},
            timeout=60,
        )
        assert read.status_code == 200, read.text[:500]
        text = str(read.json())
        # …and the API server fetched it from there: the task's own lines, not an error.
        assert "Task instance is in running state" not in text
        assert "Could not read served logs" not in text and "403" not in text, text[:2000]
        assert "Done. Returned value" in text, text[:2000]
        # Long work is not silent: the branch's progress, with counts, is in its log.
        progress = re.findall(r"\w+ [\w.-]+: \d+/\d+ \(\d+ %\)", text)
        assert len(progress) >= 2, text[:3000]

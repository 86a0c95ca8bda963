"""A GPU task's log, read through the REST API as a person reads last night's log, when the
task ran on a GPU worker started with the environment deploy/k8s/gpu-workers.yaml gives it:
its own log folder (its pod's disk), served by its log server, which answers only requests
signed with the shared API secret key the manifest mounts. The night and its Celery cluster
(shared with test_sandbox.py): tests/reliability/conftest.py."""

from __future__ import annotations

import re

import pytest

from tests.reliability.conftest import CeleryNight, log_key


@pytest.mark.xdist_group("celery_night")
def test_a_gpu_tasks_log_is_read_through_the_api_from_its_worker(
    celery_night: CeleryNight,
) -> None:
    night = celery_night
    assert night.state == "success"
    tis = night.task_instances
    gpu = [t for t in tis if str(t["task_id"]).endswith("run_branch") and t["state"] == "success"]
    assert gpu, [(t["task_id"], t["queue"]) for t in tis]
    ti = gpu[0]
    # The log lives only on the GPU worker's disk…
    assert list(night.gpu_logs.rglob("*.log")) and not list(
        (night.cluster / "airflow-home" / "logs").rglob(f"*{ti['task_id']}*/*.log")
    )
    read = night.logs[log_key(ti)]
    assert read.status_code == 200, read.text[:500]
    text = str(read.json())
    # …and the API server fetched it from there: the task's own lines, not an error. A 403 from
    # the worker's log server reads as Airflow's secret_key advice (file_task_handler); a bare
    # "403" also matched a timestamp's microseconds (…49.403759Z) and failed a green night.
    assert "Task instance is in running state" not in text
    assert "Could not read served logs" not in text, text[:2000]
    assert "make sure that all your Airflow components" not in text, text[:2000]
    assert "Done. Returned value" in text, text[:2000]
    # Long work is not silent: the branch's progress, with counts, is in its log.
    progress = re.findall(r"\w+ [\w.-]+: \d+/\d+ \(\d+ %\)", text)
    assert len(progress) >= 2, text[:3000]

"""One night on a real Celery deployment, shared by the tests that read it (a cluster costs
minutes on two cores): test_sandbox.py asks whether the hostile server it launches found
anything, test_gpu_worker_logs.py reads a GPU task's log through the API. Both tests carry the
`celery_night` xdist group, so `make test` (--dist loadgroup) runs them on one worker and the
night runs once.

The cluster is the production shape both need: `airflow celery worker`s exec'd with every
planted secret, the main branch served by the hostile `vllm`, and the GPU worker on its own
log folder (its pod's disk) with the API secret key as deploy/k8s/gpu-workers.yaml mounts it.
What can be seen only while it runs (the Celery processes' environ blocks, the task instances,
their logs through the API) is read before it stops, so it does not sit parsing DAGs through
the rest of the session.

Also one LocalExecutor cluster (`local_cluster`) for the tests that only need a real scheduler
and api-server with our DAGs and no deployment config: test_gpu_pool.py's probe DAG, the trigger
forms of test_submit_check_api.py and test_hostile_input.py. They carry the `local_cluster`
xdist group, so it starts once; it stops after the last of them, not at the session's end."""

from __future__ import annotations

import re
import secrets
import textwrap
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import yaml

from omni_tasks.store.db import connect
from omni_tasks.store.migrate import migrate
from tests.airflow_cluster import REPO, Cluster, _port, airflow_cluster
from tests.conftest import ADMIN_DSN, scratch_database
from tests.fakes.hostile import VALUES, attack_targets, cmdline, environ, nightly_config

DAG, RUN, LOGICAL_DATE = "omni_nightly", "hostile", "2026-11-21T02:00:00Z"


@dataclass(frozen=True)
class CeleryNight:
    tmp: Path  # the attack's home: its targets, its `vllm`, omni-home/
    cluster: Path  # the cluster's files: airflow-home/, airflow-logs/, gpu-worker-disk/
    results_dsn: str  # the night's own results database
    targets: list[Path]  # what the attack tried to write
    state: str  # the DAG run's end state
    celery: dict[str, str]  # cmdline → environ block of each Celery process, while it ran
    task_instances: list[dict[str, object]]
    logs: dict[str, httpx.Response]  # each run_branch task's log as the API served it

    @property
    def gpu_logs(self) -> Path:
        return self.cluster / "gpu-worker-disk"


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


def log_key(ti: dict[str, object]) -> str:
    return f"{ti['task_id']}/{ti['map_index']}/{ti['try_number']}"


@pytest.fixture(scope="session")
def celery_night(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CeleryNight]:
    tmp = tmp_path_factory.mktemp("celery-night")
    targets = attack_targets(tmp)
    _, planted = nightly_config(tmp, targets)
    planted.pop("AIRFLOW__CELERY__BROKER_URL")  # the cluster's own broker (no password here)
    cluster = tmp / "cluster"
    (tmp / "secrets").mkdir()
    key, log_port = secrets.token_urlsafe(32), str(_port())
    with scratch_database("omni_celery_night") as dsn:
        with connect(dsn) as conn:
            migrate(conn)
        extra = {
            **planted,
            "OMNI_DATABASE_URL": f"{dsn} password={VALUES[3]}",
            "OMNI_HOME": str(tmp / "omni-home"),
            "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False",
        }
        try:
            with airflow_cluster(
                ADMIN_DSN,
                REPO / "dags",
                cluster,
                executor="CeleryExecutor",
                workers=["default", "gpu"],
                extra_env=extra,
                process_env={
                    # The API server reaches worker log servers on this port, signing with the key.
                    "api-server": {
                        "AIRFLOW__API__SECRET_KEY": key,
                        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": log_port,
                    },
                    # The GPU worker: its own disk, its log server, its key as the manifest has it.
                    "worker-gpu": {
                        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(cluster / "gpu-worker-disk"),
                        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": log_port,
                        **_manifest_secret_key(tmp / "secrets", key),
                    },
                },
            ) as c:
                c.trigger(DAG, RUN, LOGICAL_DATE, {})
                state = c.wait_for_run(DAG, RUN, timeout=600)
                celery = {
                    cmdline(p): environ(p)
                    for p in Path("/proc").iterdir()
                    if p.name.isdigit() and "celery" in cmdline(p) and str(tmp) in environ(p)
                }
                auth = {"Authorization": f"Bearer {c.token()}"}
                run = f"{c.api}/api/v2/dags/{DAG}/dagRuns/{RUN}"
                tis = httpx.get(f"{run}/taskInstances", headers=auth, timeout=30).json()
                logs: dict[str, httpx.Response] = {}
                for ti in tis["task_instances"]:
                    if str(ti["task_id"]).endswith("run_branch"):
                        index = f"?map_index={ti['map_index']}" if ti["map_index"] >= 0 else ""
                        logs[log_key(ti)] = httpx.get(
                            f"{run}/taskInstances/{ti['task_id']}/logs/{ti['try_number']}{index}",
                            headers={**auth, "Accept": "application/json"},
                            timeout=60,
                        )
        finally:
            targets[0].unlink(missing_ok=True)  # never leave a .pth in the test's own venv
        yield CeleryNight(tmp, cluster, dsn, targets, state, celery, tis["task_instances"], logs)


# test_gpu_pool.py's DAG: two mapped tasks asking for 2 slots each of the `gpu` pool.
POOL_DAG = textwrap.dedent("""
    import time
    import pendulum
    from airflow.sdk import dag, task

    @dag(dag_id="gpu_pool_probe", schedule=None, start_date=pendulum.datetime(2026, 1, 1),
         catchup=False, tags=["omni"])
    def gpu_pool_probe():
        @task(pool="gpu", pool_slots=2)
        def hold(i: int) -> int:
            time.sleep(4)  # a "server" holding both GPUs
            return i

        hold.expand(i=[0, 1])

    gpu_pool_probe()
""")


@dataclass
class _Shared:
    """A cluster started for the first test that asks for it, stopped after the last one."""

    users: set[str]  # the node ids of this session's tests that ask for it, not yet finished
    stack: ExitStack = field(default_factory=ExitStack)
    cluster: Cluster | None = None


@pytest.fixture(scope="session")
def _local_cluster(request: pytest.FixtureRequest) -> Iterator[_Shared]:
    items = request.session.items
    shared = _Shared({i.nodeid for i in items if "local_cluster" in i.fixturenames})
    with shared.stack:
        yield shared


@pytest.fixture
def local_cluster(
    _local_cluster: _Shared, request: pytest.FixtureRequest, tmp_path_factory
) -> Iterator[Cluster]:
    """A LocalExecutor cluster with our DAGs (links to dags/*.py, so one folder also holds the
    probe DAG) and no deployment config; PARALLELISM 4."""
    shared = _local_cluster
    if shared.cluster is None:
        tmp = tmp_path_factory.mktemp("local-cluster")
        dags = tmp / "dags"
        dags.mkdir()
        for dag_file in (REPO / "dags").glob("*.py"):
            (dags / dag_file.name).symlink_to(dag_file)
        (dags / "gpu_pool_probe.py").write_text(POOL_DAG)
        shared.cluster = shared.stack.enter_context(
            airflow_cluster(
                ADMIN_DSN,
                dags,
                tmp,
                executor="LocalExecutor",
                extra_env={"AIRFLOW__CORE__PARALLELISM": "4"},
            )
        )
    yield shared.cluster
    shared.users.discard(request.node.nodeid)
    if not shared.users:  # its last user on this worker: it stops parsing DAGs now
        shared.stack.close()
        shared.cluster = None

"""GPU slots under a real scheduler (LocalExecutor): two mapped tasks asking for 2 slots each on
a 2-slot pool run one after the other (`airflow dags test` ignores pools, so this needs the
real thing)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.airflow_cluster import airflow_cluster
from tests.conftest import ADMIN_DSN

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


def test_two_servers_wait_for_the_pools_gpu_slots(tmp_path: Path) -> None:
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "gpu_pool_probe.py").write_text(POOL_DAG)
    with airflow_cluster(
        ADMIN_DSN,
        dags,
        tmp_path,
        executor="LocalExecutor",
        extra_env={"AIRFLOW__CORE__PARALLELISM": "4"},
    ) as c:
        assert c.airflow("pools", "set", "gpu", "2", "GPU slots").returncode == 0
        c.wait_for_dag("gpu_pool_probe")
        assert c.airflow("dags", "unpause", "gpu_pool_probe").returncode == 0
        out = c.airflow("dags", "trigger", "gpu_pool_probe", "--run-id", "probe1")
        assert out.returncode == 0, out.stderr
        assert c.wait_for_run("gpu_pool_probe", "probe1", timeout=300) == "success"
        import psycopg

        with psycopg.connect(c.meta_dsn) as meta:
            spans = meta.execute(
                "SELECT map_index, start_date, end_date FROM task_instance "
                "WHERE dag_id = 'gpu_pool_probe' AND run_id = 'probe1' ORDER BY start_date"
            ).fetchall()
    assert len(spans) == 2
    (_, _, first_end), (_, second_start, _) = spans
    assert first_end <= second_start, spans  # never both on the GPUs at once

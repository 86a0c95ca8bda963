"""GPU slots under a real scheduler (LocalExecutor): two mapped tasks asking for 2 slots each on
a 2-slot pool run one after the other (`airflow dags test` ignores pools, so this needs the
real thing). The probe DAG (POOL_DAG) and its cluster, shared with the trigger-form tests:
tests/reliability/conftest.py."""

from __future__ import annotations

import psycopg
import pytest

from tests.airflow_cluster import Cluster


@pytest.mark.xdist_group("local_cluster")
def test_two_servers_wait_for_the_pools_gpu_slots(local_cluster: Cluster) -> None:
    c = local_cluster
    c.trigger("gpu_pool_probe", "probe1", None, {}, gpu_slots=2)
    assert c.wait_for_run("gpu_pool_probe", "probe1", timeout=300) == "success"
    with psycopg.connect(c.meta_dsn) as meta:
        spans = meta.execute(
            "SELECT map_index, start_date, end_date FROM task_instance "
            "WHERE dag_id = 'gpu_pool_probe' AND run_id = 'probe1' ORDER BY start_date"
        ).fetchall()
    assert len(spans) == 2
    (_, _, first_end), (_, second_start, _) = spans
    assert first_end <= second_start, spans  # never both on the GPUs at once

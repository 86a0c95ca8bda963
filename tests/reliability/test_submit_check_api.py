"""Issue 64 on a real `airflow api-server` (our plugin loaded as in production): a trigger form
the DAG's first task would refuse (a field no form has, a lane on the nightly, a target URL or
a lane the config does not offer, a repository outside ab.repos, NaN) is refused when it is
posted, 400 naming the field, and no DAG run is created; a good form is accepted. Airflow alone
merges unknown conf keys into the run's params unchecked, and no Param knows the config. (The
cluster, shared with other tests: tests/reliability/conftest.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from omni_tasks.deployment.reading import VARIABLE
from tests.airflow_cluster import Cluster
from tests.unit.test_submit_check import BASE, CONFIG, HEAD

OFFERED = "http://gpu-box.internal:8000"
DAGS = ("omni_nightly", "omni_bisect", "omni_ablate", "omni_ab", "omni_regrade")


@contextmanager
def config_variable(c: Cluster, config: str) -> Iterator[None]:
    """The deployment config as the Airflow Variable (read before OMNI_NIGHTLY_CONFIG, by the
    check as by the tasks), while the block runs: the cluster is shared with tests that need
    no config."""
    url, auth = f"{c.api}/api/v2/variables", {"Authorization": f"Bearer {c.token()}"}
    r = httpx.post(url, json={"key": VARIABLE, "value": config}, headers=auth, timeout=30)
    assert r.status_code in (200, 201), r.text
    try:
        yield
    finally:
        httpx.delete(f"{url}/{VARIABLE}", headers=auth, timeout=30).raise_for_status()


@pytest.mark.xdist_group("local_cluster")
def test_a_form_the_task_refuses_is_refused_by_the_api_server(local_cluster: Cluster) -> None:
    c = local_cluster
    with config_variable(c, CONFIG):
        for dag_id in DAGS:
            c.wait_for_dag(dag_id)
        headers = {"Authorization": f"Bearer {c.token()}"}

        def post(path: str, body: str, who: dict[str, str] | None = None) -> httpx.Response:
            return httpx.post(
                f"{c.api}/api/v2/{path}",
                content=body,
                headers={"content-type": "application/json", **(headers if who is None else who)},
                timeout=60,
            )

        def trigger(dag_id: str, conf: str, who: dict[str, str] | None = None) -> httpx.Response:
            body = f'{{"logical_date": null, "conf": {conf}}}'  # JSON text: NaN as a literal
            return post(f"dags/{dag_id}/dagRuns", body, who)

        def runs(dag_id: str) -> int:
            r = httpx.get(f"{c.api}/api/v2/dags/{dag_id}/dagRuns", headers=headers, timeout=30)
            r.raise_for_status()
            return int(r.json()["total_entries"])

        before = {d: runs(d) for d in DAGS}  # the shared cluster's other tests' runs

        history = f'"history": ["{BASE}", "{HEAD}"]'
        ab = (
            f'"repo": "vllm-project/vllm-omni", "pr": 7, "base_sha": "{BASE}", "head_sha": "{HEAD}"'
        )
        refused = [
            ("omni_nightly", '{"gpu_hours": 1}', "gpu_hours"),
            ("omni_nightly", '{"lane": "cuda"}', "lane"),
            ("omni_nightly", '{"extra_index": NaN}', "extra_index"),
            ("omni_nightly", '{"limit": NaN}', "limit"),
            (
                "omni_nightly",
                '{"targets": {"main": "http://evil.example/", "rebase": "simulator:rebase"}}',
                "targets.main",
            ),
            ("omni_bisect", f'{{{history}, "lane": "rocm-mi300"}}', "lane"),
            ("omni_bisect", f'{{{history}, "target": "http://evil.example/"}}', "target"),
            ("omni_ablate", '{"candidate_target": "http://evil.example/"}', "candidate_target"),
            ("omni_ab", f"{{{ab.replace('vllm-project/vllm-omni', 'someone/else')}}}", "repo"),
            ("omni_ab", f'{{{ab}, "target": "file:///etc/passwd"}}', "target"),
            ("omni_regrade", '{"run_key": "r1", "model": "/etc/passwd"}', "model"),
        ]
        for dag_id, conf, field in refused:
            r = trigger(dag_id, conf)
            assert r.status_code == 400, (dag_id, conf, r.status_code, r.text[:500])
            assert field in r.text, (dag_id, field, r.text[:500])
        # A backfill's conf is the same form.
        r = post(
            "backfills",
            '{"dag_id": "omni_nightly", "from_date": "2026-11-01T00:00:00Z", '
            '"to_date": "2026-11-02T00:00:00Z", "dag_run_conf": {"lane": "cuda"}}',
        )
        assert r.status_code == 400 and "lane" in r.text, r.text[:500]
        # Whoever may not trigger gets Airflow's own answer, never the config's offers.
        hostile = '{"targets": {"main": "http://evil.example/"}}'
        # (The harness makes every caller an admin: a forged token is the caller it refuses.)
        forged = {"Authorization": "Bearer " + c.token()[:-8] + "AAAAAAAA"}
        r = trigger("omni_nightly", hostile, forged)
        assert r.status_code in (401, 403) and OFFERED not in r.text, r.text[:500]
        assert {d: runs(d) for d in DAGS} == before  # not one run created

        accepted = [
            (
                "omni_nightly",
                f'{{"targets": {{"main": "{OFFERED}", "rebase": "simulator:rebase"}}}}',
            ),
            ("omni_bisect", f'{{{history}, "target": "{OFFERED}"}}'),
            ("omni_ab", f"{{{ab}}}"),
        ]
        for dag_id, conf in accepted:
            r = trigger(dag_id, conf)
            assert r.status_code in (200, 201), (dag_id, r.status_code, r.text[:500])
        assert [runs(d) - before[d] for d, _ in accepted] == [1, 1, 1]

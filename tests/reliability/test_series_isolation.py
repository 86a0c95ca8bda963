"""One failing lane never delays another's alert, under a real scheduler (LocalExecutor,
Postgres metadata, scheduler, dag-processor and api-server started here): a two-series fleet
night where one series' candidate server never starts (its GPU task fails and waits out
Airflow's retry delay) while the other series' confirmed regression is decided and delivered
when its own triage hold ends (production holds 1200 s; HOLD_S here keeps the test short, and
is long enough to tell a held post from one sent at once)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import httpx
import yaml

from tests.airflow_cluster import REPO, airflow_cluster
from tests.conftest import ADMIN_DSN
from tests.fakes.vllm_env import fake_vllm_env

QWEN, MINICPM = "Qwen/Qwen3-Omni-30B-A3B-Instruct", "openbmb/MiniCPM-o-4_5"
FAILING = "seed_tts_en.MiniCPM-o-4_5.rocm-mi300"
HOLD_S = 60  # the alert groups' triage delay


def _fleet(site: str) -> dict:
    lane = {"queue": "default", "pool": "default_pool", "gpus_per_server": 1}
    return {
        "version": 2,
        "lanes": {"cuda-h100x2": lane, "rocm-mi300": lane},
        "defaults": {"transcript_mode": True, "seeds": [42], "dataset": "demo"},
        "series": [
            {  # its candidate's server crashes at start: the GPU task fails, and retries
                "model": MINICPM,
                "benchmark": "seed_tts_en",
                "lane": "rocm-mi300",
                "branches": ["main", "rebase"],
                "baseline": "main",
                "targets": {"main": "simulator:main", "rebase": "vllm-serve"},
                "environment": {"strategy": "existing", "python": sys.executable},
                "server": {"startup_timeout_s": 10, "env": {"PYTHONPATH": site}},
            },
            {  # a regression the first night confirms
                "model": QWEN,
                "benchmark": "seed_tts_en",
                "lane": "cuda-h100x2",
                "branches": ["main", "rebase"],
                "baseline": "main",
                "targets": {"main": "simulator:main", "rebase": "simulator:rebase-demo"},
            },
        ],
    }


def test_a_series_whose_server_never_starts_delays_no_other_series_alert(
    db, results_dsn, tmp_path: Path
) -> None:
    fake = fake_vllm_env(tmp_path, mode="crash")
    config = tmp_path / "fleet.yaml"
    config.write_text(yaml.safe_dump(_fleet(fake["PYTHONPATH"]), sort_keys=False))
    extra = {
        "OMNI_NIGHTLY_CONFIG": str(config),
        "OMNI_DATABASE_URL": results_dsn,
        "OMNI_HOME": str(tmp_path / "omni-home"),
        "OMNI_TRUSTED_ROOTS": json.dumps([sys.prefix, str(tmp_path)]),
        "OMNI_GPUS": "0,1",
        "OMNI_ALERT_TRIAGE_DELAY_S": str(HOLD_S),
        "PATH": fake["PATH"],
        "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False",
    }
    with airflow_cluster(
        ADMIN_DSN, REPO / "dags", tmp_path, executor="LocalExecutor", extra_env=extra
    ) as c:
        c.wait_for_dag("omni_nightly")
        assert c.airflow("dags", "unpause", "omni_nightly").returncode == 0
        auth = {"Authorization": f"Bearer {c.token()}"}
        r = httpx.post(
            f"{c.api}/api/v2/dags/omni_nightly/dagRuns",
            headers=auth,
            timeout=30,
            json={"dag_run_id": "fleet-1", "logical_date": "2026-11-20T02:00:00Z"},
        )
        assert r.status_code in (200, 201), r.text
        deadline, sent = time.monotonic() + 600, []
        while time.monotonic() < deadline and not sent:
            time.sleep(3)
            sent = db.execute(
                "SELECT extract(epoch FROM o.sent_at - d.decided_at) AS after "
                "FROM omni.alert_outbox o JOIN omni.alert a USING (alert_id) "
                "JOIN omni.gate_decision d ON d.model = %s AND d.nightly = '2026-11-20' "
                "WHERE a.kind = 'regression' AND o.kind = 'post' AND o.state = 'sent' "
                "AND a.alert_key LIKE %s",
                (QWEN, f"seed_tts_en|{QWEN}|cuda-h100x2|%"),
            ).fetchall()
            db.commit()
        assert sent, "the healthy series' confirmed regression was never delivered"
        # Held for its triage delay, then out within a minute of the hold's end.
        assert HOLD_S <= sent[0]["after"] <= HOLD_S + 60, sent
        # At that moment the failing series' candidate task is still within its retries.
        tis = httpx.get(
            f"{c.api}/api/v2/dags/omni_nightly/dagRuns/fleet-1/taskInstances",
            headers=auth,
            params={"limit": 100},
            timeout=30,
        ).json()["task_instances"]
        failing = [
            t for t in tis if t["task_id"] == f"run_branch__{FAILING}" and t["state"] != "success"
        ]
        assert failing and all(
            t["state"] in ("up_for_retry", "running", "queued", "scheduled") for t in failing
        ), [(t["task_id"], t["map_index"], t["state"], t["try_number"]) for t in failing]
        late = next(t for t in tis if t["task_id"] == "dispatch_late")
        assert late["state"] not in ("running", "success", "failed"), late  # not its delivery
        decided = db.execute(
            "SELECT model, verdict, confirmed FROM omni.gate_decision WHERE nightly = '2026-11-20'"
        ).fetchall()
    assert {(d["model"], d["verdict"], d["confirmed"]) for d in decided} == {
        (QWEN, "REGRESSED", True)
    }

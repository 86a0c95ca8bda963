"""The nightly under a real scheduler with Celery: Redis broker, Postgres metadata, scheduler,
dag-processor, api-server and workers for the default and `gpu` queues, all started here.
Triggered through the REST API, then a two-date backfill through the CLI."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.airflow_cluster import REPO, airflow_cluster
from tests.conftest import ADMIN_DSN

CONF = {"limit": 20}  # the trigger form overrides the deployment config for a run
CONFIG = """version: 1
branches: [main, rebase]
baseline: main
targets: {main: "simulator:main", rebase: "simulator:rebase"}
transcript_mode: true
limit: 50
"""


def test_nightly_through_rest_api_and_a_backfill_with_celery(
    db, results_dsn, tmp_path: Path
) -> None:
    # No cron runs: only what the test triggers (an unpaused nightly would otherwise start its
    # latest scheduled interval). The runs read the deployment config (OMNI_NIGHTLY_CONFIG).
    config = tmp_path / "nightly.yaml"
    config.write_text(CONFIG)
    extra = {
        "OMNI_NIGHTLY_CONFIG": str(config),
        "OMNI_DATABASE_URL": results_dsn,
        "OMNI_HOME": str(tmp_path / "omni-home"),
        "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False",
    }
    with airflow_cluster(ADMIN_DSN, REPO / "dags", tmp_path, executor="CeleryExecutor",
                         workers=["default", "gpu"], extra_env=extra) as c:  # fmt: skip
        assert c.airflow("pools", "set", "gpu", "4", "GPU slots").returncode == 0
        c.wait_for_dag("seed_tts_nightly")
        assert c.airflow("dags", "unpause", "seed_tts_nightly").returncode == 0
        r = httpx.post(f"{c.api}/api/v2/dags/seed_tts_nightly/dagRuns",
                       headers={"Authorization": f"Bearer {c.token()}"}, timeout=30,
                       json={"dag_run_id": "rest-1", "logical_date": "2026-11-20T02:00:00Z",
                             "conf": CONF})  # fmt: skip
        assert r.status_code in (200, 201), r.text
        assert c.wait_for_run("seed_tts_nightly", "rest-1", timeout=600) == "success"
        runs = db.execute("SELECT branch, status, n_expected, airflow_run_id FROM omni.run "
                          "WHERE nightly = '2026-11-20' ORDER BY branch").fetchall()  # fmt: skip
        assert [(x["branch"], x["status"], x["n_expected"]) for x in runs] == [
            ("main", "complete", 20), ("rebase", "complete", 20)]  # fmt: skip
        assert {x["airflow_run_id"] for x in runs} == {"rest-1"}
        assert db.execute("SELECT count(*) AS n FROM omni.gate_decision "
                          "WHERE nightly = '2026-11-20'").fetchone()["n"] == 1  # fmt: skip
        db.commit()

        import json

        # The 02:00 runs of the 10th and the 11th: a run counts when its logical date is in range.
        out = c.airflow("backfill", "create", "--dag-id", "seed_tts_nightly", "--from-date",
                        "2026-11-10", "--to-date", "2026-11-12", "--dag-run-conf",
                        json.dumps(CONF))  # fmt: skip
        assert out.returncode == 0, out.stdout + out.stderr
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            decided = db.execute("SELECT nightly FROM omni.gate_decision WHERE nightly IN "
                                 "('2026-11-10', '2026-11-11') ORDER BY nightly").fetchall()  # fmt: skip
            db.commit()
            if len(decided) == 2:
                break
            time.sleep(3)
        triggers = db.execute("SELECT DISTINCT trigger FROM omni.run WHERE nightly IN "
                              "('2026-11-10', '2026-11-11')").fetchall()  # fmt: skip
    assert [str(d["nightly"]) for d in decided] == ["2026-11-10", "2026-11-11"]
    assert [t["trigger"] for t in triggers] == ["backfill"]

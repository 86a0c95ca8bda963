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


def _evidence_is_served_behind_airflow_auth(c, home: Path) -> None:  # type: ignore[no-untyped-def]
    """The plugin app on the real API server: the night's report and a clip, with Airflow's
    token only (Airflow does not guard plugin apps; the app checks it itself)."""
    import numpy as np

    from omni_tasks.evidence.audio import write_audio

    write_audio(str(home / "audio" / "run-x" / "00000_u0.wav"), np.zeros(2400, np.float32), 24_000)
    auth = {"Authorization": f"Bearer {c.token()}"}
    report = f"{c.api}/omni/reports/seed_tts_en_2026-11-20.html"
    # Exactly Airflow's own decision: a forged token is refused, and no token at all gets what
    # the core API gives it (this cluster's simple auth manager makes everyone an admin).
    forged = {"Authorization": "Bearer not-a-jwt"}
    refused = httpx.get(report, headers=forged, timeout=30).status_code
    assert refused in (401, 403)
    assert refused == httpx.get(f"{c.api}/api/v2/dags", headers=forged, timeout=30).status_code
    core = httpx.get(f"{c.api}/api/v2/dags", timeout=30).status_code
    assert httpx.get(report, timeout=30).status_code == (200 if core == 200 else refused)
    served = httpx.get(report, headers=auth, timeout=30)
    assert served.status_code == 200 and "<html" in served.text
    clip = httpx.get(f"{c.api}/omni/audio/run-x/00000_u0.wav", headers=auth, timeout=30)
    assert clip.status_code == 200 and clip.content[:4] == b"RIFF"
    escape = httpx.get(f"{c.api}/omni/reports/..%2F..%2Fetc%2Fpasswd", headers=auth, timeout=30)
    assert escape.status_code == 404
    # The task's "Nightly report" link comes from the refresh task's XCom (the report it wrote),
    # as the served URL: the run id's own date (today) would name another night.
    links = httpx.get(
        f"{c.api}/api/v2/dags/omni_nightly/dagRuns/rest-1/taskInstances/decide/links",
        headers=auth,
        timeout=30,
    )
    assert links.status_code == 200, links.text
    assert links.json()["extra_links"]["Nightly report"] == (
        "http://127.0.0.1/omni/reports/seed_tts_en_2026-11-20.html"
    )


def test_nightly_through_rest_api_and_a_backfill_with_celery(
    db, results_dsn, tmp_path: Path
) -> None:
    # No cron runs: only what the test triggers (an unpaused nightly would otherwise start its
    # latest scheduled interval). The runs read the deployment config (OMNI_NIGHTLY_CONFIG).
    config = tmp_path / "nightly.yaml"
    config.write_text(CONFIG)
    extra = {
        "OMNI_NIGHTLY_CONFIG": str(config),
        "OMNI_PUBLIC_URL": "http://127.0.0.1",  # links only; the test calls the API server
        "OMNI_DATABASE_URL": results_dsn,
        "OMNI_HOME": str(tmp_path / "omni-home"),
        "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False",
    }
    with airflow_cluster(
        ADMIN_DSN,
        REPO / "dags",
        tmp_path,
        executor="CeleryExecutor",
        workers=["default", "gpu"],
        extra_env=extra,
    ) as c:
        c.trigger("omni_nightly", "rest-1", "2026-11-20T02:00:00Z", CONF)
        assert c.wait_for_run("omni_nightly", "rest-1", timeout=600) == "success"
        runs = db.execute(
            "SELECT branch, status, n_expected, airflow_run_id FROM omni.run "
            "WHERE nightly = '2026-11-20' ORDER BY branch"
        ).fetchall()
        assert [(x["branch"], x["status"], x["n_expected"]) for x in runs] == [
            ("main", "complete", 20),
            ("rebase", "complete", 20),
        ]
        assert {x["airflow_run_id"] for x in runs} == {"rest-1"}
        assert (
            db.execute(
                "SELECT count(*) AS n FROM omni.gate_decision WHERE nightly = '2026-11-20'"
            ).fetchone()["n"]
            == 1
        )
        db.commit()
        _evidence_is_served_behind_airflow_auth(c, tmp_path / "omni-home")

        import json

        # The 02:00 runs of the 10th and the 11th: a run counts when its logical date is in range.
        out = c.airflow(
            "backfill",
            "create",
            "--dag-id",
            "omni_nightly",
            "--from-date",
            "2026-11-10",
            "--to-date",
            "2026-11-12",
            "--dag-run-conf",
            json.dumps(CONF),
        )
        assert out.returncode == 0, out.stdout + out.stderr
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            decided = db.execute(
                "SELECT nightly FROM omni.gate_decision WHERE nightly IN "
                "('2026-11-10', '2026-11-11') ORDER BY nightly"
            ).fetchall()
            db.commit()
            if len(decided) == 2:
                break
            time.sleep(1)
        triggers = db.execute(
            "SELECT DISTINCT trigger FROM omni.run WHERE nightly IN ('2026-11-10', '2026-11-11')"
        ).fetchall()
    assert [str(d["nightly"]) for d in decided] == ["2026-11-10", "2026-11-11"]
    assert [t["trigger"] for t in triggers] == ["backfill"]

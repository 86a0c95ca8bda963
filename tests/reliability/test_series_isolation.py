"""One failing lane never delays another's alert, under a real Celery deployment (Postgres
metadata, scheduler, dag-processor, api-server and one Celery worker started here): a
three-series fleet night on two lanes where one lane's candidate server never starts (its GPU
task fails and waits out Airflow's retry delay) while the other lane's two series' confirmed
regressions are decided and delivered when their own triage hold ends (production holds
1200 s; HOLD_S here keeps the test short, and is long enough to tell a held post from one sent
at once). The dead lane is reported on its first failed try, before its retry. One healthy
series' night is REGRESSED but not confirmed (the demo's pair): its `rerun` task, on its
lane's queue, confirms it the same morning, and its alert joins the other's group and says so."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.airflow_cluster import REPO, Cluster, airflow_cluster
from tests.conftest import ADMIN_DSN
from tests.fakes.vllm_env import fake_vllm_env

QWEN, MINICPM = "Qwen/Qwen3-Omni-30B-A3B-Instruct", "openbmb/MiniCPM-o-4_5"
HEALTHY, DEAD = "cuda-h100x2", "rocm-mi300"
FAILING = f"seed_tts_en.MiniCPM-o-4_5.{DEAD}"  # its task ids' series part
HOLD_S = 30  # the alert groups' triage delay
RUN, NIGHT = "fleet-1", "2026-11-20"


def _fleet(site: str) -> dict:
    lane = {"queue": "default", "pool": "default_pool", "gpus_per_server": 1}
    regressing = {  # a regression the first night confirms
        "benchmark": "seed_tts_en",
        "lane": HEALTHY,
        "branches": ["main", "rebase"],
        "baseline": "main",
        "targets": {"main": "simulator:main", "rebase": "simulator:rebase-demo"},
    }
    return {
        "version": 2,
        "lanes": {HEALTHY: lane, DEAD: lane},
        "defaults": {"transcript_mode": True, "seeds": [42], "dataset": "demo"},
        "series": [
            {  # its candidate's server crashes at start: the GPU task fails, and retries
                "model": MINICPM,
                "benchmark": "seed_tts_en",
                "lane": DEAD,
                "branches": ["main", "rebase"],
                "baseline": "main",
                "targets": {"main": "simulator:main", "rebase": "vllm-serve"},
                "environment": {"strategy": "existing", "python": sys.executable},
                "server": {"startup_timeout_s": 10, "env": {"PYTHONPATH": site}},
            },
            {"model": QWEN, **regressing},
            {  # REGRESSED, not confirmed on one night: the same-morning re-run confirms it
                "model": MINICPM,
                **regressing,
                "targets": {"main": "simulator:main-demo", "rebase": "simulator:rebase-demo-rerun"},
            },
        ],
    }


def _delivered(db) -> dict[str, tuple[float, float]]:
    """Each healthy series' regression alert: seconds from its own last decision (a
    same-morning re-run decides again) to its first message sent (its own post, or its group's
    parent and its reply in the thread), and how much later the group's last member was
    decided (a member joining restarts the group's hold)."""
    rows = db.execute(
        "WITH last AS (SELECT d.model, greatest(d.decided_at, max(r.created_at)) AS t "
        "FROM omni.gate_decision d LEFT JOIN omni.rerun r USING (model, lane, nightly) "
        "WHERE d.nightly = %(night)s AND d.lane = %(lane)s GROUP BY d.model, d.decided_at) "
        "SELECT d.model, extract(epoch FROM min(o.sent_at) - l.t) AS after, "
        "extract(epoch FROM (SELECT max(t) FROM last) - l.t) AS later "
        "FROM omni.gate_decision d JOIN last l USING (model) JOIN omni.alert a "
        "ON a.alert_key LIKE 'seed_tts_en|' || d.model || '|' || d.lane || '|%%' "
        "JOIN omni.alert_outbox o ON o.alert_id = a.alert_id "
        "WHERE d.nightly = %(night)s AND a.kind = 'regression' AND o.state = 'sent' "
        "GROUP BY d.model, l.t",
        {"night": NIGHT, "lane": HEALTHY},
    ).fetchall()
    db.commit()
    return {r["model"]: (float(r["after"]), float(r["later"])) for r in rows}


def _infra(db) -> list[dict[str, Any]]:
    rows = db.execute(
        "SELECT o.kind, o.payload, a.alert_id FROM omni.alert_outbox o "
        "JOIN omni.alert a USING (alert_id) WHERE a.kind = 'infra' AND a.alert_key = %s "
        "ORDER BY o.message_id",
        (f"seed_tts_en|{MINICPM}|{DEAD}|task|omni_nightly|{RUN}",),
    ).fetchall()
    db.commit()
    return rows


def _failing_tries(c: Cluster, auth: dict[str, str]) -> list[tuple[Any, ...]]:
    tis = httpx.get(
        f"{c.api}/api/v2/dags/omni_nightly/dagRuns/{RUN}/taskInstances",
        headers=auth,
        params={"limit": 100, "task_id": f"run_branch__{FAILING}"},
        timeout=30,
    ).json()["task_instances"]
    return [(t["map_index"], t["state"], t["try_number"]) for t in tis]


def test_a_lane_whose_server_never_starts_delays_no_other_lanes_alert(
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
        ADMIN_DSN,
        REPO / "dags",
        tmp_path,
        executor="CeleryExecutor",
        workers=["default"],
        extra_env=extra,
    ) as c:
        # Unpaused and triggered through the REST API: an `airflow` CLI call costs a Python
        # start with every provider loaded, tens of seconds on a busy two-core machine.
        c.wait_for_dag("omni_nightly")
        auth = {"Authorization": f"Bearer {c.token()}"}
        dag = f"{c.api}/api/v2/dags/omni_nightly"
        r = httpx.patch(dag, headers=auth, json={"is_paused": False}, timeout=30)
        assert r.status_code == 200, r.text
        r = httpx.post(
            f"{dag}/dagRuns",
            headers=auth,
            json={"dag_run_id": RUN, "logical_date": f"{NIGHT}T02:00:00Z"},
            timeout=30,
        )
        assert r.status_code in (200, 201), r.text
        deadline, sent, infra, when_reported = time.monotonic() + 600, {}, [], []
        while time.monotonic() < deadline and len(sent) < 2:
            time.sleep(1)
            if not infra and (infra := _infra(db)):  # the dead lane's task, as it was reported
                when_reported = _failing_tries(c, auth)
            sent = _delivered(db)
        late = httpx.get(
            f"{c.api}/api/v2/dags/omni_nightly/dagRuns/{RUN}/taskInstances/dispatch_late",
            headers=auth,
            timeout=30,
        ).json()
        still_failing = _failing_tries(c, auth)
        reruns = {
            t["task_id"]: t["state"]
            for t in httpx.get(
                f"{c.api}/api/v2/dags/omni_nightly/dagRuns/{RUN}/taskInstances",
                headers=auth,
                params={"limit": 100},
                timeout=30,
            ).json()["task_instances"]
            if t["task_id"].startswith("rerun__")
        }
        decided = db.execute(
            "SELECT model, lane, verdict, confirmed, reasons FROM omni.gate_decision "
            "WHERE nightly = %s",
            (NIGHT,),
        ).fetchall()
        rerun_runs = db.execute(
            "SELECT model, branch FROM omni.run WHERE trigger = 'rerun'"
        ).fetchall()
        said = db.execute(
            "SELECT count(*) AS n FROM omni.alert_outbox o JOIN omni.alert a USING (alert_id) "
            "WHERE a.alert_key LIKE %s AND o.payload::text LIKE '%%confirmed the same morning%%'",
            (f"seed_tts_en|{MINICPM}|{HEALTHY}|%",),
        ).fetchone()["n"]
    assert {(d["model"], d["lane"], d["verdict"], d["confirmed"]) for d in decided} == {
        (QWEN, HEALTHY, "REGRESSED", True),
        (MINICPM, HEALTHY, "REGRESSED", True),
    }
    # Confirmed by the scheduler's re-run task on its lane (the other's had nothing to do),
    # on both branches, and its alert's message says so.
    healthy = f"seed_tts_en.{{}}.{HEALTHY}"
    assert reruns[f"rerun__{healthy.format('MiniCPM-o-4_5')}"] == "success", reruns
    assert reruns[f"rerun__{healthy.format('Qwen3-Omni-30B-A3B-Instruct')}"] == "skipped"
    (minicpm,) = [d for d in decided if d["model"] == MINICPM]
    assert any(r.startswith("confirmed the same morning: ") for r in minicpm["reasons"])
    assert sorted((r["model"], r["branch"]) for r in rerun_runs) == sorted(
        [(MINICPM, "main"), (MINICPM, "rebase")] * 2
    )
    assert said >= 1
    # Each held for its triage delay, then out within a minute of the hold's end (or of the
    # group's, when a member decided later joined it while it was held).
    assert sent.keys() == {QWEN, MINICPM}, sent
    assert all(HOLD_S <= after <= HOLD_S + 60 + later for after, later in sent.values()), sent
    # The dead lane's candidate task was still within its retries, and the night's last
    # delivery (after every series) had not run: no healthy alert waited for it.
    assert any(state != "success" for _, state, _ in still_failing), still_failing
    assert all(
        state in ("success", "up_for_retry", "running", "queued", "scheduled")
        for _, state, _ in still_failing
    ), still_failing
    assert late["state"] not in ("running", "success", "failed"), late
    # Reported on its first failed try, while that try waited out its retry delay.
    assert [(r["kind"]) for r in infra] == ["post"], infra
    assert any(s == "up_for_retry" and n == 1 for _, s, n in when_reported), when_reported
    assert not any(n > 1 for _, _, n in when_reported), when_reported
    alert_id, post = infra[0]["alert_id"], json.dumps(infra[0]["payload"])
    assert "run_branch__" in post and " try 1 failed" in post, post
    assert f"*Alert {alert_id}*" in post, post  # its id
    assert f"`omni-tasks alerts ack {alert_id} " in post, post  # and what to run next
    assert f"omni-tasks runs list --benchmark seed_tts_en --model {MINICPM} --lane {DEAD}" in post

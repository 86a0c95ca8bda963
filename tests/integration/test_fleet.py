"""A fleet night: a version 2 deployment config with three series (model × benchmark × lane) on
three lanes, run by `omni-tasks nightly --config` (the nightly DAG under `airflow dags test`).
Each series is decided against its own baseline; one series' dead target makes that series
INFRA and holds back nothing of the other's."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
from pathlib import Path

import yaml

from tests.airflow_env import REPO

QWEN, MINICPM = "Qwen/Qwen3-Omni-30B-A3B-Instruct", "openbmb/MiniCPM-o-4_5"
FLEET = {
    "version": 2,
    "lanes": {
        "cuda-h100x2": {"queue": "gpu", "pool": "gpu", "gpus_per_server": 2},
        "rocm-mi300": {"queue": "gpu-rocm", "pool": "gpu-rocm", "gpus_per_server": 2},
        "npu-a3": {"queue": "npu", "pool": "npu", "gpus_per_server": 1},
    },
    "defaults": {"grader": {"backend": "faster-whisper"}, "seeds": [42], "limit": 20},
    "series": [
        {
            "model": QWEN,
            "benchmark": "seed_tts_en",
            "lane": "cuda-h100x2",
            "branches": ["main", "rebase"],
            "baseline": "main",
            "targets": {"main": "simulator:main", "rebase": "http://127.0.0.1:1"},
            "dataset": "demo",
        },
        {
            "model": MINICPM,
            "benchmark": "daily_omni",
            "lane": "rocm-mi300",
            "branches": ["main", "rebase"],
            "baseline": "main",
            "targets": {"main": "simulator:main", "rebase": "simulator:rebase"},
            "dataset": "demo",
            "limit": None,
        },
        {  # the fourth family: speech in, text out (benchmarks/librispeech.py)
            "model": MINICPM,
            "benchmark": "librispeech",
            "lane": "npu-a3",
            "branches": ["main", "rebase"],
            "baseline": "main",
            "targets": {"main": "simulator:main", "rebase": "simulator:rebase"},
            "dataset": "demo",
            "limit": None,
            "concurrency": [1, 4],  # its nightly concurrency check, on its own lane
        },
    ],
}


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(REPO / ".venv/bin/omni-tasks"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_a_fleet_night_decides_each_series_on_its_own(db, results_dsn, tmp_path: Path) -> None:
    config = tmp_path / "fleet.yaml"
    config.write_text(yaml.safe_dump(FLEET, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "OMNI_"))}
    env.update(OMNI_DATABASE_URL=results_dsn, OMNI_HOME=str(tmp_path / "home"))

    out = _cli(
        env, "nightly", "--config", str(config), "--nightly", "2026-11-27", "--transcript-mode"
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-3000:]
    log = (tmp_path / "home" / "demo" / "airflow_2026-11-27.log").read_text()
    # Each series' chain is its own (its GPU task on its lane's queue and pool), so the dead
    # series' decision and delivery wait on nothing of another's.
    for series in (
        "seed_tts_en.Qwen3-Omni-30B-A3B-Instruct.cuda-h100x2",
        "daily_omni.MiniCPM-o-4_5.rocm-mi300",
        "librispeech.MiniCPM-o-4_5.npu-a3",
    ):
        for task in ("record_heads", "run_branch", "summarize", "decide", "deliver"):
            assert f"task_id={task}__{series}" in log, (task, series)
    # Only the series whose config asks for it gets the concurrency check: each branch's items
    # alone and at 4, paired (the simulator's main and rebase do not vary with the batch).
    assert "task_id=check_concurrency__librispeech.MiniCPM-o-4_5.npu-a3" in log
    assert "task_id=check_concurrency__daily_omni" not in log
    checks = db.execute(
        "SELECT branch, tags FROM omni.event WHERE kind = 'concurrency' ORDER BY branch"
    ).fetchall()
    assert [(c["branch"], "SAME" in c["tags"]) for c in checks] == [
        ("main", True),
        ("rebase", True),
    ]

    listed = json.loads(_cli(env, "runs", "list", "--json").stdout)
    got = sorted(
        (r["benchmark"], r["model"], r["lane"], r["branch"], r["status"])
        for r in listed
        if r["trigger"] != "concurrency"
    )
    assert got == [
        ("daily_omni", MINICPM, "rocm-mi300", "main", "complete"),
        ("daily_omni", MINICPM, "rocm-mi300", "rebase", "complete"),
        ("librispeech", MINICPM, "npu-a3", "main", "complete"),
        ("librispeech", MINICPM, "npu-a3", "rebase", "complete"),
        ("seed_tts_en", QWEN, "cuda-h100x2", "main", "complete"),
        ("seed_tts_en", QWEN, "cuda-h100x2", "rebase", "failed"),
    ]
    decided = db.execute(
        "SELECT d.benchmark, d.model, d.lane, d.verdict, rb.lane AS baseline_lane, "
        "rb.benchmark AS baseline_benchmark FROM omni.gate_decision d "
        "LEFT JOIN omni.run rb ON rb.run_id = d.baseline_run_id ORDER BY d.benchmark"
    ).fetchall()
    assert [(d["benchmark"], d["model"], d["lane"], d["verdict"]) for d in decided] == [
        ("daily_omni", MINICPM, "rocm-mi300", "REGRESSED"),
        ("librispeech", MINICPM, "npu-a3", "REGRESSED"),
        ("seed_tts_en", QWEN, "cuda-h100x2", "INFRA"),
    ]
    # A series' baseline is its own main, never another lane's or benchmark's.
    assert decided[0]["baseline_lane"] == "rocm-mi300"
    assert decided[0]["baseline_benchmark"] == "daily_omni"

    sent = db.execute("SELECT state, payload::text AS p FROM omni.alert_outbox").fetchall()
    assert all(m["state"] == "sent" for m in sent)
    infra = [m["p"] for m in sent if "INFRA" in m["p"]]
    assert len(infra) == 1 and "cuda-h100x2" in infra[0]  # the alert names the series' lane
    # A regression's headline names its series: benchmark, model and lane (one night of 48
    # questions is REGRESSED but not yet confirmed, so no message posts; its headline is).
    from omni_tasks.alerts import blocks
    from omni_tasks.alerts.messages import context as _context
    from omni_tasks.contracts.night import NightQuestion
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.series import Series
    from omni_tasks.store import night as night_store

    night = dt.date(2026, 11, 27)
    series = Series("daily_omni", MINICPM, "rocm-mi300")
    inputs = night_store.load(db, NightQuestion(series, night, "main"), load_policy())
    (d,) = [k for k in inputs.history if k.nightly == night]  # a KeyNight is a StoredDecision
    assert "daily_omni · MiniCPM-o-4_5 · lane rocm-mi300" in blocks.headline(_context(d, 0.5))
    keys = {r["alert_key"] for r in db.execute("SELECT alert_key FROM omni.alert")}
    assert f"seed_tts_en|{QWEN}|cuda-h100x2|rebase|main|default|infra" in keys
    assert all(k.split("|")[2] in FLEET["lanes"] for k in keys)  # every key names its lane
    # Each series has its own report.
    reports = sorted(p.name for p in (tmp_path / "home" / "reports").glob("*2026-11-27.html"))
    assert len(reports) == 3 and all("@" in name for name in reports)
    # The ASR family declares no seed-TTS diagnosis: its broken transcripts get no failure
    # modes, origins or question split, only the tail and the paired test.
    asr = db.execute(
        "SELECT s.stats FROM omni.run_stats s JOIN omni.grading g USING (grading_id) "
        "JOIN omni.run r USING (run_id) WHERE r.benchmark = 'librispeech' "
        "AND r.branch = 'rebase' AND s.tau = 0.5"
    ).fetchone()["stats"]
    assert asr["n_broken"] > 0 and asr["questions"] is None
    assert all(m["clips"] == 0 for m in asr["failure_modes"].values())
    assert sum(asr["origins"].values()) == 0
    assert asr["official"]["asr_corpus_wer"] > 0
    assert "INFRA" in out.stdout and "REGRESSED" in out.stdout

    # The freshness watchdog checks exactly the config's series and branches: only the dead
    # target's branch is stale (its run failed), under its own series' key.
    from omni_tasks.jobs.demo import airflow_env

    af = {**airflow_env(tmp_path / "home", results_dsn), "OMNI_NIGHTLY_CONFIG": str(config)}
    fresh = subprocess.run(
        [str(REPO / ".venv/bin/airflow"), "dags", "test", "omni_freshness", "2026-11-27"],
        env=af,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert fresh.returncode == 0, fresh.stdout[-3000:] + fresh.stderr[-2000:]
    stale = sorted(
        r["alert_key"]
        for r in db.execute("SELECT DISTINCT idempotency_key AS alert_key FROM omni.alert_outbox")
        if "|freshness|" in r["alert_key"]
    )
    assert stale == [f"seed_tts_en|{QWEN}|cuda-h100x2|rebase|freshness|2026-11-27"]


FAILED_TASK = r"  (\S+) \((\w+)\) failed, its log: (\S+)"


def test_a_failed_task_is_named_with_its_own_log(results_dsn, tmp_path: Path) -> None:
    """A night whose GPU tasks fail (a harness version nobody knows): `nightly` exits 1
    naming each failed task, what it ran and a log holding that task's lines only."""
    config = tmp_path / "night.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "branches": ["main", "rebase"],
                "baseline": "main",
                "targets": {"main": "simulator:main", "rebase": "simulator:rebase"},
                "dataset": "demo",
                "limit": 5,
                "grader": {"backend": "faster-whisper", "harness_version": "9.99"},
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "OMNI_"))}
    env.update(OMNI_DATABASE_URL=results_dsn, OMNI_HOME=str(tmp_path / "home"))

    out = _cli(
        env, "nightly", "--config", str(config), "--nightly", "2026-11-28", "--transcript-mode"
    )
    assert out.returncode == 1, out.stdout[-4000:] + out.stderr[-3000:]
    night_log = tmp_path / "home/demo/airflow_2026-11-28.log"
    said = out.stderr.splitlines()
    said = said[said.index("error: the 2026-11-28 nightly failed:") :]
    assert said[-1] == f"  the whole night's log: {night_log}", out.stderr
    named = [m.groups() for line in said[1:-1] if (m := re.fullmatch(FAILED_TASK, line))]
    assert sorted((task, ran) for task, ran, _ in named) == [
        ("run_branch", "main"),
        ("run_branch", "rebase"),
    ]  # not `watcher`, which fails because they did
    for task, ran, path in named:
        index = Path(path).suffixes[0][1:]  # run_branch.1.log: map index 1
        lines = Path(path).read_text().splitlines()
        assert f"[DAG TEST] starting task_id={task} map_index={index}" in lines[0]
        assert f"{ran} seed 42: unknown harness version '9.99'" in "\n".join(lines)
        assert f"[DAG TEST] end task task_id={task} map_index={index}" in lines[-1]
        assert sum("[DAG TEST] starting" in x for x in lines) == 1  # that task's lines only
    assert "[DAG TEST] starting task_id=watcher" in night_log.read_text()

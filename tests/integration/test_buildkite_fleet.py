"""The fleet's history from Buildkite: three pipelines (CUDA, AMD, NPU) whose artifacts the
shipped rules map to series (model × benchmark × lane), MiniCPM-o multiple choice included;
each run carries upstream's own gate verdict as its test would assert it; a MiniCPM-o
seed-TTS zh night without SIM is "gate not evaluated" with one INFRA alert; a DuplexEval
summary is a summary-only series with its protocol pin, not valid under another pin or sample
count; a JSON artifact no rule knows is listed, never imported; a second sync imports
nothing."""

from __future__ import annotations

import json

import pytest

from tests.fakes.buildkite_fleet import MINICPM, PROTOCOL_PIN, QWEN, fleet_api, sync


@pytest.fixture
def fleet():
    with fleet_api() as url:
        yield url


def test_three_pipelines_become_series_with_upstreams_verdicts(db, fleet) -> None:
    url = fleet
    reports = {p: sync(db, url, p) for p in ("vllm-omni", "vllm-omni-amd", "vllm-omni-npu-ci")}
    runs = db.execute(
        "SELECT benchmark, model, lane, status, nightly, summary, source FROM omni.run "
        "ORDER BY lane, benchmark, run_id"
    ).fetchall()
    assert [(r["benchmark"], r["model"], r["lane"]) for r in runs] == [
        ("duplex_eval", MINICPM, "cuda-h100"),
        ("duplex_eval", MINICPM, "cuda-h100"),
        ("seed_tts_zh", MINICPM, "cuda-h100"),
        ("daily_omni", QWEN, "cuda-h100x2"),
        ("seed_tts_en", QWEN, "cuda-h100x2"),
        ("seed_tts_zh", MINICPM, "npu-a3"),
        ("videomme", MINICPM, "npu-a3"),
        ("seed_tts_en", QWEN, "rocm-mi325"),
    ]
    bk = runs[3]["source"]["buildkite"]
    assert (bk["pipeline"], bk["build"], bk["step_key"], bk["agent"]) == (
        "vllm-omni",
        11,
        "accuracy",
        "vllm-omni-agent-3",
    )
    assert reports["vllm-omni"].unknown == [  # listed, not guessed; made printable
        "11: perf/latency_summary.json",
        "11: perf/\ufffd[2Jcleared.json",
    ]
    verdicts = [{g["figure"]: g["verdict"] for g in r["source"]["upstream_gates"]} for r in runs]
    # As upstream's tests assert: 0.6 < 0.685 fails; a WER of 0 passes ≤ 0.35 and ≤ 0.0156;
    # DuplexEval's record-mode thresholds (0.0) pass any score.
    assert verdicts[3] == {"daily_omni_accuracy": "fail"}
    assert verdicts[7] == {"seed_tts_content_error_mean": "pass"}
    assert verdicts[6] == {"videomme_accuracy": "pass"}  # 0.70 ≥ 0.68, multiple choice per item
    assert verdicts[5] == {"seed_tts_content_error_mean": "pass", "seed_tts_sim_mean": "pass"}
    assert verdicts[2]["seed_tts_sim_mean"] == "not_evaluated"
    assert verdicts[0] == {
        "rtd.mean_content_score": "pass",
        "rtd.mean_avg_temporal_score": "pass",
        "pr.mean_all_success": "pass",
    }
    # Build 12's guard stops at its first assertion (the pin), before any threshold.
    assert {g["verdict"] for g in runs[1]["source"]["upstream_gates"]} == {"fail"}
    assert runs[1]["source"]["upstream_gates"][0]["assertion"] == (
        f"protocol_pin changed: {'0' * 40} != {PROTOCOL_PIN}"
    )
    # DuplexEval: a summary-only series of judge figures with its pin, dated by its build.
    duplex = runs[0]
    assert duplex["status"] == "summary_only" and str(duplex["nightly"]) == "2026-11-28"
    assert duplex["summary"]["rtd.mean_content_score"] == 1.2
    assert duplex["summary"]["rtd.by_task.RTD_OCR.mean_content_score"] == 1.0
    assert duplex["summary"]["pr.by_task.correction"] == 0.3
    assert duplex["source"]["protocol_pin"] == PROTOCOL_PIN
    # Run validity: nothing wrong with build 11's; build 12's says both problems.
    assert duplex["source"]["validity"] == [] and runs[4]["source"]["validity"] == []
    assert runs[1]["source"]["validity"] == [
        "63 items evaluated, the suite has 66",
        "protocol pin 000000000000 is not the series' ca3c122b4d4b: judged by another "
        "evaluator version",
    ]
    assert runs[2]["source"]["validity"] == [
        "gate not evaluated: seed_tts_sim_mean >= 0.689 (seed_tts_sim_mean was not computed, "
        "so upstream's test skipped it; the step did not switch SIM on (SEED_TTS_SIM_EVAL))"
    ]
    # The harness's switches under the spelling each step used (0.30's, upstream main's).
    assert runs[2]["source"]["buildkite"]["eval_switches"] == {
        "SEED_TTS_WER_EVAL": "1",
        "SEED_TTS_WER_SAVE_ITEMS": "1",
    }
    assert runs[5]["source"]["buildkite"]["eval_switches"] == {
        "SAVE_EVAL_ITEMS": "1",
        "SEED_TTS_SIM_EVAL": "1",
        "WER_EVAL": "1",
    }
    reasons = db.execute(
        "SELECT DISTINCT a.finish_reason FROM omni.clip_audio a JOIN omni.run r USING (run_id) "
        "WHERE r.lane = 'npu-a3' AND r.benchmark = 'seed_tts_zh'"
    ).fetchall()
    assert [r["finish_reason"] for r in reasons] == ["stop"]  # kept per item
    assert len(reports["vllm-omni"].invalid) == 2
    infra = db.execute(
        "SELECT idempotency_key FROM omni.alert_outbox ORDER BY idempotency_key"
    ).fetchall()
    assert [m["idempotency_key"] for m in infra] == [  # one INFRA alert per series and night
        f"run-validity|duplex_eval|{MINICPM}|cuda-h100|2026-11-28",
        f"run-validity|seed_tts_zh|{MINICPM}|cuda-h100|2026-11-28",
    ]
    # The dashboard's fleet overview shows upstream's verdict per series.
    overview = db.execute(
        "SELECT benchmark, lane, upstream_verdict FROM omni.v_fleet_latest ORDER BY lane, benchmark"
    ).fetchall()
    assert [(r["benchmark"], r["lane"], r["upstream_verdict"]) for r in overview] == [
        ("duplex_eval", "cuda-h100", "fail"),  # its newest night is build 12's
        ("seed_tts_zh", "cuda-h100", "not evaluated"),
        ("daily_omni", "cuda-h100x2", "fail"),
        ("seed_tts_en", "cuda-h100x2", "pass"),
        ("seed_tts_zh", "npu-a3", "pass"),
        ("videomme", "npu-a3", "pass"),
        ("seed_tts_en", "rocm-mi325", "pass"),
    ]
    again = sync(db, url, "vllm-omni")
    assert again.imported == [] and again.skipped == 5


def test_stats_of_every_imported_run_reproduce_the_artifacts_figures(db, fleet) -> None:
    from typer.testing import CliRunner

    from omni_tasks.cli import app

    for pipeline in ("vllm-omni", "vllm-omni-amd", "vllm-omni-npu-ci"):
        sync(db, fleet, pipeline)
    runs = db.execute("SELECT run_key, benchmark, summary FROM omni.run").fetchall()
    assert len(runs) == 8
    for run in runs:
        out = CliRunner().invoke(app, ["stats", run["run_key"], "--json"])
        assert out.exit_code == 0, out.output
        official = json.loads(out.stdout)["official"]
        reported = {k: v for k, v in run["summary"].items() if k in official}
        assert reported, run["run_key"]
        for figure, value in reported.items():  # recomputed from items, or as reported
            if isinstance(value, float):
                assert official[figure] == pytest.approx(value, abs=1e-12), (run, figure)
            else:
                assert official[figure] == value, (run, figure)


def test_the_cli_syncs_several_pipelines(db, fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from omni_tasks.cli import app

    monkeypatch.setenv("BUILDKITE_API_TOKEN", "bk-token")
    out = CliRunner().invoke(
        app,
        [
            "import",
            "buildkite",
            "--org",
            "vllm",
            "--pipeline",
            "vllm-omni",
            "--pipeline",
            "vllm-omni-amd",
            "--base-url",
            f"{fleet}/v2",
            "--artifact-host",
            "localhost",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    got = json.loads(out.stdout)
    assert {slug: len(r["imported"]) for slug, r in got.items()} == {
        "vllm-omni": 5,
        "vllm-omni-amd": 1,
    }
    assert got["vllm-omni"]["unknown"][0] == "11: perf/latency_summary.json"


def test_the_hourly_sync_dag_imports_the_configured_pipelines(
    db, fleet, tmp_path, results_dsn
) -> None:
    """`airflow dags test omni_buildkite_sync`: the config's pipelines are synced (its INFRA
    alert delivered to the local outbox); a second run imports nothing new."""
    from tests.airflow_env import airflow_env, dags_test, migrate

    config = tmp_path / "fleet.yaml"
    config.write_text(
        "version: 2\nlanes: {cuda-h100x2: {queue: gpu, pool: gpu}}\n"
        f"buildkite: {{org: vllm, pipelines: [vllm-omni, vllm-omni-npu-ci], base_url: "
        f"'{fleet}/v2', lookback_days: 30, artifact_hosts: [localhost]}}\n"
        "series:\n  - {benchmark: seed_tts_en, lane: cuda-h100x2, branches: [main],\n"
        "     baseline: main, targets: {main: 'simulator:main'}}\n"
    )
    env = airflow_env(tmp_path / "home", results_dsn, tmp_path / "omni-home")
    migrate(env)
    env = {**env, "OMNI_NIGHTLY_CONFIG": str(config), "BUILDKITE_API_TOKEN": "bk-token"}
    out = dags_test(env, "omni_buildkite_sync", "2026-11-29", "{}")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    lanes = db.execute("SELECT lane, count(*) AS n FROM omni.run GROUP BY lane ORDER BY lane")
    assert {r["lane"]: r["n"] for r in lanes.fetchall()} == {
        "cuda-h100": 3,
        "cuda-h100x2": 2,
        "npu-a3": 2,
    }
    sent = db.execute("SELECT state FROM omni.alert_outbox").fetchall()
    assert [m["state"] for m in sent] == ["sent", "sent"]  # the two invalid nights' INFRA
    again = dags_test(env, "omni_buildkite_sync", "2026-11-30", "{}")
    assert again.returncode == 0
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 7


QWEN_DIR = "tests/e2e/accuracy/qwen3_omni/results/qwen_omni_acc"
MINICPM_DIR = "tests/e2e/accuracy/minicpmo_4_5/results"
CHAT = {"backend": "openai-chat-omni", "endpoint_type": "openai-chat-omni"}


def test_upstreams_shared_runner_names_land_on_their_own_series(db) -> None:
    """Upstream's real file names: the shared runner writes `qwen_omni_acc_*` for MiniCPM-o too,
    in its own folder, and the duplex test a realtime seed-TTS file beside the chat one. Each
    artifact lands on the series its own model and protocol agree with; the realtime night is
    refused (never relabelled), and nothing stops the sync. The AMD step's seed-TTS and
    Daily-Omni both land on its lane, marked non-blocking."""
    from omni_tasks.synthesis.simulator import serve_in_thread
    from tests.factories import small_artifact
    from tests.fakes.buildkite_api import BuildkiteState, buildkite_app
    from tests.fakes.buildkite_fleet import add, daily_omni_doc, zh_doc

    tag = "20261128-021500"
    state = BuildkiteState()
    with serve_in_thread(buildkite_app(state)) as url:
        qwen = {"model_id": QWEN, **CHAT}
        minicpm = {"model_id": "/data/models/MiniCPM-o-4_5", **CHAT}  # the test's local copy
        add(
            state,
            url,
            "vllm-omni",
            21,
            {
                f"{QWEN_DIR}/qwen_omni_acc_seed_tts_{tag}.json": {**small_artifact(4), **qwen},
                f"{QWEN_DIR}/qwen_omni_acc_daily_omni_{tag}.json": {
                    **daily_omni_doc(6, 10),
                    **qwen,
                },
                f"{MINICPM_DIR}/qwen_omni_acc_seed_tts_{tag}.json": {**zh_doc(False), **minicpm},
                f"{MINICPM_DIR}/qwen_omni_acc_daily_omni_{tag}.json": {
                    **daily_omni_doc(8, 10),
                    **minicpm,
                },
                f"{MINICPM_DIR}/qwen_omni_acc_seed_tts_20261128-031500.json": {
                    **zh_doc(False),
                    **minicpm,
                    "backend": "openai-realtime-tts",
                    "endpoint_type": "/v1/realtime",
                },
            },
        )
        add(
            state,
            url,
            "vllm-omni-amd",
            22,
            {
                f"{QWEN_DIR}/qwen_omni_acc_seed_tts_{tag}.json": {**small_artifact(4), **qwen},
                f"{QWEN_DIR}/qwen_omni_acc_daily_omni_{tag}.json": {
                    **daily_omni_doc(6, 10),
                    **qwen,
                },
            },
        )
        cuda, amd = sync(db, url, "vllm-omni"), sync(db, url, "vllm-omni-amd")
    assert cuda.errors == [] and cuda.skipped_builds == [] and len(cuda.imported) == 4
    (refused,) = cuda.refused
    assert "qwen_omni_acc_seed_tts_20261128-031500.json" in refused
    assert "measured over realtime" in refused and "never relabelled" in refused
    rows = db.execute(
        "SELECT benchmark, model, lane, (source -> 'buildkite' ->> 'blocking')::bool AS blocking "
        "FROM omni.run ORDER BY lane, model, benchmark"
    ).fetchall()
    assert [tuple(r.values()) for r in rows] == [
        ("daily_omni", MINICPM, "cuda-h100", True),
        ("seed_tts_zh", MINICPM, "cuda-h100", True),
        ("daily_omni", QWEN, "cuda-h100x2", True),
        ("seed_tts_en", QWEN, "cuda-h100x2", True),
        ("daily_omni", QWEN, "rocm-mi325", False),
        ("seed_tts_en", QWEN, "rocm-mi325", False),
    ]
    assert len(amd.imported) == 2 and amd.unknown == []

"""The fleet's history from Buildkite: three pipelines (CUDA, AMD, NPU) whose artifacts the
shipped rules map to series (model × benchmark × lane); each run carries upstream's own gate
verdict as its test would assert it; a MiniCPM-o seed-TTS zh night without SIM is "gate not
evaluated" with one INFRA alert; a DuplexEval summary is a summary-only series with its
protocol pin, not valid under another pin or sample count; a JSON artifact no rule knows is listed, never imported; a
second sync imports nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from omni_tasks.benchmarks.duplex_eval import PROTOCOL_PIN
from omni_tasks.importers.buildkite import BuildkiteSource, import_pipeline
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.factories import small_artifact
from tests.fakes.buildkite_api import BuildkiteState, buildkite_app

QWEN, MINICPM = "Qwen/Qwen3-Omni-30B-A3B-Instruct", "openbmb/MiniCPM-o-4_5"


def daily_omni_doc(right: int, of: int) -> dict[str, Any]:
    items = [
        {
            "request_id": str(i),
            "video_id": f"v{i}",
            "task_type": "Reasoning",
            "gold": "A",
            "predicted": "A" if i < right else "B",
            "correct": i < right,
        }
        for i in range(of)
    ]
    return {
        "date": "20261128-021500",
        "daily_omni_accuracy": right / of,
        "daily_omni_eval_items": items,
    }


def zh_doc(sim: bool) -> dict[str, Any]:
    items = [
        {
            "utterance_id": f"z{i}",
            "locale": "zh",
            "wer": 0.0,
            "reference_raw": "你好世界",
            "asr_raw": "你好世界",
            **({"sim": 0.7} if sim else {}),
        }
        for i in range(4)
    ]
    return {
        "date": "20261128-021500",
        "seed_tts_content_error_mean": 0.0,
        "seed_tts_content_evaluated": 4,
        "seed_tts_wer_eval_items": items,
    }


def duplex_doc(pin: str = PROTOCOL_PIN, samples: int = 66) -> dict[str, Any]:
    """`results/summary.json` as upstream's `summarize_scores` writes it (no `date`)."""
    return {
        "protocol_pin": pin,
        "samples": samples,
        "rtd": {
            "mean_content_score": 1.2,
            "mean_avg_temporal_score": 2.4,
            "by_task": {"RTD_OCR": {"mean_content_score": 1.0, "mean_avg_temporal_score": 2.0}},
        },
        "pr": {"samples": 36, "mean_all_success": 0.25, "by_task": {"correction": 0.3}},
    }


def add(
    state: BuildkiteState, url: str, pipeline: str, number: int, files: dict[str, dict[str, Any]]
) -> None:
    build = {
        "number": number,
        "branch": "main",
        "commit": f"{number:040x}",
        "state": "passed",
        "created_at": "2026-11-28T01:00:00.000Z",
        "web_url": f"https://buildkite.com/vllm/{pipeline}/builds/{number}",
        "jobs": [
            {
                "id": "job-1",
                "step_key": "accuracy",
                "name": "Accuracy nightly",
                "agent": {"name": f"{pipeline}-agent-3"},
            }
        ],
    }
    state.pipelines.setdefault(pipeline, []).insert(0, build)
    arts = []
    for i, (path, doc) in enumerate(files.items()):
        aid = f"{pipeline}-{number}-{i}"
        state.blobs[aid] = json.dumps(doc).encode()
        arts.append(
            {
                "id": aid,
                "path": path,
                "filename": path.rsplit("/", 1)[-1],
                "job_id": "job-1",
                "download_url": f"{url}/v2/organizations/vllm/pipelines/{pipeline}/builds/{number}"
                f"/artifacts/{aid}/download",
            }
        )
    state.pipeline_artifacts[(pipeline, number)] = arts


@pytest.fixture
def fleet():
    state = BuildkiteState()
    with serve_in_thread(buildkite_app(state)) as url:
        add(
            state,
            url,
            "vllm-omni",
            11,
            {
                "results/qwen_omni_acc_seed_tts_20261128-021500.json": small_artifact(n=4),
                "results/qwen_omni_acc_daily_omni_20261128-021500.json": daily_omni_doc(6, 10),
                "tests/e2e/accuracy/minicpmo_4_5/results/seed_tts_zh.json": zh_doc(sim=False),
                "tests/e2e/accuracy/omni_duplex_eval/results/summary.json": duplex_doc(),
                "perf/latency_summary.json": {"p50": 1.0},
                "perf/\x1b[2Jcleared.json": {"p50": 1.0},  # Buildkite's names are data
            },
        )
        add(
            state,
            url,
            "vllm-omni-amd",
            5,
            {
                "results/qwen_omni_acc_seed_tts_20261128-021500.json": small_artifact(n=4),
            },
        )
        add(
            state,
            url,
            "vllm-omni-npu-ci",
            7,
            {
                "tests/e2e/accuracy/minicpmo_4_5/results/seed_tts_zh.json": zh_doc(sim=True),
            },
        )
        # A rerun of the night judged under another pin, 3 samples short: imported, not valid.
        add(
            state,
            url,
            "vllm-omni",
            12,
            {"tests/e2e/accuracy/omni_duplex_eval/results/summary.json": duplex_doc("0" * 40, 63)},
        )
        yield url


def sync(db, url: str, pipeline: str):
    return import_pipeline(
        db, BuildkiteSource("vllm", pipeline, "bk-token", f"{url}/v2", backoff_s=0.01)
    )


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
    assert verdicts[6] == {"seed_tts_content_error_mean": "pass"}
    assert verdicts[5] == {"seed_tts_content_error_mean": "pass", "seed_tts_sim_mean": "pass"}
    assert verdicts[2]["seed_tts_sim_mean"] == "not_evaluated"
    assert verdicts[0] == {
        "rtd.mean_content_score": "pass",
        "rtd.mean_avg_temporal_score": "pass",
        "pr.mean_all_success": "pass",
    }
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
    assert runs[2]["source"]["validity"][0].startswith(
        "gate not evaluated: seed_tts_sim_mean >= 0.689"
    )
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
        ("duplex_eval", "cuda-h100", "pass"),
        ("seed_tts_zh", "cuda-h100", "not evaluated"),
        ("daily_omni", "cuda-h100x2", "fail"),
        ("seed_tts_en", "cuda-h100x2", "pass"),
        ("seed_tts_zh", "npu-a3", "pass"),
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
    assert len(runs) == 7
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
        f"'{fleet}/v2', lookback_days: 30}}\n"
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
        "npu-a3": 1,
    }
    sent = db.execute("SELECT state FROM omni.alert_outbox").fetchall()
    assert [m["state"] for m in sent] == ["sent", "sent"]  # the two invalid nights' INFRA
    again = dags_test(env, "omni_buildkite_sync", "2026-11-30", "{}")
    assert again.returncode == 0
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 6

"""History import from Buildkite: N builds once, nothing the second time, clear API errors."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from omni_tasks.cli import app
from omni_tasks.importers.buildkite import BuildkiteError, BuildkiteSource, import_pipeline
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.factories import small_artifact
from tests.fakes.buildkite_api import STORAGE_HOSTS, BuildkiteState, buildkite_app

# The CUDA nightly's accuracy job, as the API lists it (its label and H100 queue).
ACCURACY_JOB = {
    "id": "job-acc",
    "name": ":full_moon: Omni · Accuracy Test",
    "agent_query_rules": ["queue=mithril-h100-pool"],
}


def _history(state: BuildkiteState, url: str) -> None:
    """Four nightly builds on two branches; one has no artifact, one a summary-only one."""
    for n, (branch, commit, day) in enumerate(
        [
            ("main", "a" * 40, 25),
            ("rebase", "b" * 40, 25),
            ("main", "c" * 40, 26),
            ("main", "d" * 40, 27),
            ("rebase", "e" * 40, 27),
        ],
        start=101,
    ):
        state.builds.insert(
            0,
            {
                "number": n,
                "branch": branch,
                "commit": commit,
                "state": "passed",
                "web_url": f"https://buildkite.com/vllm/vllm-omni/builds/{n}",
                "jobs": [ACCURACY_JOB],
            },
        )
        if n == 104:
            continue  # the accuracy step did not run
        doc = small_artifact(n=6, date=f"202611{day:02d}-021500")
        if n == 105:
            del doc["seed_tts_wer_eval_items"]  # an old run without SEED_TTS_WER_SAVE_ITEMS
        aid = f"art-{n}"
        state.blobs[aid] = json.dumps(doc).encode()
        base = f"{url}/v2/organizations/vllm/pipelines/vllm-omni/builds/{n}/artifacts/{aid}"
        state.artifacts[n] = [
            {"id": f"log-{n}", "path": "logs/out.txt", "download_url": base + "x/download"},
            {
                "id": aid,
                "path": f"tests/e2e/accuracy/qwen3_omni/results/qwen_omni_acc/"
                f"qwen_omni_acc_seed_tts_202611{day:02d}-021500.json",
                "filename": f"qwen_omni_acc_seed_tts_202611{day:02d}-021500.json",
                "job_id": ACCURACY_JOB["id"],
                "download_url": base + "/download",
            },
        ]


@pytest.fixture
def buildkite():
    state = BuildkiteState()
    with serve_in_thread(buildkite_app(state)) as url:
        _history(state, url)
        yield (
            state,
            BuildkiteSource(
                "vllm",
                "vllm-omni",
                "bk-token",
                base_url=f"{url}/v2",
                backoff_s=0.01,
                artifact_hosts=STORAGE_HOSTS,
            ),
        )


def test_imports_each_build_once_with_branch_and_commit(db, buildkite) -> None:
    state, src = buildkite
    first = import_pipeline(db, src)
    assert len(first.imported) == 4 and first.builds_without_artifact == [104]
    assert any("summary_only" in w and "build 105" in w for w in first.warnings)
    runs = {
        r["branch"] + r["nightly"].isoformat(): r
        for r in db.execute(
            "SELECT branch, nightly, commit_sha, status, trigger, source FROM omni.run"
        )
    }
    assert runs["main2026-11-26"]["commit_sha"] == "c" * 40
    assert runs["rebase2026-11-27"]["status"] == "summary_only"
    assert runs["main2026-11-25"]["source"]["buildkite"]["build"] == 101
    assert {r["trigger"] for r in runs.values()} == {"import"}
    downloads = state.downloads
    second = import_pipeline(db, src)
    assert (second.imported, second.skipped) == ([], 4)
    assert state.downloads == downloads  # nothing downloaded again


def test_branch_filter_and_cli(db, buildkite, monkeypatch) -> None:
    _, src = buildkite
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
            "--branch",
            "rebase",
            "--base-url",
            src.base_url,
            "--artifact-host",
            "localhost",
        ],
    )
    assert out.exit_code == 0, out.output
    assert "imported 2 run(s)" in out.output
    assert (
        db.execute("SELECT count(*) AS n FROM omni.run WHERE branch = 'main'").fetchone()["n"] == 0
    )


def test_rate_limit_and_server_errors_are_retried(db, buildkite) -> None:
    state, src = buildkite
    state.fail_next = [(429, {"Retry-After": "1"}), (500, {}), (502, {})]
    report = import_pipeline(db, src)
    assert len(report.imported) == 4


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"token": "wrong"}, "rejected the API token (401)"),
        ({"pipeline": "nope"}, "no vllm/nope or no access to it (404"),
    ],
)
def test_auth_and_missing_pipeline_are_clear(db, buildkite, change, message) -> None:
    _, src = buildkite
    import dataclasses

    with pytest.raises(BuildkiteError, match=re.escape(message)):
        import_pipeline(db, dataclasses.replace(src, **change))


def test_persistent_server_errors_give_up_with_a_message(db, buildkite) -> None:
    state, src = buildkite
    state.fail_next = [(500, {})] * 10
    with pytest.raises(BuildkiteError, match="answered 500"):
        import_pipeline(db, src)

"""Threshold history from upstream's test files: with a vllm-omni checkout, each imported
night is judged by the constant its build's commit had (0.78 before the change, 0.77 after),
and says where the threshold came from; a commit the checkout lacks falls back to the gate
table."""

from __future__ import annotations

import subprocess
from pathlib import Path

from omni_tasks.importers.buildkite import BuildkiteSource, import_pipeline
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.fakes.buildkite_api import STORAGE_HOSTS, BuildkiteState, buildkite_app
from tests.fakes.buildkite_fleet import MINICPM_DIR, TAG, add, daily_omni_doc

TEST_FILE = "tests/e2e/accuracy/minicpmo_4_5/test_minicpmo_4_5.py"


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def commit_threshold(repo: Path, value: str) -> str:
    path = repo / TEST_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'"""MiniCPM-o accuracy."""\n\n_MIN_DAILY_OMNI_ACCURACY = {value}\n')
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", f"gate {value}")
    return git(repo, "rev-parse", "HEAD")


def test_each_night_is_judged_by_its_commits_threshold(db, tmp_path: Path) -> None:
    repo = tmp_path / "vllm-omni"
    repo.mkdir()
    git(repo, "init", "-q")
    before, after = commit_threshold(repo, "0.78"), commit_threshold(repo, "0.77")
    state = BuildkiteState()
    path = f"{MINICPM_DIR}/qwen_omni_acc_daily_omni_{TAG}.json"
    with serve_in_thread(buildkite_app(state)) as url:
        # 0.775 accuracy each night: fails 0.78, passes 0.77.
        for number, commit in ((1, before), (2, after), (3, "f" * 40)):
            add(state, url, "vllm-omni-npu-ci", number, {path: daily_omni_doc(31, 40)})
            state.pipelines["vllm-omni-npu-ci"][0]["commit"] = commit
        src = BuildkiteSource(
            "vllm",
            "vllm-omni-npu-ci",
            "bk-token",
            f"{url}/v2",
            upstream_checkout=repo,
            artifact_hosts=STORAGE_HOSTS,
        )
        report = import_pipeline(db, src)
    assert len(report.imported) == 3, report
    rows = db.execute(
        "SELECT commit_sha, source -> 'upstream_gates' -> 0 AS g FROM omni.run "
        "ORDER BY (source -> 'buildkite' ->> 'build')::int"
    ).fetchall()
    got = [(r["g"]["threshold"], r["g"]["verdict"], r["g"]["threshold_source"]) for r in rows]
    assert got == [
        (0.78, "fail", f"{TEST_FILE} at {before[:12]}"),
        (0.77, "pass", f"{TEST_FILE} at {after[:12]}"),
        (0.77, "pass", "gate table"),  # a commit the checkout lacks: the table's newest
    ]
    assert rows[0]["g"]["gate"] == "daily_omni_accuracy >= 0.78"

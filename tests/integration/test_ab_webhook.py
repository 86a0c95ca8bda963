"""GitHub's webhook for PR A/Bs: a body whose `X-Hub-Signature-256` is wrong or missing is
refused (401) and triggers nothing; a good `omni-ab` label event triggers one omni_ab DAG run
in a real Airflow (its metadata DB), whose conf carries the PR's SHAs; other events are
acknowledged and ignored; the DAG's form is checked against the config's `ab:` section."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
from pathlib import Path

import pytest

from omni_tasks.ab.config import resolve_ab
from omni_tasks.deployment.reading import ConfigError
from tests.airflow_env import REPO, airflow_env, migrate

SECRET = b"s3cret"
BASE, HEAD = "1" * 40, "2" * 40
EVENT = {
    "action": "labeled",
    "label": {"name": "omni-ab"},
    "repository": {"full_name": "vllm-project/vllm-omni"},
    "pull_request": {
        "number": 7,
        "base": {"sha": BASE},
        "head": {"sha": HEAD, "repo": {"full_name": "vllm-project/vllm-omni"}},
    },
}
FORK = {
    **EVENT,
    "pull_request": {
        "number": 8,
        "base": {"sha": BASE},
        "head": {"sha": HEAD, "repo": {"full_name": "someone/vllm-omni"}},
    },
}
SCRIPT = """
import hashlib, hmac, json, sys
from fastapi.testclient import TestClient
from omni_tasks.ab.webhook import airflow_trigger, webhook_app

secret, body, fork = sys.argv[1].encode(), sys.argv[2].encode(), sys.argv[3].encode()
client = TestClient(webhook_app(lambda: secret, airflow_trigger))
sign = lambda b: "sha256=" + hmac.new(secret, b, hashlib.sha256).hexdigest()
good = sign(body)
shapes = json.dumps({"action": "labeled", "label": "omni-ab", "repository": [1],
                     "pull_request": {"base": "x", "head": 3}}).encode()
out = []
for sig, event, delivery, data in (
    (None, "pull_request", "d-1", body),
    ("sha256=" + "0" * 64, "pull_request", "d-1", body),
    (good, "push", "d-1", body),
    (good, "pull_request", "d-1", body),
    (good, "pull_request", "d-1", body),  # GitHub's redelivery, or a replay
    (good, "pull_request", "d-2", body),  # the same body under a fresh delivery id
    (sign(fork), "pull_request", "d-3", fork),
    (sign(b"{not json"), "pull_request", "d-4", b"{not json"),
    (sign(b"[" * 100000), "pull_request", "d-5", b"[" * 100000),
    (sign(shapes), "pull_request", "d-6", shapes),
):
    headers = {"x-github-event": event, "x-github-delivery": delivery,
               **({"x-hub-signature-256": sig} if sig else {})}
    r = client.post("/github", content=data, headers=headers)
    out.append([r.status_code, r.json()])
out.append([client.get("/openapi.json").status_code, None])
print(json.dumps(out))
"""


def sign(body: bytes) -> str:
    return "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()


def test_a_bad_signature_triggers_nothing_and_a_good_one_one_dag_run(
    tmp_path: Path, results_dsn: str
) -> None:
    env = airflow_env(tmp_path / "home", results_dsn, tmp_path / "omni-home")
    migrate(env)
    airflow = str(REPO / ".venv/bin/airflow")
    subprocess.run(
        [airflow, "dags", "reserialize"], env=env, check=True, capture_output=True, timeout=300
    )
    body = json.dumps(EVENT)
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, SECRET.decode(), body, json.dumps(FORK)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    answers = json.loads(out.stdout.strip().splitlines()[-1])
    (missing, bad, other, good, replay, relabel, fork, garbage, deep, shapes, openapi) = answers
    assert missing[0] == 401 and bad[0] == 401
    assert other == [200, {"triggered": None, "ignored": "not an omni-ab label"}]
    assert good[0] == 202 and good[1]["triggered"].startswith("webhook__vllm-project__vllm-omni")
    assert replay == [200, {"triggered": good[1]["triggered"], "already": "handled"}]
    assert relabel == replay  # a fresh delivery id is no new event (same repo, PR, head, label)
    assert fork[0] == 403 and "fork" in fork[1]["error"]
    assert garbage[0] == 400 and deep[0] == 400  # signed, but not JSON: never a 500
    assert shapes == [200, {"triggered": None, "ignored": "not an omni-ab label"}]
    assert openapi[0] == 404  # no schema served without auth
    runs = subprocess.run(
        [airflow, "dags", "list-runs", "omni_ab", "-o", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    listed = json.loads(runs.stdout.strip().splitlines()[-1])  # after any warnings
    # One run per event: the good one; no replay (under any delivery id), fork or malformed run.
    assert [r["run_id"] for r in listed] == [good[1]["triggered"]]
    detail = subprocess.run(
        [
            sys.executable,
            "-c",
            "from airflow.models import DagRun; from airflow.utils.session import create_session\n"
            "with create_session() as s:\n"
            "    print(__import__('json').dumps([r.conf for r in s.query(DagRun).all()]))",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    confs = json.loads(detail.stdout.strip().splitlines()[-1])
    expected = {"repo": "vllm-project/vllm-omni", "pr": 7, "base_sha": BASE, "head_sha": HEAD}
    assert confs == [expected]


CONFIG = """version: 2
lanes: {cuda: {queue: gpu, pool: gpu}}
ab: {repos: [vllm-project/vllm-omni], budget: 3000, max_budget: 5000}
series:
  - {benchmark: seed_tts_en, lane: cuda, branches: [main, rebase], baseline: main,
     targets: {main: 'simulator:main', rebase: 'simulator:rebase'}}
"""


def test_the_dag_form_is_checked_against_the_configs_ab_section(tmp_path: Path) -> None:
    config = tmp_path / "fleet.yaml"
    config.write_text(CONFIG)
    form = {
        "repo": "vllm-project/vllm-omni",
        "pr": 7,
        "base_sha": BASE,
        "head_sha": HEAD,
        "series": "seed_tts_en|Qwen/Qwen3-Omni-30B-A3B-Instruct|cuda",
    }
    req = resolve_ab(form, str(config))
    assert (req.base_target, req.head_target, req.budget) == (
        "simulator:main",
        "simulator:rebase",
        3000,
    )
    for bad, said in (
        ({"repo": "someone/else"}, "not one of ab.repos"),
        ({"series": "daily_omni|m|cuda"}, "is not in the config"),
        ({"budget": 10**6}, "budget: 1 to 5000"),
        ({"head_sha": "HEAD"}, "head_sha"),
        ({"pr": "12"}, "pr: a positive pull request number"),  # a number, not text
        ({"pr": True}, "pr: a positive pull request number"),  # never PR 1
        ({"target": "file:///etc"}, "not A/B fields"),
    ):
        with pytest.raises(ConfigError, match=said):
            resolve_ab({**form, **bad}, str(config))
    config.write_text(
        CONFIG.replace(
            "ab: {repos: [vllm-project/vllm-omni], budget: 3000, max_budget: 5000}\n", ""
        )
    )
    with pytest.raises(ConfigError, match="no `ab:` section"):
        resolve_ab(form, str(config))


def test_the_omni_ab_dag_runs_an_ab_and_posts_its_check(
    tmp_path: Path, results_dsn: str, db
) -> None:
    """`airflow dags test omni_ab` on a transcript-mode config: both sides run, the verdict
    is a completed check run on the head commit (a local GitHub API records it)."""
    from omni_tasks.synthesis.simulator import serve_in_thread
    from tests.airflow_env import dags_test
    from tests.fakes.github_api import GitHubState, github_app

    config = tmp_path / "fleet.yaml"
    config.write_text(
        CONFIG.replace(
            "targets: {main: 'simulator:main', rebase: 'simulator:rebase'}}",
            "targets: {main: 'simulator:main', rebase: 'simulator:rebase-demo'},\n"
            "     transcript_mode: true}",
        )
    )
    env = airflow_env(tmp_path / "home", results_dsn, tmp_path / "omni-home")
    migrate(env)
    state = GitHubState()
    with serve_in_thread(github_app(state)) as url:
        env = {
            **env,
            "OMNI_NIGHTLY_CONFIG": str(config),
            "OMNI_GITHUB_API_URL": url,
            "OMNI_GITHUB_TOKEN": state.token,
        }
        conf = json.dumps(
            {
                "repo": "vllm-project/vllm-omni",
                "pr": 9,
                "base_sha": BASE,
                "head_sha": HEAD,
                "series": "seed_tts_en|Qwen/Qwen3-Omni-30B-A3B-Instruct|cuda",
            }
        )
        out = dags_test(env, "omni_ab", "2026-11-30", conf)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert [c[0] for c in state.calls] == ["POST", "PATCH"]
    assert state.calls[1][2]["conclusion"] == "failure"  # rebase-demo regresses
    rows = db.execute(
        "SELECT branch, commit_sha, lane FROM omni.run WHERE trigger = 'ab' ORDER BY branch"
    ).fetchall()
    assert [(r["branch"], r["commit_sha"], r["lane"]) for r in rows] == [
        ("ab-pr9-2222222222-base", BASE, "cuda"),
        ("ab-pr9-2222222222-head", HEAD, "cuda"),
    ]

"""The on-demand A/B end to end: `omni-tasks ab` runs base and head on the simulator, decides
with the sequential rule and posts one GitHub check run (githubkit against a local API that
records calls): REGRESSED is `failure` and exits 3 with --fail-on, the same stack twice is
`success`, a budget too small to decide is `neutral` naming the clips it needs; the nightly's
gate never reads the A/B's runs."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from omni_tasks.cli import app
from omni_tasks.config import get_settings
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.fakes.github_api import GitHubState, github_app

runner = CliRunner()
BASE, HEAD = "b" * 40, "c" * 40


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubState]:
    state = GitHubState()
    with serve_in_thread(github_app(state)) as url:
        monkeypatch.setenv("OMNI_GITHUB_API_URL", url)
        monkeypatch.setenv("OMNI_GITHUB_TOKEN", state.token)
        get_settings.cache_clear()
        yield state
    get_settings.cache_clear()


def ab(head: str, *extra: str, base: str = "simulator:main") -> object:
    return runner.invoke(
        app,
        [
            "ab",
            "--benchmark",
            "seed_tts_en",
            "--dataset",
            "demo",
            "--base-target",
            base,
            "--head-target",
            head,
            "--base-sha",
            BASE,
            "--head-sha",
            HEAD,
            "--github-repo",
            "o/r",
            "--pr",
            "7",
            "--transcript-mode",
            *extra,
        ],
    )


def test_a_regression_fails_the_check_and_exits_3(db, github: GitHubState) -> None:
    out = ab("simulator:rebase-demo", "--fail-on", "regressed", "--json")
    assert out.exit_code == 3, out.output
    result = json.loads(out.stdout)
    assert result["verdict"] == "REGRESSED" and result["clips_spent"] >= 200
    assert [c[0] for c in github.calls] == ["POST", "PATCH"]  # one check run, created then done
    created, done = github.calls[0][2], github.calls[1][2]
    assert created["status"] == "in_progress" and created["head_sha"] == HEAD
    assert done["status"] == "completed" and done["conclusion"] == "failure"
    summary = done["output"]["summary"]
    assert "REGRESSED" in summary and "Δ tail" in summary and "p = " in summary
    assert "| clip | said |" in done["output"]["text"]
    # One Slack message in the A/B's own key space (the local outbox here); no alert.
    sent = db.execute("SELECT idempotency_key, state FROM omni.alert_outbox").fetchall()
    assert [(m["idempotency_key"], m["state"]) for m in sent] == [
        (f"ab|pr7-cccccccccc|{BASE[:12]}|REGRESSED", "sent")
    ]
    assert db.execute("SELECT count(*) AS n FROM omni.alert").fetchone()["n"] == 0
    # The nightly's gate of today never reads the A/B's runs.
    rows = db.execute("SELECT DISTINCT trigger, branch FROM omni.run").fetchall()
    assert {r["trigger"] for r in rows} == {"ab"}
    assert {r["branch"] for r in rows} == {"ab-pr7-cccccccccc-base", "ab-pr7-cccccccccc-head"}


def test_the_same_stack_twice_is_a_success(db, github: GitHubState) -> None:
    out = ab("simulator:main", "--fail-on", "regressed", "--json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["verdict"] in ("SAME", "IMPROVED")
    assert github.calls[-1][2]["conclusion"] == "success"


def test_a_budget_too_small_ends_neutral_naming_the_clips_needed(db, github: GitHubState) -> None:
    out = ab("simulator:main", "--limit", "20", "--budget", "40", "--json")
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert result["verdict"] == "UNKNOWN" and result["more_clips"] > 0
    assert f"about {result['more_clips']} more clips" in result["stopped"]
    done = github.calls[-1][2]
    assert done["conclusion"] == "neutral" and "more clips" in done["output"]["summary"]


def test_an_ab_request_is_checked_before_anything_runs(
    db, github: GitHubState, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = runner.invoke(
        app,
        [
            "ab",
            "--base-target",
            "simulator:main",
            "--head-target",
            "file:///etc/passwd",
            "--base-sha",
            BASE,
            "--head-sha",
            HEAD,
        ],
    )
    assert out.exit_code == 2 and "head_target" in out.output
    out = ab("simulator:main", "--github-repo", "../evil")
    assert out.exit_code == 2 and "OWNER/NAME" in out.output
    # No --benchmark: the configured default (OMNI_BENCHMARK), here one that does not exist.
    monkeypatch.setenv("OMNI_BENCHMARK", "no_such_benchmark")
    get_settings.cache_clear()
    sides = ["--base-target", "simulator:main", "--head-target", "simulator:main"]
    out = runner.invoke(app, ["ab", *sides, "--base-sha", BASE, "--head-sha", HEAD])
    assert out.exit_code == 2 and "unknown benchmark 'no_such_benchmark'" in out.output
    assert (
        github.calls == [] and db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 0
    )


def test_a_github_app_signs_a_jwt_for_its_installation_token(
    db, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """GitHub App authentication: githubkit signs a JWT with the App's private key, which the
    API verifies (RS256, the App's id) before it hands out the installation token the check
    run is then posted with."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "app.pem"
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    state = GitHubState(
        app_id="4242",
        app_public_key=key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
        installation_id=77,
    )
    with serve_in_thread(github_app(state)) as url:
        monkeypatch.setenv("OMNI_GITHUB_API_URL", url)
        monkeypatch.delenv("OMNI_GITHUB_TOKEN", raising=False)
        monkeypatch.setenv("OMNI_GITHUB_APP_ID", "4242")
        monkeypatch.setenv("OMNI_GITHUB_APP_PRIVATE_KEY", str(pem))
        monkeypatch.setenv("OMNI_GITHUB_INSTALLATION_ID", "77")
        get_settings.cache_clear()
        out = ab("simulator:main", "--limit", "10", "--json")
    get_settings.cache_clear()
    assert out.exit_code == 0, out.output
    paths = [c[1] for c in state.calls]
    assert paths[0] == "/app/installations/77/access_tokens"
    assert paths.count("/repos/o/r/check-runs") == 1 and paths[-1] == "/repos/o/r/check-runs/1"


def test_vllm_serve_sides_each_get_their_commits_own_server(
    db, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config series served by `vllm serve`: each side's commit is launched in its
    environment (the fake one: its `vllm` serves the simulator), run, and stopped."""
    import sys

    from omni_tasks.deployment.schema import NightlyParams
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs.ab import ABRequest, run_ab
    from tests.fakes.vllm_env import fake_vllm_env

    fake = fake_vllm_env(tmp_path)
    monkeypatch.setenv("PATH", fake["PATH"])
    monkeypatch.setenv("OMNI_GPUS", "0,1")
    monkeypatch.setenv("OMNI_TRUSTED_ROOTS", json.dumps([sys.prefix]))
    get_settings.cache_clear()
    serving = NightlyParams(
        benchmark="seed_tts_en",
        targets={"main": "vllm-serve", "rebase": "vllm-serve"},
        environment={"strategy": "existing", "python": sys.executable},
        server={"gpus": 2, "startup_timeout_s": 120, "env": {"PYTHONPATH": fake["PYTHONPATH"]}},
        transcript_mode=True,
        limit=10,
    )
    req = ABRequest(
        benchmark="seed_tts_en",
        base_target="vllm-serve",
        head_target="vllm-serve",
        base_sha=BASE,
        head_sha=HEAD,
        limit=10,
        options={"transcript_mode": True},
        serving=serving,
    )
    result = run_ab(db, req, load_policy())
    rows = db.execute("SELECT branch, commit_sha, stack FROM omni.run ORDER BY branch").fetchall()
    assert [(r["branch"], r["commit_sha"]) for r in rows] == [
        (req.branch("base"), BASE),
        (req.branch("head"), HEAD),
    ]
    assert {r["stack"]["vllm"] for r in rows} == {"0.11.0"}  # the launched server's provenance
    assert result.verdict in ("SAME", "UNKNOWN") and result.clips_spent >= 20
    get_settings.cache_clear()

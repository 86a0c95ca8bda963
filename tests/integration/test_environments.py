"""Execution environments: a venv per commit (built, cached, reused, served through the
launcher), GPU leases."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from omni_tasks.environments.gpus import gpu_lease
from omni_tasks.environments.venv import VenvStrategy
from omni_tasks.synthesis.server import ServerSpec, launched, provenance

PYPROJECT = """[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"
[project]
name = "vllm"
version = "{version}"
[project.scripts]
vllm = "fakevllm:main"
[tool.setuptools]
py-modules = ["fakevllm"]
"""
FAKE = '''"""`vllm serve …` stand-in: serves the omni-tasks simulator with this commit's profile."""
import os
import sys

PROFILE = "{profile}"


def main():
    args = sys.argv[1:]
    port = args[args.index("--port") + 1]
    python = os.environ["OMNI_SIM_PYTHON"]
    os.execv(python, [python, "-m", "omni_tasks", "simulator", "serve", "--profile", PROFILE,
                      "--port", port, "--transcript-mode"])
'''


def _repo(
    tmp_path: Path,
    history: tuple[tuple[str, str], ...] = (("0.11.0", "main"), ("0.11.1", "rebase")),
) -> tuple[Path, list[str]]:
    """A vllm-omni stand-in whose commits serve the simulator profile each names."""
    repo = tmp_path / "vllm-omni"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    shas = []
    for version, profile in history:
        (repo / "pyproject.toml").write_text(PYPROJECT.format(version=version))
        (repo / "fakevllm.py").write_text(FAKE.format(profile=profile))
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-q", "-m", profile], check=True)
        shas.append(
            subprocess.run(
                [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
            ).stdout.strip()
        )
    return repo, shas


def test_venv_per_commit_is_built_cached_reused_and_served(tmp_path: Path) -> None:
    repo, commits = _repo(tmp_path)
    strategy = VenvStrategy(str(repo), tmp_path / "envs")
    for commit, profile, version in zip(
        commits, ("main", "rebase"), ("0.11.0", "0.11.1"), strict=True
    ):
        env = strategy.prepare(commit)
        assert "vllm @ file://" in env.lock or f"vllm=={version}" in env.lock
        started = time.monotonic()
        again = strategy.prepare(commit)  # cached: no rebuild
        assert time.monotonic() - started < 1 and again.python == env.python
        spec = ServerSpec(
            python=str(env.python),
            model="Qwen/Qwen3-Omni-30B-A3B-Instruct",
            log_path=tmp_path / f"{commit[:8]}.log",
            startup_timeout_s=60,
            env={"OMNI_SIM_PYTHON": sys.executable},
        )
        with launched(spec) as server:
            models = httpx.get(server.url + "/v1/models").json()["data"]
            assert models[0]["id"] == f"simulator:{profile}+transcript"
        assert provenance(spec).stack["vllm"] == version
    assert len(list((tmp_path / "envs").glob("*/READY"))) == 2


def test_a_failed_build_says_which_step(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path)
    strategy = VenvStrategy(str(repo), tmp_path / "envs")
    from omni_tasks.environments import EnvironmentBuildError

    with pytest.raises(EnvironmentBuildError, match="git checkout 0000000"):
        strategy.prepare("0000000000000000000000000000000000000000")


def test_two_servers_never_share_a_gpu(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OMNI_GPUS", "0,1")
    spans: list[tuple[float, float, list[str]]] = []

    def task() -> None:
        with gpu_lease(2, lock_dir=tmp_path) as gpus:
            start = time.monotonic()
            time.sleep(0.5)
            spans.append((start, time.monotonic(), gpus))

    threads = [threading.Thread(target=task) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (_, a1, ga), (b0, _, gb) = sorted(spans)
    assert ga == gb == ["0", "1"] and a1 <= b0  # the second waited for both GPUs


def test_a_waiting_lease_holds_no_gpu(tmp_path: Path, monkeypatch) -> None:
    """All or nothing: a task waiting for two GPUs must not sit on one of them (two such
    tasks, one GPU each, would wait for each other forever)."""
    monkeypatch.setenv("OMNI_GPUS", "0,1")
    got: list[list[str]] = []
    with gpu_lease(1, lock_dir=tmp_path) as first:  # takes GPU 0
        waiter = threading.Thread(target=lambda: got.append(_lease_two(tmp_path)))
        waiter.start()
        time.sleep(1.5)  # the waiter has tried several times by now
        with gpu_lease(1, lock_dir=tmp_path, timeout_s=2) as second:  # GPU 1 must be free
            assert first == ["0"] and second == ["1"]
    waiter.join(10)
    assert got == [["0", "1"]]


def _lease_two(lock_dir: Path) -> list[str]:
    with gpu_lease(2, lock_dir=lock_dir, timeout_s=30) as gpus:
        return gpus


def test_a_bisect_serves_each_commit_from_its_own_environment(db, tmp_path, monkeypatch) -> None:
    """The bisect job with a `vllm-serve` target (what auto-bisect sends): every evaluation
    launches the commit's own server from its own venv, and the planted step is found."""
    from omni_tasks.config import get_settings
    from omni_tasks.jobs.bisect import BisectParams, run_bisect

    monkeypatch.setenv("OMNI_TRUSTED_ROOTS", json.dumps([str(tmp_path)]))
    monkeypatch.setenv("OMNI_GPUS", "0,1")
    get_settings.cache_clear()
    repo, commits = _repo(
        tmp_path, (("0.11.0", "main"), ("0.11.1", "main"), ("0.11.2", "rebase-demo"))
    )
    p = BisectParams(
        history=commits,
        target="vllm-serve",
        transcript_mode=True,
        budget=8.0,  # fresh selection (2 full runs), then two seeds of 3 runs on every clip
        environment={"strategy": "venv", "repo": str(repo), "root": str(tmp_path / "envs")},
        server={"gpus": 2, "startup_timeout_s": 60, "env": {"OMNI_SIM_PYTHON": sys.executable}},
    )
    result = run_bisect(db, p, dt.date(2026, 11, 29))
    assert (result.last_good, result.first_bad) == (commits[1], commits[2])
    runs = db.execute("SELECT commit_sha, stack FROM omni.run WHERE trigger = 'bisect'").fetchall()
    assert len(runs) == result.evaluations
    versions = {r["commit_sha"]: r["stack"]["vllm"] for r in runs}
    assert versions == dict(zip(commits, ("0.11.0", "0.11.1", "0.11.2"), strict=True))

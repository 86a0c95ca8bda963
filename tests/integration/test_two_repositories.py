"""Two repositories: an environment is (vllm-omni commit, vLLM build). With fake vLLM builds in
a local wheel index (versions, and per-commit wheel directories), the regression planted in the
newer vLLM: the two-repository A/B names vLLM, and a bisect over three vLLM commits with
vllm-omni held fixed finds the planted one."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from omni_tasks.benchmarks.seed_tts.run import BenchRequest, run_benchmark
from omni_tasks.deployment.schema import Serving
from omni_tasks.jobs.nightly import served
from tests.factories import seed_tts_corpus

NIGHT = dt.date(2026, 11, 26)

OMNI_PYPROJECT = """[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"
[project]
name = "vllm-omni"
version = "{version}"
dependencies = ["vllm=={vllm}"]
[project.scripts]
vllm = "fakeomni:main"
[tool.setuptools]
py-modules = ["fakeomni"]
"""
# `vllm serve … --omni` stand-in: the simulator, with the regression when the installed vLLM
# build carries it (the planted bug lives in vLLM, not here).
OMNI = """import os
import sys

import vllm


def main():
    args = sys.argv[1:]
    port = args[args.index("--port") + 1]
    profile = "rebase-compiled-talker" if vllm.PLANTED else "main"
    python = os.environ["OMNI_SIM_PYTHON"]
    os.execv(python, [python, "-m", "omni_tasks", "simulator", "serve", "--profile", profile,
                      "--port", port, "--transcript-mode"])
"""


def _wheel(where: Path, version: str, planted: bool) -> None:
    """A pure-Python `vllm` wheel whose module says whether it carries the planted bug."""
    where.mkdir(parents=True, exist_ok=True)
    info = f"vllm-{version}.dist-info"
    files = {
        "vllm/__init__.py": f"PLANTED = {planted}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    with zipfile.ZipFile(where / f"vllm-{version}-py3-none-any.whl", "w") as z:
        for name, text in files.items():
            z.writestr(name, text)


def _git(repo: Path, *args: str) -> str:
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    return subprocess.run([*git, *args], check=True, capture_output=True, text=True).stdout.strip()


def _omni_repo(root: Path, pins: list[str]) -> list[str]:
    """A vllm-omni stand-in: one commit per vLLM pin."""
    root.mkdir()
    _git(root, "init", "-q")
    shas = []
    for i, pin in enumerate(pins):
        (root / "pyproject.toml").write_text(OMNI_PYPROJECT.format(version=f"0.30.{i}", vllm=pin))
        (root / "fakeomni.py").write_text(OMNI)
        _git(root, "add", ".")
        _git(root, "commit", "-q", "-m", f"pin vllm {pin}")
        shas.append(_git(root, "rev-parse", "HEAD"))
    return shas


@pytest.fixture
def world(tmp_path: Path, monkeypatch):
    from omni_tasks.config import get_settings

    monkeypatch.setenv("OMNI_TRUSTED_ROOTS", json.dumps([str(tmp_path)]))
    monkeypatch.setenv("OMNI_GPUS", "0,1")
    get_settings.cache_clear()
    index = tmp_path / "wheels"
    # Local versions: PyPI has the real 0.27.0 and 0.28.0, and no pin may resolve to them.
    _wheel(index, "0.27.0+test", planted=False)
    _wheel(index, "0.28.0+test", planted=True)
    good, bad = _omni_repo(tmp_path / "vllm-omni", ["0.27.0+test", "0.28.0+test"])
    serving = {
        "environment": {
            "strategy": "venv",
            "repo": str(tmp_path / "vllm-omni"),
            "root": str(tmp_path / "envs"),
            "vllm_index": str(index),
        },
        "server": {"gpus": 2, "startup_timeout_s": 60, "env": {"OMNI_SIM_PYTHON": sys.executable}},
    }
    return {
        "dataset": seed_tts_corpus(tmp_path / "en", 600),
        "index": index,
        "good": good,
        "bad": bad,
        "serving": serving,
    }


def _nightly(db, w: dict, branch: str, commit: str) -> None:
    req = BenchRequest(
        target="vllm-serve",
        branch=branch,
        dataset=str(w["dataset"]),
        commit=commit,
        seed=7,
        nightly=NIGHT,
        trigger="nightly",
        transcript_mode=True,
    )

    def run(r: BenchRequest):
        return run_benchmark(db, r, None, show_progress=False)

    served(db, Serving(**w["serving"]), req, run)
    db.commit()


def test_the_two_repository_ab_names_vllm(db, world) -> None:
    from omni_tasks.contracts.night import NightQuestion
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs.ablate import AblateParams, attribution, run_ablations
    from omni_tasks.jobs.decide import decide_series
    from omni_tasks.series import Series

    _nightly(db, world, "main", world["good"])  # vllm-omni 0.30.0 pinning vLLM 0.27.0
    _nightly(db, world, "rebase", world["bad"])  # vllm-omni 0.30.1 pinning vLLM 0.28.0
    series = Series.of({"benchmark": "seed_tts_en"})
    decide_series(db, NightQuestion(series, NIGHT, "main", ("main", "rebase")), load_policy())
    db.commit()
    stacks = {
        r["branch"]: r["stack"]["vllm"]
        for r in db.execute("SELECT branch, stack FROM omni.run WHERE trigger = 'nightly'")
    }
    assert stacks == {"main": "0.27.0+test", "rebase": "0.28.0+test"}  # both moved
    p = AblateParams(
        nightly=NIGHT,
        candidate_target="vllm-serve",
        baseline_target="vllm-serve",
        transcript_mode=True,
        dataset=str(world["dataset"]),
        stage_isolation=False,
        ablations=[
            {"name": "vllm-at-last-good", "vllm": "0.27.0+test"},
            {"name": "vllm-omni-at-last-good", "commit": world["good"]},
        ],
        **world["serving"],
    )
    r = run_ablations(db, p, NIGHT)
    verdicts = {v.name: v.verdict for v in r.verdicts}
    assert verdicts == {
        "vllm-at-last-good": "regression gone",
        "vllm-omni-at-last-good": "unchanged",
    }
    assert attribution(p, r) == "vLLM carries the regression (taking it back removes it)"
    # Each arm ran in its own environment: one repository changed, the other held.
    runs = {
        k.split(":")[2]: row["stack"]["vllm"]
        for row in db.execute("SELECT run_key, stack FROM omni.run WHERE trigger = 'ablate'")
        if (k := row["run_key"])
    }
    assert runs["vllm-at-last-good"] == "0.27.0+test"
    assert runs["vllm-omni-at-last-good"] == "0.28.0+test"


def test_a_bisect_over_vllm_commits_with_vllm_omni_fixed(db, world) -> None:
    from omni_tasks.jobs.bisect import BisectParams, run_bisect

    commits = [hashlib.sha1(f"vllm{i}".encode()).hexdigest() for i in range(3)]
    for i, c in enumerate(commits):  # vLLM's per-commit wheel directories
        _wheel(world["index"] / c, f"0.28.0.dev{i}+g{c[:9]}", planted=i >= 1)
    p = BisectParams(
        history=commits,
        axis="vllm",
        omni_commit=world["good"],
        target="vllm-serve",
        transcript_mode=True,
        dataset=str(world["dataset"]),
        **world["serving"],
    )
    r = run_bisect(db, p, NIGHT)
    assert (r.last_good, r.first_bad) == (commits[0], commits[1]), r.notes
    assert r.endpoints is not None and r.endpoints.verified
    rows = db.execute("SELECT commit_sha, stack FROM omni.run WHERE trigger = 'bisect'").fetchall()
    assert {row["commit_sha"] for row in rows} == {world["good"]}  # vllm-omni held
    assert {row["stack"]["vllm_build"] for row in rows} <= set(commits)

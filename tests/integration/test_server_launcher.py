"""The server launcher with a fake `vllm` on PATH that serves the simulator."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from omni_tasks.dataset import load_dataset
from omni_tasks.synthesis import protocol
from omni_tasks.synthesis.client import ClientConfig, synthesize_all
from omni_tasks.synthesis.server import ServerSpec, ServerStartError, launched, provenance
from tests.fakes.vllm_env import fake_vllm_env as _fake_env

REPO = Path(__file__).resolve().parents[2]


def _git_history(tmp_path: Path) -> tuple[Path, list[str]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    shas = []
    for i in range(3):
        (repo / "f.txt").write_text(str(i))
        subprocess.run([*git, "add", "f.txt"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", f"c{i}"], check=True)
        out = subprocess.run(
            [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
        )
        shas.append(out.stdout.strip())
    return repo, shas


def test_launch_serve_provenance_and_teardown(tmp_path: Path, monkeypatch) -> None:
    env = _fake_env(tmp_path)
    monkeypatch.setenv("PATH", env["PATH"])
    deploy = tmp_path / "qwen3_omni_moe.yaml"
    deploy.write_text(yaml.safe_dump({"stage_args": {"0": {"engine_args": {"max_num_seqs": 5}}}}))
    spec = ServerSpec(
        python=sys.executable,
        model="Qwen/Qwen3-Omni-30B-A3B-Instruct",
        log_path=tmp_path / "run" / "server.log",
        deploy_config=deploy,
        deploy_overrides={"stage_args": {"0": {"engine_args": {"enforce_eager": True}}}},
        gpus=(0, 1),
        env={"PYTHONPATH": env["PYTHONPATH"]},
        startup_timeout_s=60,
    )
    with launched(spec) as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert server.argv[1:3] == ["serve", spec.model] and "--omni" in server.argv
        merged = yaml.safe_load(
            Path(server.argv[server.argv.index("--deploy-config") + 1]).read_text()
        )
        assert merged["stage_args"]["0"]["engine_args"] == {
            "max_num_seqs": 5,
            "enforce_eager": True,
        }
        utts = load_dataset("demo").limit(3)
        cfg = ClientConfig(server.url, protocol.prompt_template("seed-tts-default"), seed=1)
        results = asyncio.run(synthesize_all(utts, cfg))
        assert [r.status for r in results] == ["ok"] * 3
        pgid = server.pid
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)  # the whole process group is gone
    assert "fake vllm serve" in spec.log_path.read_text()

    repo, (c0, c1, c2) = _git_history(tmp_path)
    prov = provenance(spec, repo=repo, commit=c0, baseline_head=c1, recorded_head=c2)
    assert prov.stack["vllm"] == "0.11.0" and prov.stack["vllm_omni"] == "0.11.0rc1"
    assert prov.stack["torch"] is not None and "python" in prov.stack
    assert prov.commit_time is not None
    assert prov.lineage.reachable_from_baseline_head is True  # c0 is an ancestor of main's head
    assert prov.lineage.differs_from_recorded_head is True  # the branch head that night was c2
    clean = provenance(spec, repo=repo, commit=c2, baseline_head=c1, recorded_head=c2)
    assert not any(clean.lineage.flags().values())


def test_a_server_that_dies_at_startup_fails_fast_with_its_log(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", _fake_env(tmp_path, mode="crash")["PATH"])
    spec = ServerSpec(
        python=sys.executable, model="m", log_path=tmp_path / "server.log", startup_timeout_s=60
    )
    with pytest.raises(ServerStartError) as caught, launched(spec):
        pass
    # The message names the step and the log; the server's own words stay in the log (they are
    # untrusted and the message travels to Slack and check runs).
    assert str(caught.value).endswith(f"server log: {spec.log_path}")
    assert "CUDA out of memory" not in str(caught.value)
    assert "CUDA out of memory" in spec.log_path.read_text()


def test_a_server_that_never_gets_healthy_is_given_up_and_stopped(
    tmp_path: Path, monkeypatch
) -> None:
    import time

    monkeypatch.setenv("PATH", _fake_env(tmp_path, mode="hang")["PATH"])
    spec = ServerSpec(
        python=sys.executable, model="m", log_path=tmp_path / "server.log", startup_timeout_s=1.5
    )
    started = time.monotonic()
    with pytest.raises(ServerStartError, match=r"not healthy after 1\.5 s"), launched(spec):
        pass
    assert time.monotonic() - started < 30  # given up at the timeout, its process group stopped


def test_nightly_serves_each_branch_from_its_own_environment(
    db, tmp_path: Path, monkeypatch
) -> None:
    """A `vllm-serve` target: the nightly launches the commit's server (fake vllm), on its GPUs
    and a free port, benchmarks it, records the stack, and stops it."""
    import datetime as dt

    from omni_tasks.config import get_settings
    from omni_tasks.deployment.schema import NightlyParams
    from omni_tasks.jobs.nightly import record_heads, run_branch

    env = _fake_env(tmp_path)
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("OMNI_GPUS", "0,1")
    # The worker's own interpreter is a trusted executable here (trigger-form paths are not).
    monkeypatch.setenv("OMNI_TRUSTED_ROOTS", json.dumps([sys.prefix]))
    get_settings.cache_clear()
    params = NightlyParams(
        branches=["main"],
        targets={"main": "vllm-serve"},
        transcript_mode=True,
        limit=5,
        environment={"strategy": "existing", "python": sys.executable},
        server={
            "model": "openbmb/MiniCPM-o-4_5",
            "gpus": 2,
            "startup_timeout_s": 60,
            "env": {"PYTHONPATH": env["PYTHONPATH"]},
        },
    )
    (plan,) = record_heads(db, [params], dt.date(2026, 11, 24), backfill=False)
    key = run_branch(db, params, plan, trigger="manual")
    run = db.execute(
        "SELECT status, stack, execution, config FROM omni.run WHERE run_key = %s", (key,)
    ).fetchone()
    assert run["status"] == "complete"
    assert run["config"]["model"] == "openbmb/MiniCPM-o-4_5"  # asked of the server it started
    log = Path(run["stack"]["server_log"]).read_text()
    assert "serve openbmb/MiniCPM-o-4_5" in log
    assert run["stack"]["vllm"] == "0.11.0" and run["stack"]["server_log"].endswith(".log")
    assert "fake vllm serve" in Path(run["stack"]["server_log"]).read_text()


def test_minicpm_o_daily_omni_is_served_and_asked_by_its_recipe(
    db, tmp_path: Path, monkeypatch
) -> None:
    """A launched MiniCPM-o server for Daily-Omni gets upstream's test's flags
    (test_minicpmo_4_5.py `_DAILY_OMNI_SERVER_ARGS`); its questions go as 1 fps frame/audio
    pairs with 512 tokens, and the simulator, listening to every second, answers them all right.
    Qwen3-Omni's server gets no such flags."""
    import datetime as dt

    from omni_tasks import benchmarks
    from omni_tasks.config import get_settings
    from omni_tasks.deployment.schema import NightlyParams
    from omni_tasks.jobs.nightly import record_heads, run_branch

    interleave_args = [
        "--trust-remote-code",
        "--interleave-mm-strings",
        "--media-io-kwargs",
        '{"video":{"fps":1,"num_frames":128}}',
    ]
    env = _fake_env(tmp_path)
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("OMNI_GPUS", "0")
    monkeypatch.setenv("OMNI_TRUSTED_ROOTS", json.dumps([sys.prefix]))
    get_settings.cache_clear()
    params = NightlyParams(
        benchmark="daily_omni",
        branches=["main"],
        targets={"main": "vllm-serve"},
        environment={"strategy": "existing", "python": sys.executable},
        server={
            "model": "openbmb/MiniCPM-o-4_5",
            "gpus": 1,
            "startup_timeout_s": 60,
            # The simulator this checkout has (the interpreter may have another installed).
            "env": {"PYTHONPATH": os.pathsep.join([env["PYTHONPATH"], str(REPO)])},
        },
    )
    (plan,) = record_heads(db, [params], dt.date(2026, 11, 24), backfill=False)
    key = run_branch(db, params, plan, trigger="manual")
    run = db.execute(
        "SELECT status, stack, config, system_prompt, summary FROM omni.run WHERE run_key = %s",
        (key,),
    ).fetchone()
    assert run["status"] == "complete" and run["stack"]["server_args"] == interleave_args
    assert (
        "--interleave-mm-strings --media-io-kwargs" in Path(run["stack"]["server_log"]).read_text()
    )
    assert (run["config"]["pack_mode"], run["config"]["output_len"]) == ("minicpm-interleave", 512)
    assert run["system_prompt"] is None  # MiniCPM-o's omni system text is empty
    wrong = db.execute(
        "SELECT count(*) FILTER (WHERE g.incorrect) AS wrong, count(*) AS n FROM omni.clip_grade g"
        " JOIN omni.grading USING (grading_id) JOIN omni.run r USING (run_id) WHERE r.run_key = %s",
        (key,),
    ).fetchone()
    assert (wrong["wrong"], wrong["n"]) == (0, 48)  # up to 4 beeps over 2 s, in 1 s pieces
    assert benchmarks.get("daily_omni").server_args("Qwen/Qwen3-Omni-30B-A3B-Instruct") == ()

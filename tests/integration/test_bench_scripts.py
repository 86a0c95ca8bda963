"""Every benchmark script runs, at a tiny size: a refactor that breaks one fails here, not on
the next person who wants a figure (`make bench` had stopped at its second script). The figures
printed are not checked (speed is measured, not asserted); that each script finishes and prints
its result line is. The sizes are the smallest that still take every path of each script: the
published figures come from `make bench`, at the scripts' own defaults."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ADMIN_DSN

BENCH = Path(__file__).resolve().parents[2] / "bench"
# script → (tiny arguments, text its output must contain)
SMOKE = {
    "bench_stats.py": (["--repeat", "1"], "ratio ours / numpy"),
    "bench_ingest.py": (["--runs", "1"], "row-by-row INSERT"),
    "bench_platform.py": ([], "raw COPY of the same rows"),
    "bench_fleet.py": (["--models", "1", "--lanes", "2", "--clips", "50"], "one-series night"),
    "bench_fleet_year.py": (
        ["--weeks", "1", "--reps", "1", "--lanes", "1", "--scale", "0.02"],
        "fleet overview panel p95",
    ),
    "bench_ab.py": (["--pairs", "40"], "ratio to the nightly's one-night rule"),
    "bench_ablation.py": (["--nights", "3"], "ratio budget 1 / one round"),
    "bench_fleet_history.py": (
        ["--nights", "2", "--items", "3", "--single", "2", "--repeat", "2"],
        "ratio sync / single-artifact import",
    ),
    "bench_gate_advice.py": (
        ["--histories", "1", "--nights", "5", "--clips", "40"],
        "time ratio per-item / nightly figures",
    ),
    "bench_client.py": (["--requests", "20", "--repeat", "1"], "ratio (ours/plain)"),
    "bench_grading.py": (["--clips", "2", "--batch", "2"], "mean WER of one-at-a-time"),
    "bench_scale.py": (["--sizes", "1.05e5", "--reps", "1"], "worst panel p95"),  # 2 nights
    "bench_statistics_sim.py": (
        ["--nights", "2000", "--histories", "4", "--group-nights", "20", "--series", "3"],
        "wrote",
    ),
    "bench_pipeline.py": (
        ["--clips", "2", "--synthesis-s", "0.5", "--row-writes", "10"],
        "pipelined_over_synthesis",
    ),
    "bench_report.py": (["--sizes", "30"], "ratio opus / wav"),
    "bench_dag_parse.py": (  # one DAG file: each is a fresh interpreter importing Airflow
        ["--repeat", "1", str(BENCH.parent / "dags" / "omni_nightly.py")],
        "worst parse above bare Airflow",
    ),
    "bench_grading_gpu.py": (["--shape", "tiny", "--n", "2", "--tokens", "2"], "tokens_per_clip"),
    "bench_voice_proxy.py": (["--clips", "3"], "ratio labelling / experiment"),  # 1 per voice
    "bench_ledger.py": (
        ["--nights", "9", "--items", "40", "--window", "8", "--reps", "1"],
        "ratio full / incremental",
    ),
}


def test_every_bench_script_has_a_smoke_run() -> None:
    assert set(SMOKE) == {p.name for p in BENCH.glob("bench_*.py")}


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_bench_script_runs_at_a_tiny_size(script: str, tmp_path: Path) -> None:
    args, expected = SMOKE[script]
    if script in (
        "bench_statistics_sim.py",
        "bench_pipeline.py",
        "bench_ablation.py",
        "bench_gate_advice.py",
    ):
        args = [*args, "--results", str(tmp_path / "results.json")]  # not the committed figures
    env = {
        **os.environ,
        "OMNI_TEST_ADMIN_DSN": ADMIN_DSN,
        "OMNI_HOME": str(tmp_path / "home"),
        "CUDA_VISIBLE_DEVICES": "",
    }
    out = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    assert expected in out.stdout, out.stdout[-2000:]

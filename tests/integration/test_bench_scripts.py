"""Every benchmark script runs, at a tiny size: a refactor that breaks one fails here, not on
the next person who wants a figure (`make bench` had stopped at its second script). The figures
printed are not checked (speed is measured, not asserted); that each script finishes and prints
its result line is. The sizes are the smallest that still take every path of each script: the
published figures come from `make bench`, at the scripts' own defaults."""

from __future__ import annotations

import json
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


def bench(tmp_path: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`script` in bench/ with `args`, in `tmp_path` with a home of its own."""
    return subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        cwd=tmp_path,
        env={**os.environ, "OMNI_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_statistics_bench_takes_a_clip_model(tmp_path: Path) -> None:
    """`--clip-model FILE --json OUT --quick` (issue 65) writes every key the issue names, and
    the figures make sense: the step alerts far more often than A/A noise confirms."""
    out = tmp_path / "figures.json"
    model = str(BENCH / "clip_models" / "independent.py")
    run = bench(
        tmp_path, "bench_statistics_sim.py", "--clip-model", model, "--json", str(out), "--quick"
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    figures = json.loads(out.read_text())
    keys = {
        "aa_false_confirmed_per_series_night",
        "aa_false_confirmed_upper95",
        "alerted_by_night",
        "median_nights_to_alert",
        "p90_nights_to_alert",
        "extra_full_runs_per_alert",
        "extra_full_runs_per_quiet_night",
        "aa_resolved_within_3",
        "step_resolved_within_30",
        "bisect_wrong_first_bad",
        "bisect_wrong_first_bad_upper95",
        "bisect_full_runs",
        "n",
        "kind",
        "aa_series_nights",
        "step_series",
        "resolution_series",
        "bisect_histories",
    }
    assert keys <= figures.keys()
    assert (figures["n"], figures["kind"]) == (1088, "wer")
    by_night = figures["alerted_by_night"]
    assert set(by_night) == {"1", "2", "4"}
    assert by_night["1"] <= by_night["2"] <= by_night["4"]
    assert by_night["4"] > 10 * figures["aa_false_confirmed_upper95"]
    assert figures["aa_resolved_within_3"] > figures["step_resolved_within_30"]
    assert 0 <= figures["bisect_wrong_first_bad"] <= figures["bisect_wrong_first_bad_upper95"]


def test_statistics_bench_sets_a_clip_models_constants(tmp_path: Path) -> None:
    """`--set NAME=VALUE` replaces one of the model's constants (a noise level) and the figures
    say so; a name the model does not define is refused, naming it."""

    model = str(BENCH / "clip_models" / "run_noise.py")

    def noisy(*extra: str) -> subprocess.CompletedProcess[str]:
        quick = ("--clip-model", model, "--quick", "--n", "300")
        return bench(tmp_path, "bench_statistics_sim.py", *quick, *extra)

    out = tmp_path / "figures.json"
    run = noisy("--set", "RUN_SD=0.015", "--json", str(out))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert figures["n"] == 300
    assert figures["settings"] == {"N": 300.0, "RUN_SD": 0.015}
    refused = noisy("--set", "NOISE=1")
    assert refused.returncode != 0
    assert "no module constant NOISE to set" in refused.stderr


def test_the_fleet_nights_false_alarms_sum_the_stored_series_figures(tmp_path: Path) -> None:
    """bench/fleet_false_alarms.py adds each series' stored A/A rate (union bound); a result
    file that is not at run-level noise 1.5 points is refused rather than summed."""
    shipped = BENCH / "results"
    run = bench(tmp_path, "fleet_false_alarms.py", "--results", str(shipped))
    assert run.returncode == 0, run.stderr[-2000:]
    total = 0.0
    for line in run.stdout.splitlines()[:-1]:  # "  2 × run_noise  1088: 4.2e-05 a series-night"
        count, _, model, n = line.split()[:4]
        stored = json.loads((shipped / f"clip_model_{model}_sd015_n{n[:-1]}.json").read_text())
        total += int(count) * stored["aa_false_confirmed_per_series_night"]
    assert f"≤ {total:.1e} false confirmations" in run.stdout.splitlines()[-1]
    assert sum(int(line.split()[0]) for line in run.stdout.splitlines()[:-1]) == 12
    copied = tmp_path / "results"
    copied.mkdir()
    for f in shipped.glob("clip_model_*_sd015_n*.json"):
        (copied / f.name).write_text(f.read_text())
    other = json.loads((copied / "clip_model_run_noise_sd015_n544.json").read_text())
    other["settings"]["RUN_SD"] = 0.03
    (copied / "clip_model_run_noise_sd015_n544.json").write_text(json.dumps(other))
    refused = bench(tmp_path, "fleet_false_alarms.py", "--results", str(copied))
    assert refused.returncode != 0 and "not run-level noise 1.5 points" in refused.stderr

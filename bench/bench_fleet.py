"""A fleet night's platform overhead: everything but synthesis and ASR, for models × benchmarks
× lanes series of 2 branches each (default 3 × 4 × 3 = 36 series, 1088 items per run) — store
the runs, statistics of every run, each series decided against its own baseline with its alert
plan (`decide_fleet`), one HTML report per series plus dashboards, alert delivery. The
baseline, measured in the same run on the same database, is a one-series night of the same
size; the fleet figure is printed as a ratio to it (linear = the number of series). Goal:
linear in series, and under 60 s on 2 cores.

    .venv/bin/python bench/bench_fleet.py [--models 3] [--lanes 3] [--clips 1088]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import io
import json
import os
import tempfile
import time
from pathlib import Path

from artifacts import ABShape, ab_artifacts, parse_artifact
from common import scratch_db

from omni_tasks.alerts.slack import default_sink, dispatch
from omni_tasks.benchmarks.seed_tts.artifact import ARTIFACT_GRADER
from omni_tasks.config import get_settings
from omni_tasks.deployment.schema import NightlyParams
from omni_tasks.gates.policy import load_policy
from omni_tasks.jobs import decide, nightly
from omni_tasks.jobs.gate_advice import advise_fleet
from omni_tasks.store.runs import save_run

MODELS = ["Qwen/Qwen3-Omni-30B-A3B-Instruct", "openbmb/MiniCPM-o-4_5", "Qwen/Qwen2.5-Omni-7B"]
BENCHMARKS = ["seed_tts_en", "seed_tts_zh", "daily_omni", "librispeech"]
LANES = ["cuda-h100x2", "rocm-mi300", "npu-a3"]


def series_params(models: int, lanes: int) -> list[NightlyParams]:
    return [
        NightlyParams(
            benchmark=b,
            server={"model": m},
            lane=lane,
            branches=["main", "rebase"],
            baseline="main",
            targets={"main": "simulator:main", "rebase": "simulator:rebase"},
            transcript_mode=True,
        )
        for m in MODELS[:models]
        for b in BENCHMARKS
        for lane in LANES[:lanes]
    ]


def night(conn, series: list[NightlyParams], arts, when: dt.date, policy) -> dict[str, float]:
    """The platform's part of one night, step by step, as the DAG's tasks call it."""
    stages: dict[str, float] = {}
    t0 = time.perf_counter()
    for p in series:
        for art in arts:
            grades = art.grades
            if p.bench == "daily_omni":  # answers, right or wrong, not transcripts
                grades = [
                    dataclasses.replace(g, incorrect=(g.wer or 0) > 0.5, wer=None) for g in grades
                ]
            spec = dataclasses.replace(
                art.spec,
                benchmark=p.bench,
                model=p.series.model,
                lane=p.lane,
                nightly=when,
            )
            save_run(conn, spec, art.clips, (ARTIFACT_GRADER, grades))
    stages["store the runs"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    nightly.summarize_night(conn, series, when, policy)
    stages[f"statistics ({len(policy.taus)} τ per run)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = decide.decide_fleet(conn, when, policy, series)
    assert not out.failed, out.failed
    stages["decide every series + alert plans"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    assert not advise_fleet(conn, when, policy, series)
    stages["gate advice (off the alerts' path)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    nightly.refresh_outputs(conn, [p.series for p in series], when, policy.primary_tau)
    stages["reports (one per series) + dashboards"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        dispatch(conn, default_sink())
    stages["alert delivery (local outbox)"] = time.perf_counter() - t0
    return stages


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=3, choices=range(1, len(MODELS) + 1))
    ap.add_argument("--lanes", type=int, default=3, choices=range(1, len(LANES) + 1))
    ap.add_argument("--clips", type=int, default=1088, help="items per run")
    args = ap.parse_args()
    policy = load_policy()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["OMNI_HOME"] = tmp
        get_settings.cache_clear()
        arts = []
        k = args.clips / 1088  # the default layout, scaled
        shape = ABShape(args.clips, int(80 * k), int(71 * k), int(9 * k))
        for branch, doc in zip(("main", "rebase"), ab_artifacts(shape, seed=3), strict=True):
            path = Path(tmp) / f"{branch}.json"
            path.write_text(json.dumps(doc))
            arts.append(parse_artifact(path, branch=branch, nightly=dt.date(2026, 11, 28)))
        fleet = series_params(args.models, args.lanes)
        with scratch_db() as conn:
            one = night(conn, fleet[:1], arts, dt.date(2026, 11, 27), policy)
            many = night(conn, fleet, arts, dt.date(2026, 11, 28), policy)
    n = len(fleet)
    base, total = sum(one.values()), sum(many.values())
    print(
        f"fleet night: {args.models} models × {len(BENCHMARKS)} benchmarks × {args.lanes} lanes "
        f"= {n} series × 2 branches × {args.clips} items (platform only: no synthesis, no ASR)"
    )
    for name, s in many.items():
        print(f"  {name:40} {s:7.2f} s   ({s / max(one[name], 1e-9):5.1f}× one series)")
    print(f"  {'total':40} {total:7.2f} s   (goal < 60 s: {'met' if total < 60 else 'MISSED'})")
    print(
        f"  one-series night (baseline, same run)    {base:7.2f} s   fleet = {total / base:.1f}× "
        f"one series for {n} series ({total / base / n:.2f} per series; 1.00 = linear)"
    )


if __name__ == "__main__":
    main()

"""A/A false confirmations per fleet night (issue 65's goal: ≤ 1e-3 for 12 series with
run-level noise of 1.5 points), from the plug-in bench's per-series figures: the union bound,
Σ over the fleet's series of each one's rate per series-night (and of its upper 95 % bound),
which holds whatever the series' correlation.

    .venv/bin/python bench/fleet_false_alarms.py [--results bench/results]

Each series' figure is `bench_statistics_sim.py --clip-model MODEL --n N --set RUN_SD=0.015
--workers 1 --json bench/results/clip_model_<model>_sd015_n<N>.json`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

# 12 series at the sizes issue 65 lists as the fleet's (REFERENCE §6): seed-TTS en 1,088 on
# CUDA and AMD, zh 2,020, the duplex sessions' 200 turns and 544; Daily-Omni 1,197 (Qwen3-Omni
# on CUDA and AMD, MiniCPM-o on CUDA and NPU), Video-MME 2,700 (CUDA, NPU) and 300 questions.
FLEET = (
    ("run_noise", 1088, 2),
    ("run_noise", 2020, 1),
    ("run_noise", 200, 1),
    ("run_noise", 544, 1),
    ("multiple_choice_run_noise", 1197, 4),
    ("multiple_choice_run_noise", 2700, 2),
    ("multiple_choice_run_noise", 300, 1),
)
GOAL = 1e-3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    rate = upper = 0.0
    for model, n, count in FLEET:
        path = args.results / f"clip_model_{model}_sd015_n{n}.json"
        if not path.exists():
            raise SystemExit(f"{path}: missing; the module docstring says how to write it")
        fig = json.loads(path.read_text())
        if fig.get("settings", {}).get("RUN_SD") != 0.015 or fig["n"] != n:
            raise SystemExit(f"{path}: not run-level noise 1.5 points at {n} items")
        r, u = fig["aa_false_confirmed_per_series_night"], fig["aa_false_confirmed_upper95"]
        rate, upper = rate + count * r, upper + count * u
        print(f"  {count} × {model} {n:5}: {r:.1e} a series-night (upper 95 % {u:.1e})")
    series = sum(count for *_, count in FLEET)
    verdict = "met" if upper <= GOAL else "MISSED"
    print(
        f"fleet night of {series} series, run-level noise 1.5 points: ≤ {rate:.1e} false "
        f"confirmations (upper 95 % ≤ {upper:.1e}; goal ≤ {GOAL:g}: {verdict})"
    )


if __name__ == "__main__":
    main()

"""What ablations cost and how often they decide (issue 45 #10): the ablate job's own
sequential code (analysis/ablation.py) on simulated confirmed nights at 1,088 clips, each
arm's runs drawn at its clips' failure probabilities (bench/simlib.py: the `SEED_TTS`
model, a step's lifted clips from `step_probabilities`).

    .venv/bin/python bench/bench_ablation.py [--nights 2000]

Rows: a step of 8 → 14 % and 8 → 10.1 %, with the shipped four's case (one ablation takes the
step away, three leave it) and with one that takes it from half the lifted clips ("partial"),
at a budget of 1 and 2 full runs. The baseline, measured in the same run, is one round only
(the job before repeats: every arm once at one seed). Rates, not timings; not a timed test.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from scipy.stats import beta
from simlib import ONE_KNOB, WITH_PARTIAL, AblationCosts, ablation_costs

from omni_tasks.gates.policy import load_policy

RESULTS = Path(__file__).parent / "results" / "ablation.json"
ONE_ROUND = 1e-9  # a budget no second round fits: the first round always runs
CASES = [
    ("8 → 14 %, one knob", 0.14, ONE_KNOB),
    ("8 → 14 %, with a partial", 0.14, WITH_PARTIAL),
    ("8 → 10.1 %, one knob", 0.101, ONE_KNOB),
]


def upper(k: int, n: int) -> float:
    """The exact (Clopper-Pearson) one-sided 95 % upper bound of a rate seen k times in n."""
    return float(beta.ppf(0.95, k + 1, n - k)) if k < n else 1.0


def row(r: AblationCosts, arms: int) -> dict[str, float]:
    verdicts = r.nights * arms
    return {
        "decided": 1 - r.undecided / r.nights,
        "not_reproduced": r.not_reproduced / r.nights,
        "wrong_verdicts": r.wrong / verdicts,
        "wrong_verdicts_upper": upper(r.wrong, verdicts),
        "full_runs_mean": sum(r.full_runs) / r.nights,
        "full_runs_p90": r.cost(0.9),
        "full_runs_max": max(r.full_runs),
        "seeds_max": max(r.seeds),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nights", type=int, default=2000)
    ap.add_argument("--results", type=Path, default=RESULTS, help="where the figures go")
    args = ap.parse_args()
    policy = load_policy().for_benchmark("seed_tts")
    out: dict[str, dict[str, dict[str, float]]] = {}
    for i, (name, tail, truths) in enumerate(CASES):
        out[name] = {}
        for label, budget in (("one round", ONE_ROUND), ("budget 1", 1.0), ("budget 2", 2.0)):
            r = ablation_costs(tail, args.nights, 100 + i, policy, truths=truths, budget=budget)
            f = out[name][label] = row(r, len(truths))
            print(
                f"{name}, {label} ({r.nights} nights): decided {f['decided']:.1%}, not "
                f"reproduced {f['not_reproduced']:.1%}, wrong verdicts {f['wrong_verdicts']:.2%} "
                f"(≤ {f['wrong_verdicts_upper']:.2%}), full runs mean {f['full_runs_mean']:.2f}"
                f" p90 {f['full_runs_p90']:.2f} max {f['full_runs_max']:.2f}, up to "
                f"{f['seeds_max']:.0f} seeds"
            )
        base, one = out[name]["one round"], out[name]["budget 1"]
        print(
            f"  {name}: ratio budget 1 / one round: decided {one['decided']:.1%} / "
            f"{base['decided']:.1%}, cost ×{one['full_runs_mean'] / base['full_runs_mean']:.2f}"
        )
    goal = out["8 → 14 %, one knob"]["budget 1"]
    met = goal["decided"] >= 0.99 and goal["full_runs_max"] <= 1.0
    print(
        f"goal (8 → 14 %, shipped four's case, ≤ 1 full run, each ablation decided): "
        f"{'met' if met else 'MISSED'}"
    )
    args.results.parent.mkdir(exist_ok=True)
    args.results.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {args.results}")


if __name__ == "__main__":
    main()

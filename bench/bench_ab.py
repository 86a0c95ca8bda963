"""The on-demand A/B's repeat rule (omni_tasks/ab/sequential.py), simulated over the real
decision code on the two-class clip model (bench/simlib.py): how often an A/A pair
ends `failure` (REGRESSED), how often a real step does within the budget, the clips spent.
The baseline, on the same simulated pairs, is the nightly's one-night paired rule at α (what
a single full A/B run decided by `gate` would say); rates are printed beside it.

    .venv/bin/python bench/bench_ab.py [--pairs 20000] [--budget 6000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json

import numpy as np
from simlib import (
    aa_probabilities,
    ab_rates,
    paired_point,
    step_probabilities,
)

from omni_tasks.gates.policy import load_policy


def nightly_rule(base_p: np.ndarray, head_p: np.ndarray, pairs: int, seed: int) -> float:
    """The nightly's one-night paired verdict on one full run a side: P(REGRESSED)."""
    policy, rng, hits = load_policy(), np.random.default_rng(seed), 0
    for _ in range(pairs):
        b, h = rng.random(len(base_p)) < base_p, rng.random(len(head_p)) < head_p
        table = [int((b & h).sum()), int((h & ~b).sum()), int((b & ~h).sum()), int((~b & ~h).sum())]
        hits += paired_point(dt.date(2026, 1, 1), table, policy).verdict == "REGRESSED"
    return hits / pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--budget", type=int, default=6000)
    args = ap.parse_args()
    policy = load_policy()
    aa = aa_probabilities()
    settings = {"A/A": (aa, aa, args.pairs)}
    for tail in (0.14, 0.101):
        good, bad = step_probabilities(tail)
        settings[f"8 → {tail:.1%}"] = (good, bad, max(args.pairs // 10, 20))
    out = {}
    for name, (base_p, head_p, pairs) in settings.items():
        rates = ab_rates(base_p, head_p, pairs, args.budget, seed=11, policy=policy)
        out[name] = {
            **rates.to_json(),
            "nightly_rule_regressed": nightly_rule(base_p, head_p, pairs, 11),
        }
    print(json.dumps({"budget": args.budget, "settings": out}, indent=2))
    for name, r in out.items():
        ratio = (
            r["failure"] / r["nightly_rule_regressed"]
            if r["nightly_rule_regressed"]
            else float("nan")
        )
        print(
            f"{name}: failure {r['failure']:.2%} (ratio to the nightly's one-night rule "
            f"{r['nightly_rule_regressed']:.2%}: {ratio:.2f}), success {r['success']:.2%}, "
            f"neutral {r['neutral']:.2%}; {r['clips_mean']:.0f} clips and {r['looks_mean']:.2f} "
            f"repeats an A/B ({int(r['pairs'])} pairs)"
        )


if __name__ == "__main__":
    main()

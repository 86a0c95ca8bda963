"""Error rates of the gate and the bisection by seeded simulation, at full size (issue 18).

    .venv/bin/python bench/bench_statistics_sim.py [--nights 4000000] [--histories 3000]

A/A false confirmation after a mix of run-group and paired nights, and the bisection's wrong
first-bad rate and per-step errors over simulated 16-commit histories (8 → 14 % and
8 → 10.1 %). Rates, not timings: the A/A rows vary the share of group nights (0 is the
paired-only baseline). Writes bench/results/statistics_sim.json. Not a timed test.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from omni_tasks.analysis.policy import load_policy
from omni_tasks.analysis.simulation import aa_false_confirmation, bisect_errors

RESULTS = Path(__file__).parent / "results" / "statistics_sim.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nights", type=int, default=4_000_000)
    ap.add_argument("--histories", type=int, default=3000)
    ap.add_argument("--results", type=Path, default=RESULTS, help="where the figures go")
    args = ap.parse_args()
    policy = load_policy()
    out: dict[str, object] = {}
    t0 = time.perf_counter()
    for share in (0.0, 0.5, 1.0):
        r = aa_false_confirmation(policy, args.nights, seed=7, group_share=share)
        out[f"aa_group_share_{share:g}"] = {
            "nights": r.nights,
            "false_regressed_rate": r.regressed / r.nights,
            "false_confirmation_rate": r.rate,
        }
        print(
            f"A/A, previous night a group night with prob. {share:g}: false REGRESSED "
            f"{r.regressed / r.nights:.4%}, false confirmation {r.rate:.2e} "
            f"({r.confirmed} of {r.nights:,} nights; design target 1e-4, bound 2e-4)"
        )
    for tail in (0.14, 0.101):
        e = bisect_errors(tail, args.histories, seed=11).as_dict()
        out[f"bisect_8_to_{tail * 100:g}"] = e
        print(
            f"bisect 8 → {tail:.1%} over {args.histories} histories of 16 commits: wrong first "
            f"bad {e['wrong_first_bad_rate']:.2%}, good called bad "
            f"{e['good_called_bad_per_step']:.2%}/step, bad called good "
            f"{e['bad_called_good_per_step']:.2%}/step, undecided steps "
            f"{e['undecided_steps']:g}, {e['evaluations_per_bisect']:.1f} runs per bisection"
        )
    out["seconds"] = round(time.perf_counter() - t0, 1)
    args.results.parent.mkdir(exist_ok=True)
    args.results.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.results} ({out['seconds']} s)")


if __name__ == "__main__":
    main()

"""Error rates and costs of the gate, the bisection and the auto-bisect range by seeded
simulation, at full size (issues 18 and 32).

    .venv/bin/python bench/bench_statistics_sim.py [--nights 4000000] [--histories 3000]
        [--group-nights 200000] [--series 1000]

- A/A false confirmation after a paired or a run-group night (paired → paired is the
  baseline), and the fleet's rate: false confirmed alerts per calendar night across
  `--fleet` independent series; and by suite size (300 and 1,197 questions, seed-TTS at 544,
  1,088 and 2,020 items), under the policy and under the old pooled rule (pooled p below α).
- Run-group nights with run-level noise (each run's hard-set rate ± 3 points) and with copied
  seeds (one run counted as two), through the gate's copy rule and confirmation.
- Bisections of 16 commits at 8 → 14 %, 8 → 10.1 % and with no regression: wrong first bad,
  "no regression", cost in full-run equivalents (clips from stored nightly runs, and from
  fresh runs for comparison), steps.
- The auto-bisect range after a persisting 8 → 10.1 % step: how often it leaves the culprit
  out, against the old rule (the newest SAME night) on the same series.

Rates, not timings. Writes bench/results/statistics_sim.json. Not a timed test.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from omni_tasks.analysis import bisect as bisect_rules
from omni_tasks.analysis.simulation import (
    aa_false_confirmation,
    bisect_errors,
    group_false_confirmation,
    range_misses,
)
from omni_tasks.gates.policy import load_policy

RESULTS = Path(__file__).parent / "results" / "statistics_sim.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nights", type=int, default=4_000_000)
    ap.add_argument("--histories", type=int, default=3000)
    ap.add_argument("--group-nights", type=int, default=200_000)
    ap.add_argument("--series", type=int, default=1000)
    ap.add_argument("--fleet", type=int, default=12, help="independent series a night")
    ap.add_argument("--results", type=Path, default=RESULTS, help="where the figures go")
    args = ap.parse_args()
    policy = load_policy()
    out: dict[str, object] = {}
    t0 = time.perf_counter()
    for share in (0.0, 0.5):
        r = aa_false_confirmation(policy, args.nights, seed=7, group_share=share)
        row: dict[str, float] = {
            "nights": r.nights,
            "false_regressed_rate": r.regressed / r.nights,
            "false_confirmation_rate": r.rate,
        }
        if share == 0:
            row["fleet_false_alerts_per_night"] = args.fleet * r.rate
        out[f"aa_group_share_{share:g}"] = row
        print(
            f"A/A, previous night a group night with prob. {share:g}: false REGRESSED "
            f"{r.regressed / r.nights:.4%}, false confirmation {r.rate:.2e} "
            f"({r.confirmed} of {r.nights:,} nights; goal 1e-4)"
        )
        if share == 0:
            print(
                f"  a fleet of {args.fleet} series: {args.fleet * r.rate:.2e} false confirmed "
                "alerts per calendar night (goal 1e-3)"
            )
    old_pool = policy.model_copy(update={"confirm_pool_p": policy.alpha})
    for n in (300, 544, 1088, 1197, 2020):
        r = aa_false_confirmation(policy, args.nights // 2, seed=19, group_share=0.0, n=n)
        was = aa_false_confirmation(old_pool, args.nights // 2, seed=19, group_share=0.0, n=n)
        out[f"aa_paired_n_{n}"] = {
            "nights": r.nights,
            "false_regressed_rate": r.regressed / r.nights,
            "false_confirmation_rate": r.rate,
            "old_pooled_rule_false_confirmation_rate": was.rate,
        }
        print(
            f"A/A paired nights of {n} items: false REGRESSED {r.regressed / r.nights:.3%}, "
            f"false confirmation {r.rate:.2e} (goal 1e-4; pooled at α as before: "
            f"{was.rate:.2e}, ratio {r.rate / max(was.rate, 1e-12):.2f})"
        )
    for name, kw in (("run_noise_sd_0.03", {"run_sd": 0.03}), ("copied_seeds", {"copies": True})):
        reg, conf = group_false_confirmation(policy, args.group_nights, seed=13, **kw)
        out[f"aa_groups_{name}"] = {
            "nights": args.group_nights,
            "false_regressed_rate": reg / args.group_nights,
            "false_confirmation_rate": conf / args.group_nights,
        }
        print(
            f"A/A run-group nights, {name.replace('_', ' ')}: false REGRESSED "
            f"{reg / args.group_nights:.3%}, false confirmation {conf} of "
            f"{args.group_nights:,} nights"
        )
    for tail in (0.14, 0.101, None):
        label = "none" if tail is None else f"8_to_{tail * 100:g}"
        e = bisect_errors(tail, args.histories, seed=11).as_dict()
        fresh = bisect_errors(tail, args.histories // 3, seed=11, stored=False).as_dict()
        e["full_runs_mean_fresh_selection"] = fresh["full_runs_mean"]
        out[f"bisect_{label}"] = e
        print(
            f"bisect {label.replace('_', ' ')} over {args.histories} histories of 16 commits: "
            f"wrong first bad {e['wrong_first_bad_rate']:.2%}, no regression "
            f"{e['no_regression_rate']:.2%}, good called bad "
            f"{e['good_called_bad_per_step']:.2%}/step, bad called good "
            f"{e['bad_called_good_per_step']:.2%}/step, undecided steps "
            f"{e['undecided_steps']:g}, at most {e['most_steps']:g} steps; "
            f"{e['full_runs_mean']:.2f} full runs (p95 {e['full_runs_p95']:.2f}; "
            f"{e['full_runs_mean_fresh_selection']:.2f} choosing clips by fresh runs)"
        )
    new = range_misses(0.101, args.series, seed=17, policy=policy)
    rule = bisect_rules.NightEvidence.rules_out
    try:  # the old rule, on the same series: any SAME or IMPROVED night is a last good one
        bisect_rules.NightEvidence.rules_out = lambda self, _m: self.verdict in ("SAME", "IMPROVED")  # type: ignore[method-assign]
        old = range_misses(0.101, args.series, seed=17, policy=policy)
    finally:
        bisect_rules.NightEvidence.rules_out = rule  # type: ignore[method-assign]
    out["auto_bisect_range_8_to_10.1"] = {
        "series": args.series,
        "opened": new.opened,
        "culprit_excluded_rate": new.excluded_rate,
        "no_range_rate": new.no_range / max(new.opened, 1),
        "old_rule_culprit_excluded_rate": old.excluded_rate,
    }
    print(
        f"auto-bisect range after 8 → 10.1 % ({new.opened} alerts): culprit left out "
        f"{new.excluded_rate:.2%} (the newest SAME night as last good: "
        f"{old.excluded_rate:.2%}), no range {new.no_range / max(new.opened, 1):.2%}"
    )
    out["seconds"] = round(time.perf_counter() - t0, 1)
    args.results.parent.mkdir(exist_ok=True)
    args.results.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.results} ({out['seconds']} s)")


if __name__ == "__main__":
    main()

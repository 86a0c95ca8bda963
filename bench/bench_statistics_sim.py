"""Error rates and costs of the gate, the bisection and the alert lifecycle by seeded
simulation over the real decision code, at full size (issues 18, 32 and 45).

    .venv/bin/python bench/bench_statistics_sim.py [--nights 4000000] [--histories 3000]
        [--group-nights 200000] [--series 1000]
    .venv/bin/python bench/bench_statistics_sim.py --clip-model bench/clip_models/greedy.py
        --json OUT.json [--quick] [--n 544]

With `--clip-model` only that model's figures are computed (bench/clip_model_sim.py: the
item model as a plug-in, issue 65) and written to `--json` as one object.

Every rate is simulated on a named clip model (bench/simlib.py: `SEED_TTS`,
ψ ≈ .063, and `MULTIPLE_CHOICE`, ψ ≈ .17), with its 95 % Monte-Carlo bound where it is rare.

- A/A false confirmation after a paired or a run-group night, and per (family, n, ψ) over the
  sizes the fleet runs (seed-TTS 200–2,020, multiple choice 300–2,700), beside the old pooled
  rule; the fleet's rate (12 series of the real mix, each simulated at its own size).
- Run-group nights with run-level noise and with copied seeds.
- Bisections of 16 commits at 8 → 14 %, 8 → 10.1 %, none, and a server that breaks 90 % of
  clips; the same 2.1- and 6-point steps on `HELD_OUT`, a harder model the bench was not
  built on; with no regression and nightly seeds [s, s+1], how often a commit is named, with
  the check told the seeds on record and without.
- Alert resolution at every size (floor chosen from ψ/n): A/A alerts within 3 nights, the
  family's persisting step (2.1 points seed-TTS, 5 multiple choice) within 30, and where the
  size is gated wider a step at its floor; the auto-bisect range after a persisting step
  (8 → 10.1 % at 1,088 clips, a 5-point drop at 300 and 1,197 questions).
- Bisection of a 40-item suite's +45-point step, its budget chosen from the MDE.
- Detection delay: nights from a persisting 8 → 10.1 % (and 8 → 14 %) step to its alert.

Rates, not timings. Writes bench/results/statistics_sim.json. Not a timed test.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import clip_model_sim
from scipy.stats import beta
from simlib import (
    HELD_OUT,
    MULTIPLE_CHOICE,
    SEED_TTS,
    ClipModel,
    RangeMisses,
    aa_false_confirmation,
    alert_resolutions,
    bisect_errors,
    detection_delays,
    group_false_confirmation,
    pooled_power,
    range_misses,
)

from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.analysis.resolution import resolution_floor
from omni_tasks.gates.policy import load_policy

RESULTS = Path(__file__).parent / "results" / "statistics_sim.json"
SIZES: list[tuple[str, ClipModel, int]] = [
    *(("seed_tts", SEED_TTS, n) for n in (200, 544, 1088, 2020)),
    *(("multiple_choice", MULTIPLE_CHOICE, n) for n in (300, 1197, 2700)),
]
FAMILY_BENCHMARK = {"seed_tts": "seed_tts_en", "multiple_choice": "daily_omni"}
# Two models × seed-TTS en 1,088, zh 2,020 and a 544-clip limit, Daily-Omni 1,197, Video-MME
# 2,700 and a 300-question set.
FLEET = [("seed_tts", n) for n in (1088, 2020, 544) for _ in range(2)] + [
    ("multiple_choice", n) for n in (1197, 2700, 300) for _ in range(2)
]


def upper(k: int, n: int) -> float:
    """The exact (Clopper-Pearson) one-sided 95 % upper bound of a rate seen k times in n."""
    return float(beta.ppf(0.95, k + 1, n - k)) if k < n else 1.0


def _range_figures(r: RangeMisses) -> dict[str, float]:
    return {
        "series": r.series,
        "opened": r.opened,
        "holds_culprit_rate": r.holds_rate,
        "culprit_excluded_rate": r.excluded_rate,
        "no_range_rate": r.no_range / max(r.opened, 1),
        "width_nights_median": r.width(0.5),
        "width_nights_p90": r.width(0.9),
    }


# The persisting step each family's alert must track (issue 65): 8 → 10.1 % on seed-TTS, a
# 5-point drop on multiple choice.
TRACKED_STEP = {"seed_tts": 0.021, "multiple_choice": 0.05}


def _resolution_figures(policy: GatePolicy, series: int) -> dict[str, dict[str, float]]:
    """A/A alerts resolved within 3 nights and the family's persisting step resolved within
    30, at every size the fleet runs; where the size is gated wider (its floor above
    min_effect), also a step at the floor, the one it tracks."""
    out = {}
    for family, model, n in SIZES:
        floor, z_c = resolution_floor(model.psi, n, policy)
        step = TRACKED_STEP[family]
        row = {
            "floor_points": floor * 100,
            "bound_z": z_c,
            "gated_wider": floor > policy.min_effect,
            "aa_resolved_within_3": alert_resolutions(0.0, series, 3, 31, policy, n, model),
            "step_points": step * 100,
            "step_resolved_within_30": alert_resolutions(
                model.tail + step, max(1, series // 2), 30, 31, policy, n, model
            ),
        }
        said = (
            f"alert resolution, {model.name} {n} (floor {floor * 100:.2f} pts, bound z "
            f"{z_c:.2f}): A/A within 3 nights {row['aa_resolved_within_3']:.1%} (goal ≥ 95 %), "
            f"a persisting {step * 100:g}-point step within 30 {row['step_resolved_within_30']:.1%}"
        )
        if floor > policy.min_effect:
            at = alert_resolutions(
                model.tail + floor, max(1, series // 2), 30, 31, policy, n, model
            )
            row["floor_step_resolved_within_30"] = at
            said += (
                f" — gated wider, refused for step tracking (a step at the "
                f"{floor * 100:.1f}-pt floor resolves {at:.1%})"
            )
        else:
            said += " (goal ≤ 5 %)"
        out[f"{family}_{n}"] = row
        print(said, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nights", type=int, default=4_000_000)
    ap.add_argument("--histories", type=int, default=3000)
    ap.add_argument("--group-nights", type=int, default=200_000)
    ap.add_argument("--series", type=int, default=1000)
    ap.add_argument("--results", type=Path, default=RESULTS, help="where the figures go")
    ap.add_argument("--clip-model", type=Path, help="a plug-in item model (clip_model_sim.py)")
    ap.add_argument("--json", type=Path, help="with --clip-model: where its figures go")
    ap.add_argument("--quick", action="store_true", help="with --clip-model: a smoke size")
    ap.add_argument("--n", type=int, help="with --clip-model: override the model's N")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="with --clip-model: set one of the model's constants (RUN_SD=0.015)",
    )
    ap.add_argument("--workers", type=int, default=2, help="with --clip-model: processes")
    ap.add_argument("--scale", type=float, default=1.0, help="with --clip-model: × series")
    ap.add_argument(
        "--resolution-series",
        type=int,
        help="with --clip-model: series of the two resolution figures (default 400 × scale)",
    )
    args = ap.parse_args()
    policy = load_policy()
    if args.clip_model is not None:
        _clip_model(args, policy)
        return
    out: dict[str, object] = {}
    t0 = time.perf_counter()
    for share in (0.0, 0.5):
        r = aa_false_confirmation(policy, args.nights, seed=7, group_share=share)
        row: dict[str, float] = {
            "nights": r.nights,
            "false_regressed_rate": r.regressed / r.nights,
            "false_confirmation_rate": r.rate,
        }
        out[f"aa_group_share_{share:g}"] = row
        print(
            f"A/A, previous night a group night with prob. {share:g}: false REGRESSED "
            f"{r.regressed / r.nights:.4%}, false confirmation {r.rate:.2e} "
            f"({r.confirmed} of {r.nights:,} nights; goal 1e-4)"
        )
    rows: dict[tuple[str, int], tuple[int, int]] = {}  # (family, n) -> (confirmed, nights)
    for family, model, n in SIZES:
        pol = policy.for_benchmark(FAMILY_BENCHMARK[family])
        # the rule before 2026-12-02: the night before pooled at α
        old_pool = pol.model_copy(update={"confirm_pool_p": pol.alpha, "confirm_pool_nights": 2})
        r = aa_false_confirmation(pol, args.nights // 2, seed=19, group_share=0.0, n=n, model=model)
        was = aa_false_confirmation(
            old_pool, args.nights // 2, seed=19, group_share=0.0, n=n, model=model
        )
        rows[(family, n)] = (r.confirmed, r.nights)
        out[f"aa_paired_{family}_n_{n}"] = {
            "psi": model.psi,
            "nights": r.nights,
            "false_regressed_rate": r.regressed / r.nights,
            "false_confirmation_rate": r.rate,
            "false_confirmation_upper_95": upper(r.confirmed, r.nights),
            "old_pooled_rule_false_confirmation_rate": was.rate,
        }
        print(
            f"A/A {model.name} at n = {n} (ψ {model.psi:.3f}): false REGRESSED "
            f"{r.regressed / r.nights:.3%}, false confirmation {r.rate:.2e} "
            f"(95 % upper {upper(r.confirmed, r.nights):.1e}; goal 1e-4: "
            f"{'met' if upper(r.confirmed, r.nights) <= 1e-4 else 'MISSED'}; pooled at α as "
            f"before: {was.rate:.2e})"
        )
    # The fleet: each series simulated at its own family, size and noise (above), summed over
    # the fleet's series (they are independent), not one series' rate times the fleet's size.
    rate = sum(rows[k][0] / rows[k][1] for k in FLEET)
    se = math.sqrt(sum(rows[k][0] / rows[k][1] ** 2 for k in FLEET))
    out["fleet_false_alerts_per_night"] = {
        "series": [f"{f} n={n}" for f, n in FLEET],
        "rate": rate,
        "standard_error": se,
    }
    print(
        f"a fleet of {len(FLEET)} series ({', '.join(f'{f} {n}' for f, n in FLEET)}): "
        f"{rate:.2e} ± {1.96 * se:.1e} false confirmed alerts per calendar night (goal 1e-3: "
        f"{'met' if rate + 1.96 * se <= 1e-3 else 'MISSED'})"
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
        wrong = round(e["wrong_first_bad_rate"] * args.histories)
        e["wrong_first_bad_upper_95"] = upper(wrong, args.histories)
        out[f"bisect_{label}"] = e
        print(
            f"bisect {label.replace('_', ' ')} over {args.histories} histories of 16 commits: "
            f"wrong first bad {e['wrong_first_bad_rate']:.2%} (95 % upper "
            f"{e['wrong_first_bad_upper_95']:.2%}; goal ≤ 2 %), no regression "
            f"{e['no_regression_rate']:.2%}, good called bad "
            f"{e['good_called_bad_per_step']:.2%}/step, bad called good "
            f"{e['bad_called_good_per_step']:.2%}/step, undecided steps "
            f"{e['undecided_steps']:g}, at most {e['most_steps']:g} steps; "
            f"{e['full_runs_mean']:.2f} full runs (p95 {e['full_runs_p95']:.2f}; "
            f"{e['full_runs_mean_fresh_selection']:.2f} choosing clips by fresh runs)"
        )
    for lift in (0.021, 0.06):  # the same steps on a model the bench was not built on
        label = f"held_out_plus_{lift * 100:g}_points"
        e = bisect_errors(HELD_OUT.tail + lift, args.histories, seed=13, model=HELD_OUT).as_dict()
        out[f"bisect_{label}"] = e
        print(
            f"bisect on the held-out model (ψ {HELD_OUT.psi:.3f}, tail {HELD_OUT.tail:.1%}), a "
            f"{lift * 100:g}-point step, {args.histories} histories: wrong first bad "
            f"{e['wrong_first_bad_rate']:.2%}, no regression {e['no_regression_rate']:.2%}, "
            f"good called bad {e['good_called_bad_per_step']:.2%}/step, bad called good "
            f"{e['bad_called_good_per_step']:.2%}/step, undecided steps "
            f"{e['undecided_steps']:g}; {e['full_runs_mean']:.2f} full runs"
        )
    broken = bisect_errors(0.9, args.histories // 3, seed=23).as_dict()
    out["bisect_90_percent_broken"] = broken
    print(
        f"bisect a server that breaks 90 % of clips ({args.histories // 3} histories): wrong "
        f"first bad {broken['wrong_first_bad_rate']:.2%}, no regression "
        f"{broken['no_regression_rate']:.2%}, {broken['full_runs_mean']:.2f} full runs "
        f"(p95 {broken['full_runs_p95']:.2f}); goal: bisected"
    )
    for guard in (True, False):
        e = bisect_errors(None, args.histories, seed=29, nightly_seeds=(0, 1), guard=guard)
        named = e.wrong_first_bad / e.histories
        out[f"bisect_none_nightly_seeds_s_s1_{'guarded' if guard else 'old_rule'}"] = {
            "histories": e.histories,
            "names_a_commit_rate": named,
            "names_a_commit_upper_95": upper(e.wrong_first_bad, e.histories),
        }
        print(
            f"bisect with no regression, nightly seeds [s, s+1], the check "
            f"{'told the seeds on record' if guard else 'not told (the old rule)'}: names a "
            f"commit {named:.2%} (95 % upper {upper(e.wrong_first_bad, e.histories):.2%}; "
            "goal: as with fresh seeds, about 2.5 %)"
        )
    out["alert_resolution"] = _resolution_figures(policy, args.series)
    e = bisect_errors(SEED_TTS.tail + 0.45, 10 * max(1, args.histories // 300), seed=47, n=40)
    named = e.histories - e.wrong_first_bad - e.no_regression
    out["bisect_40_items_plus_45_points"] = {**e.as_dict(), "named_culprit": named}
    print(
        f"bisect a 40-item suite's +45-point step ({e.histories} histories of 16 commits, "
        f"budget 4 raised from the MDE): culprit named {named} of {e.histories} (goal ≥ 9 of "
        f"10), {e.as_dict()['full_runs_mean']:.1f} full runs of 40 items (most {max(e.full_runs):.1f})"
    )
    mc_policy = policy.for_benchmark("daily_omni")
    for n in (300, 1197):
        r = range_misses(
            MULTIPLE_CHOICE.tail + 0.05, args.series, 37, mc_policy, n=n, model=MULTIPLE_CHOICE
        )
        out[f"auto_bisect_range_multiple_choice_{n}_5_point_drop"] = _range_figures(r)
        print(
            f"auto-bisect range after a 5-point drop at {n} questions ({r.opened} alerts): "
            f"holds the culprit {r.holds_rate:.1%} (goal ≥ 95 %), leaves it out "
            f"{r.excluded_rate:.1%}, no range {r.no_range / max(r.opened, 1):.1%}; "
            f"nights from last good to first bad: median {r.width(0.5)}, p90 {r.width(0.9)}"
        )
    for tail in (0.101, 0.14):
        d = detection_delays(tail, args.series, seed=41, policy=policy)
        median, p90 = d.quantile(0.5), d.quantile(0.9)
        label = f"8_to_{tail * 100:g}"
        out[f"detection_delay_{label}"] = {
            "series": len(d.delays),
            "median_nights": median,
            "p90_nights": p90,
            "by_night": {k: d.share_by(k) for k in (1, 2, 3, 4, 6, 10)},
        }
        met = median <= 2 and p90 <= 4
        bound = {k: pooled_power(tail, k, 1e-4, 20 * args.series, seed=43) for k in (2, 4)}
        out[f"detection_delay_{label}"]["one_pooled_test_at_1e-4_by_night"] = bound
        stable = {
            k: pooled_power(tail, k, 1e-4, 20 * args.series, seed=43, history=14) for k in (2, 4)
        }
        out[f"detection_delay_{label}"]["the_same_on_clips_stable_14_nights_by_night"] = stable
        print(
            f"detection delay after a persisting 8 → {tail:.1%} step ({len(d.delays)} series, "
            f"night 1 = the first bad night): median {median}, p90 {p90} nights (goal ≤ 2 and "
            f"≤ 4: {'met' if met else 'MISSED'}); opened by night "
            + ", ".join(f"{k}: {d.share_by(k):.0%}" for k in (1, 2, 3, 4, 6, 10))
            + f". The most any rule at 1e-4 can open (one pooled exact test, all of α spent on "
            f"it): by night 2 {bound[2]:.0%}, by night 4 {bound[4]:.0%}; the same test on the "
            f"clips the baseline never broke in 14 nights (a rule that reads clip history): "
            f"{stable[2]:.0%}, {stable[4]:.0%}"
        )
    r = range_misses(0.101, args.series, seed=17, policy=policy)
    out["auto_bisect_range_8_to_10.1"] = _range_figures(r)
    print(
        f"auto-bisect range after 8 → 10.1 % ({r.opened} alerts): holds the culprit "
        f"{r.holds_rate:.1%}, leaves it out {r.excluded_rate:.2%}, no range "
        f"{r.no_range / max(r.opened, 1):.2%}; nights from last good to first bad: median "
        f"{r.width(0.5)}, p90 {r.width(0.9)}"
    )
    out["seconds"] = round(time.perf_counter() - t0, 1)
    args.results.parent.mkdir(exist_ok=True)
    args.results.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.results} ({out['seconds']} s)")


def _settings(args: argparse.Namespace) -> dict[str, float]:
    settings = {} if args.n is None else {"N": float(args.n)}
    for item in args.set:
        name, sep, value = item.partition("=")
        try:
            settings[name] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise SystemExit(f"--set {item!r}: NAME=NUMBER, e.g. RUN_SD=0.015")
    return settings


def _clip_model(args: argparse.Namespace, policy: GatePolicy) -> None:
    t0 = time.perf_counter()
    figures = clip_model_sim.run(
        clip_model_sim.load(args.clip_model, _settings(args)),
        policy,
        args.quick,
        workers=args.workers,
        scale=args.scale,
        resolution_series=args.resolution_series,
    )
    figures["seconds"] = round(time.perf_counter() - t0, 1)
    text = json.dumps(figures, indent=2) + "\n"
    if args.json is not None:
        args.json.write_text(text)
    print(text + f"wrote {args.json or 'stdout'} ({figures['seconds']} s)")


if __name__ == "__main__":
    main()

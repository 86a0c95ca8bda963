"""Calibration of the gate advisor (`omni-tasks gates advise`) on simulated A/A histories.

For each clip-level model (a stochastic hard set and heavy-tailed runaways, `ClipModel`, and
an independent lognormal mixture written here, issue 45's audit model as read here, and the
same mixture fitted to the audit's stated truth at its 0.35 gate: none is the advisor's own
per-item resampling) the truth is
simulated directly (200,000 nights):
the gate's false-fail chance at its threshold and the threshold that fails 2 % of nights.
Then `--histories` histories of `--nights` nights each are drawn and advised on, and this
prints how often the advised 95 % intervals hold the truth (coverage), the suggested
threshold's error, and the false-fail rate that threshold really has (goal: near 2 %). The
baseline, run on the same histories, is the nightly-figures-only model (what a summary-only
series gets): its figures and time are printed beside, time as a ratio.

    .venv/bin/python bench/bench_gate_advice.py [--histories 40] [--nights 20] [--clips 1088]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from artifacts import ClipModel

from omni_tasks.gates.advice import Night, advise
from omni_tasks.gates.table import Threshold, UpstreamGate

TARGET = 0.02
RESULTS = Path(__file__).parent / "results" / "gate_advice.json"


@dataclass(frozen=True)
class LognormalMixture:
    """Issue 45's independent audit model, WER per clip (not words): 12 % hard clips that
    break half the time, 3 % that nearly always break, rare breaks elsewhere; a broken clip's
    WER is lognormal (median 1, σ 1.5: heavy-tailed) half the time, else 0.5-1."""

    n: int = 1088
    hard: int = 131  # 12 %
    always: int = 33  # 3 %
    seed: int = 24
    mu: float = 0.0  # the lognormal's log-median
    sigma: float = 1.5

    def layout(self) -> tuple[np.ndarray, np.ndarray]:
        rates = np.full(self.n, 0.005)
        rates[: self.hard] = 0.5
        rates[self.hard : self.hard + self.always] = 0.97
        return np.ones(self.n), rates

    def errors(self, rng: np.random.Generator, nights: int = 1) -> np.ndarray:
        _, rates = self.layout()
        shape = (nights, self.n)
        broken = rng.random(shape) < rates
        heavy = rng.random(shape) < 0.5
        value = np.where(
            heavy, rng.lognormal(self.mu, self.sigma, shape), rng.uniform(0.5, 1.0, shape)
        )
        return np.where(broken, value, rng.exponential(0.02, shape))


# name -> model; the threshold is set where the truth's false-fail is 5 %, unless AT names it
MODELS: dict[str, ClipModel | LognormalMixture] = {
    "light tail (Pareto 3)": ClipModel(
        hard=90, runaway_alpha=3.0, runaway_share=0.2, runaway_scale=10, seed=21
    ),
    "heavy tail (Pareto 1.5)": ClipModel(
        hard=60, runaway_alpha=1.5, runaway_share=0.2, runaway_scale=4, seed=22
    ),
    "large hard set, rare runaways": ClipModel(
        hard=200, hard_rate=(0.1, 0.5), runaway_share=0.05, runaway_scale=8, seed=23
    ),
    "lognormal mixture (issue 45, independent)": LognormalMixture(),
    # The audit's unstated lognormal, fitted to its stated truth: at the 0.35 gate a false-fail
    # of 8.2 % and a 98th percentile of 0.400 (this fit: about 8 % and 0.40, printed below).
    "issue 45's audit at the 0.35 gate": LognormalMixture(mu=1.015, sigma=1.05),
}
AT = {"issue 45's audit at the 0.35 gate": 0.35}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--histories", type=int, default=40)
    ap.add_argument("--nights", type=int, default=20)
    ap.add_argument("--clips", type=int, default=1088)
    ap.add_argument("--results", type=Path, default=RESULTS, help="where the figures go")
    args = ap.parse_args()
    rows = {}
    for name, base in MODELS.items():
        model = replace(base, n=args.clips, hard=min(base.hard, args.clips // 4))  # type: ignore[type-var]
        words, _ = model.layout()
        sim = np.random.default_rng(7)  # in chunks: 200,000 nights × 1088 clips is 1.7 GB
        truth = np.concatenate(
            [(model.errors(sim, 10_000) / words).mean(axis=1) for _ in range(20)]
        )
        threshold = AT.get(name, float(np.quantile(truth, 0.95)))
        true_q = float(np.quantile(truth, 1 - TARGET))
        true_p = float((truth > threshold).mean())
        gate = UpstreamGate("seed_tts_en", "m", "mean_wer", "<=", (Threshold(threshold),))
        rng = np.random.default_rng(1)
        found: dict[str, dict[str, list[float]]] = {
            m: {"p": [], "q": [], "err": [], "real": [], "s": []} for m in ("items", "figures")
        }
        for h in range(args.histories):
            errs = model.errors(rng, args.nights) / words
            days = [dt.date(2026, 1, 1) + dt.timedelta(i) for i in range(args.nights)]
            by_items = [
                Night(d, "c", float(e.mean()), {str(k): float(v) for k, v in enumerate(e)})
                for d, e in zip(days, errs, strict=True)
            ]
            by_figures = [replace(n, values=None) for n in by_items]
            for method, nights in (("items", by_items), ("figures", by_figures)):
                t0 = time.perf_counter()
                a = advise(nights, gate, target=TARGET, broken=lambda v: v > 0.5, seed=h)
                f = found[method]
                f["s"].append(time.perf_counter() - t0)
                f["p"].append(a.p_fail_interval[0] <= true_p <= a.p_fail_interval[1])
                f["q"].append(a.suggested_interval[0] <= true_q <= a.suggested_interval[1])
                f["err"].append(a.suggested_threshold - true_q)
                f["real"].append(float((truth > a.suggested_threshold).mean()))
        rows[name] = {
            "threshold": threshold,
            "true_false_fail_at_threshold": true_p,
            "true_threshold": true_q,
        }
        for method, f in found.items():
            rows[name][method] = {
                "coverage_p_fail_95": float(np.mean(f["p"])),
                "coverage_threshold_95": float(np.mean(f["q"])),
                "threshold_error_mean": float(np.mean(f["err"])),
                "threshold_error_rmse": float(np.sqrt(np.mean(np.square(f["err"])))),
                "realized_false_fail_mean": float(np.mean(f["real"])),
                "realized_false_fail_p90": float(np.quantile(f["real"], 0.9)),
                "seconds_per_advice": float(np.mean(f["s"])),
            }
        rows[name]["time_ratio_items_over_figures"] = (
            rows[name]["items"]["seconds_per_advice"] / rows[name]["figures"]["seconds_per_advice"]
        )
    out = {
        "nights": args.nights,
        "clips": args.clips,
        "histories": args.histories,
        "target": TARGET,
        "models": rows,
    }
    args.results.parent.mkdir(exist_ok=True)
    args.results.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {args.results}")
    for name, r in rows.items():
        for method in ("items", "figures"):
            m = r[method]
            print(
                f"{name} [{'per-item' if method == 'items' else 'nightly figures'}]: coverage "
                f"P(fail) {m['coverage_p_fail_95']:.0%}, threshold {m['coverage_threshold_95']:.0%};"
                f" threshold error {m['threshold_error_mean']:+.4f} (rmse "
                f"{m['threshold_error_rmse']:.4f} on {r['true_threshold']:.4f}); the suggested "
                f"threshold's real false-fail {m['realized_false_fail_mean']:.2%} (target 2 %)"
            )
        print(
            f"{name}: at the {r['threshold']:.3f} gate the true false-fail is "
            f"{r['true_false_fail_at_threshold']:.1%} and the true {1 - TARGET:.0%} threshold "
            f"{r['true_threshold']:.3f}; time ratio per-item / nightly figures "
            f"{r['time_ratio_items_over_figures']:.1f}"
        )


if __name__ == "__main__":
    main()

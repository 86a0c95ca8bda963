"""Calibrate the history path's thresholds (policy cusum_k, cusum_h, history_p) on simulated
A/A nights at every size the fleet runs, and see what each choice costs in detection delay.

    .venv/bin/python bench/calibrate_history.py [--series 20000] [--nights 200] --json OUT

A million series-nights per size are too many to draw item by item on a shared machine, so
this script draws the shipped clip models (bench/clip_models/) by class: items of one class
break with one probability, so a night is a few binomials per class (run-level noise moves a
class's probability per run). The window's V = Σ r(1 − r) is taken in expectation given each
class's window total (the hypergeometric spread of its items' counts). Today's pooled rule is
mirrored on the counts. The figures the policy quotes come from the item-level harness on
the product's code (bench_statistics_sim.py --clip-model), which checks this one.
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import binom, norm

from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.gates.policy import load_policy

KS = (0.5, 1.0, 1.5, 2.0)
HS = tuple(float(h) for h in np.round(np.arange(1.0, 10.01, 0.5), 2))
PS = (1e-4, 3e-5, 1e-5, 3e-6, 1e-6, 3e-7, 1e-7)
BURN = 8

# (share, p before, p of the candidate after the step); the class run-level noise moves
SEED_TTS = ((0.075, 0.8, 0.8), (0.042, 0.0216, 0.5216), (0.883, 0.0216, 0.0216))
MULTIPLE_CHOICE = ((0.15, 0.97, 0.97), (0.30, 0.5, 0.5), (0.05, 0.01, 0.51), (0.50, 0.01, 0.01))
GREEDY = (
    (0.06, 0.3, 0.3),
    (0.062, 0.9953, 0.9953),
    (0.021, 0.00033, 1.0),
    (0.857, 0.00033, 0.00033),
)
CASES = [
    *((f"seed_tts_{n}", SEED_TTS, n, 0.0) for n in (200, 544, 1088, 2020)),
    *((f"seed_tts_{n}_run_sd_3", SEED_TTS, n, 0.03) for n in (200, 544, 1088, 2020)),
    *((f"multiple_choice_{n}", MULTIPLE_CHOICE, n, 0.0) for n in (300, 1197, 2700)),
    *((f"multiple_choice_{n}_run_sd_3", MULTIPLE_CHOICE, n, 0.03) for n in (300, 1197, 2700)),
    ("greedy_1088", GREEDY, 1088, 0.0),
]


def nights(
    classes: tuple[tuple[float, float, float], ...],
    n: int,
    run_sd: float,
    series: int,
    count: int,
    step: int | None,
    policy: GatePolicy,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """(series, count) arrays: z, Δ̂, refused, REGRESSED, confirmed by the pooled rule."""
    m = np.array([int(c[0] * n) for c in classes])
    m[-1] = n - m[:-1].sum()
    before = max(policy.history_nights, policy.phi_nights - 1)
    total = before + count
    pb = np.array([c[1] for c in classes])
    pc = np.array([c[2] for c in classes])

    def probs(base: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        p = np.broadcast_to(base, (*shape, len(classes))).copy()
        if run_sd:  # the first class is the one run-level noise moves (seed-TTS' hard set)
            p[..., 0] = np.clip(p[..., 0] + rng.normal(0, run_sd, shape), 0, 1)
        return p

    b = rng.binomial(m, probs(pb, (series, total)))  # baseline broken per class
    stepped = np.zeros(count, bool) if step is None else np.arange(count) >= step
    cp = np.broadcast_to(np.where(stepped[:, None], pc, pb), (series, count, len(m))).copy()
    if run_sd:  # the candidate's own runs, each with its own shift
        cp[..., 0] += rng.normal(0, run_sd, (series, count))
    cp = np.clip(cp, 0, 1)
    tonight = b[:, before:]
    both = rng.binomial(tonight, cp)
    cand_only = rng.binomial(m - tonight, cp)
    k = policy.history_nights + 1
    cs = np.concatenate([np.zeros((series, 1, len(m)), int), np.cumsum(b, 1)], 1)
    rows = np.arange(before, total)
    x = cs[:, rows + 1] - cs[:, rows + 1 - k]  # (series, count, classes) window totals
    var_x = k * (x / (m * k)) * (1 - x / (m * k)) * (m * k - k) / (m * k - 1)
    sum_sq = m * var_x + x**2 / m  # E[Σ x_i² | X]
    v = ((x / k - sum_sq / k**2).sum(-1)) * k / (k - 1)
    totals = b.sum(-1).astype(float)
    spread = np.lib.stride_tricks.sliding_window_view(totals, policy.phi_nights, 1)
    spread = spread[:, rows - policy.phi_nights + 1].var(-1, ddof=1)
    phi = np.maximum(spread / v, 1.0)
    win = np.lib.stride_tricks.sliding_window_view(totals, k, 1)[:, rows - k + 1]
    half = k // 2
    diff = win[..., half:].mean(-1) - win[..., :half].mean(-1)
    p_drift = 2 * norm.sf(np.abs(diff) / np.sqrt(phi * v * (1 / half + 1 / (k - half))))
    cand = (both + cand_only).sum(-1)
    delta = (cand - x.sum(-1) / k) / n
    z = delta / (np.sqrt(phi * v * (1 + 1 / k)) / n)
    reg_b, reg_c = cand_only.sum(-1), (tonight - both).sum(-1)
    reg = (binom.sf(reg_b - 1, reg_b + reg_c, 0.5) < policy.alpha) & (
        reg_b - reg_c >= policy.min_effect * n
    )
    return {
        "z": z,
        "d": delta,
        "ref": p_drift < policy.drift_p,
        "reg": reg,
        "pool": reg & pooled(reg_b, reg_c, n, policy),
    }


def pooled(b: np.ndarray, c: np.ndarray, n: int, policy: GatePolicy) -> np.ndarray:
    """analysis/gate.py's rule on the counts: tonight alone at confirm_p, or the last 2 .. 3
    nights pooled at confirm_pool_p / 2 each with Δ ≥ min_effect."""
    out = binom.sf(b - 1, b + c, 0.5) < policy.confirm_p
    pools = policy.confirm_pool_nights - 1
    for j in range(2, policy.confirm_pool_nights + 1):
        sb = sum(np.roll(b, i, 1) for i in range(j))
        sc = sum(np.roll(c, i, 1) for i in range(j))
        ok = (binom.sf(sb - 1, sb + sc, 0.5) < policy.confirm_pool_p / pools) & (
            sb - sc >= policy.min_effect * n * j
        )
        ok[:, : j - 1] = False
        out |= ok
    return out


def history_path(data: dict[str, np.ndarray], k: float) -> tuple[np.ndarray, np.ndarray]:
    """(CUSUM, best Δ̂ pooled over the excursion's suffixes) per (series, night), the chain
    restarting after a refused window (as night/history.py's does)."""
    z, d, ref, reg = data["z"], data["d"], data["ref"], data["reg"]
    s = np.zeros(z.shape[0])
    run = np.zeros(z.shape[0], int)
    cus, best = np.zeros_like(z), np.full_like(z, -np.inf)
    for t in range(z.shape[1]):
        s = np.where(ref[:, t], 0.0, np.maximum(0.0, s + z[:, t] - k))
        run = np.where(s > 0, run + 1, 0)
        cus[:, t] = s
        for i in np.flatnonzero(reg[:, t] & (s > 0)):
            r = int(run[i])
            best[i, t] = (np.cumsum(d[i, t - r + 1 : t + 1][::-1]) / np.arange(1, r + 1)).max()
    return cus, best


def score(
    aa: dict[str, np.ndarray], st: dict[str, np.ndarray] | None, floor: float
) -> list[dict[str, Any]]:
    rows = []
    for k in KS:
        paths = [(data, *history_path(data, k)) for data in (aa, st) if data is not None]
        for h, p in itertools.product(HS, PS):
            zp = norm.isf(p)
            hits = [
                (
                    data["reg"]
                    & ~data["ref"]
                    & (
                        data["pool"]
                        | ((data["z"] >= zp) & (data["d"] >= floor))
                        | ((cus >= h) & (best >= floor))
                    )
                )[:, BURN:]
                for data, cus, best in paths
            ]
            row: dict[str, Any] = {
                "k": k,
                "h": h,
                "p": p,
                "aa_rate": float(hits[0].mean()),
                "aa_events": int(hits[0].sum()),
            }
            if len(hits) > 1:
                first = np.where(hits[1].any(1), hits[1].argmax(1) + 1, 99)
                row["by_night"] = {str(j): float((first <= j).mean()) for j in (1, 2, 4)}
            rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=20000)
    ap.add_argument("--nights", type=int, default=200)
    ap.add_argument("--step-series", type=int, default=20000)
    ap.add_argument("--cases", default="", help="comma-separated names (default: all)")
    ap.add_argument("--json", type=Path, required=True)
    args = ap.parse_args()
    policy = load_policy()
    out: dict[str, dict[str, Any]] = {}
    for name, classes, n, run_sd in CASES:
        if args.cases and name not in args.cases.split(","):
            continue
        pol = policy.for_benchmark("daily_omni") if classes is MULTIPLE_CHOICE else policy
        rng = np.random.default_rng(len(out) + 1)
        aa = [
            nights(classes, n, run_sd, 1000, args.nights + BURN, None, pol, rng)
            for _ in range(args.series // 1000)
        ]
        aa_all = {key: np.concatenate([a[key] for a in aa]) for key in aa[0]}
        st = None
        if n in (1088,) and classes is not MULTIPLE_CHOICE:
            st = nights(classes, n, run_sd, args.step_series, BURN + 12, BURN, pol, rng)
        out[name] = {
            "aa_nights": int(aa_all["z"][:, BURN:].size),
            "pooled_only": float(aa_all["pool"][:, BURN:].mean()),
            "regressed": float(aa_all["reg"][:, BURN:].mean()),
            "z_sd": float(aa_all["z"].std()),
            "rows": score(aa_all, st, pol.min_effect),
        }
        print(name, {k: v for k, v in out[name].items() if k != "rows"}, flush=True)
    args.json.write_text(json.dumps(out))


if __name__ == "__main__":
    main()

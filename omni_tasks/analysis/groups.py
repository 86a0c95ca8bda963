"""Run groups: several seeds of one branch x nightly x variant, compared clip by clip on the
broken rate with an exact permutation test that shuffles run labels within each clip."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.stats import chi2, hypergeom, norm

from omni_tasks.analysis.accounting import count_of, is_broken
from omni_tasks.analysis.intervals import mcnemar_exact
from omni_tasks.records import ClipRecord


@dataclass(frozen=True)
class GroupTest:
    n_clips: int
    size_baseline: int
    size_candidate: int
    delta_broken_rate: float  # candidate minus baseline, mean over clips
    delta_ci: tuple[float, float]
    delta_exact: Fraction
    p_regress: float
    p_improve: float
    method: str
    # Var of each side's runs' broken counts over what independent clips give, when the runs
    # of a side vary more than that (χ² p < .05): the p-values and the interval are widened.
    dispersion: float | None = None


def outcome_fingerprint(clips: Sequence[ClipRecord], tau: float) -> str:
    """What the group test counts of a run, item by item: which items it counts and which of
    them are broken at `tau`. Equal for two copies of one run (an artifact imported twice, a
    seed that never reached a greedy model) and for two runs whose texts differ but whose
    broken items are the same (batch-dependent numerics on a server that ignores the seed):
    either way one outcome, not two independent seeds."""
    rows = sorted((c.utt_id, count_of(c), is_broken(c, tau)) for c in clips)
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def distinct_runs(fingerprints: Sequence[str]) -> tuple[list[int], dict[int, int]]:
    """(indices kept, {copy: the earlier run it repeats}) for one side's runs. The group test
    takes its seeds as independent; a copy would count one outcome twice (two imports of one
    artifact per side turn a paired p of .0067 into 6e-6), so it is counted once."""
    first: dict[str, int] = {}
    for i, f in enumerate(fingerprints):
        first.setdefault(f, i)
    copies = {i: first[f] for i, f in enumerate(fingerprints) if first[f] != i}
    return sorted(first.values()), copies


def broken_matrix(runs: Sequence[Sequence[ClipRecord]], tau: float) -> tuple[list[str], np.ndarray]:
    """Clips counted in every run, as a (clips x runs) 0/1 matrix."""
    maps = [{c.utt_id: c for c in run if count_of(c) != "infra"} for run in runs]
    ids = [u for u in maps[0] if all(u in m for m in maps[1:])]
    mat = np.array([[is_broken(m[u], tau) for m in maps] for u in ids], dtype=np.int64)
    return ids, mat.reshape(len(ids), len(runs))


def compare_groups(baseline: np.ndarray, candidate: np.ndarray) -> GroupTest:
    """baseline: (clips x k_a), candidate: (clips x k_b) broken indicators on the same clips.

    Under the null the k_a + k_b runs of a clip are exchangeable, so the candidate's broken
    count per clip is hypergeometric given the clip's total: the within-clip label
    permutation with each group's size kept. The statistic (the candidate's broken count over
    all clips) is a sum of independent hypergeometrics, whose exact distribution is their
    convolution, so the p-value is exact: no Monte Carlo floor, and a group night can go below
    the one-night confirmation threshold.
    """
    n, ka = baseline.shape
    kb = candidate.shape[1]
    per_clip = candidate.mean(axis=1) - baseline.mean(axis=1)
    delta = float(per_clip.mean()) if n else 0.0
    sd = float(per_clip.std(ddof=1)) if n > 1 else 0.0
    half = 1.959963984540054 * sd / math.sqrt(n) if n else 1.0
    ci = (delta - half, delta + half)
    # Δ as an exact ratio: Σ (ka·cand_i − kb·base_i) / (n·ka·kb).
    exact = (
        Fraction(int(ka * candidate.sum() - kb * baseline.sum()), n * ka * kb) if n else Fraction(0)
    )
    if ka == 1 and kb == 1:
        b = int(((candidate[:, 0] == 1) & (baseline[:, 0] == 0)).sum())
        c = int(((candidate[:, 0] == 0) & (baseline[:, 0] == 1)).sum())
        p_reg, p_imp = mcnemar_exact(b, c)
        return GroupTest(n, 1, 1, delta, ci, exact, p_reg, p_imp, "exact McNemar")
    total = baseline.sum(axis=1) + candidate.sum(axis=1)
    informative = (total > 0) & (total < ka + kb)
    t_obs = int(candidate.sum(axis=1)[informative].sum())
    pmf, offset = null_distribution(total[informative], ka, kb)
    # Tail sums of non-negative terms: no cancellation, so tiny p-values stay accurate.
    p_reg = float(min(1.0, pmf[t_obs - offset :].sum()))
    p_imp = float(min(1.0, pmf[: t_obs - offset + 1].sum()))
    method = "exact within-clip permutation"
    phi, phi_p = run_dispersion([baseline, candidate], min_df=1)
    if phi is None or phi_p is None or phi <= 1 or phi_p >= DISPERSION_P:
        return GroupTest(n, ka, kb, delta, ci, exact, p_reg, p_imp, method)
    # Seeds that share a run-level effect are fewer independent draws than they look: the
    # permutation's z is shrunk by √φ (quasi-binomial), and the interval widened alike.
    root = math.sqrt(phi)
    p_reg, p_imp = (float(norm.sf(norm.isf(p) / root)) for p in (p_reg, p_imp))
    ci = (delta - half * root, delta + half * root)
    method += f", widened by run over-dispersion φ {phi:.2f}"
    return GroupTest(n, ka, kb, delta, ci, exact, p_reg, p_imp, method, phi)


DISPERSION_P = 0.05


def run_dispersion(sides: Sequence[np.ndarray], min_df: int) -> tuple[float | None, float | None]:
    """(φ, p) for clips × runs broken matrices of one commit each (a side of a group night, or
    A/A runs): the runs' broken counts' variance within each matrix over Σ p̂(1 − p̂)·k/(k − 1),
    what clips breaking independently (each at its own rate) give, pooled over the matrices;
    and the upper χ² tail of df·φ. None below `min_df` degrees of freedom or without
    variation."""
    df = sum(m.shape[1] - 1 for m in sides if m.shape[1] > 1)
    if df < min_df:
        return None, None
    observed = expected = 0.0
    for m in sides:
        k = m.shape[1]
        if k < 2:
            continue
        p_hat = m.mean(axis=1)
        expected += float((p_hat * (1 - p_hat)).sum()) * k
        observed += float(m.sum(axis=0).var(ddof=1)) * (k - 1)
    if expected <= 0:
        return None, None
    phi = observed / expected
    return phi, float(chi2.sf(df * phi, df))


def null_distribution(totals: np.ndarray, ka: int, kb: int) -> tuple[np.ndarray, int]:
    """Exact null pmf of Σ_i X_i with X_i ~ Hypergeometric(population ka + kb, totals_i broken,
    kb drawn), as (pmf, value of pmf[0]). Clips with equal totals are convolved by repeated
    squaring, so 1088 clips cost a few dozen convolutions."""
    pmf, offset = np.ones(1), 0
    for t, count in zip(*np.unique(totals, return_counts=True), strict=True):
        lo = max(0, int(t) - ka)
        support = np.arange(lo, min(int(t), kb) + 1)
        one = hypergeom.pmf(support, ka + kb, int(t), kb)
        pmf = np.convolve(pmf, _power(one / one.sum(), int(count)))
        offset += lo * int(count)
    return pmf, offset


def _power(pmf: np.ndarray, k: int) -> np.ndarray:
    out, base = np.ones(1), pmf
    while k:
        if k & 1:
            out = np.convolve(out, base)
        k >>= 1
        if k:
            base = np.convolve(base, base)
    return out

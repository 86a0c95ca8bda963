"""Run groups: several seeds of one branch x nightly x variant, compared clip by clip on the
broken rate with a permutation test that shuffles run labels within each clip."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

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
    p_regress: float
    p_improve: float
    method: str


def seed_from_keys(*keys: str) -> int:
    """A Monte Carlo seed derived from the run keys, so reruns give the same p-value."""
    return int.from_bytes(hashlib.sha256("|".join(sorted(keys)).encode()).digest()[:8], "big")


def broken_matrix(runs: Sequence[Sequence[ClipRecord]], tau: float) -> tuple[list[str], np.ndarray]:
    """Clips counted in every run, as a (clips x runs) 0/1 matrix."""
    maps = [{c.utt_id: c for c in run if count_of(c) != "infra"} for run in runs]
    ids = [u for u in maps[0] if all(u in m for m in maps[1:])]
    mat = np.array([[is_broken(m[u], tau) for m in maps] for u in ids], dtype=np.int64)
    return ids, mat.reshape(len(ids), len(runs))


def compare_groups(
    baseline: np.ndarray, candidate: np.ndarray, *, seed: int, resamples: int = 9999
) -> GroupTest:
    """baseline: (clips x k_a), candidate: (clips x k_b) broken indicators on the same clips.

    Under the null the k_a + k_b runs of a clip are exchangeable, so the candidate's broken
    count per clip is hypergeometric given the clip's total: sampling that is exactly the
    within-clip label permutation, with each group's size kept.
    """
    n, ka = baseline.shape
    kb = candidate.shape[1]
    per_clip = candidate.mean(axis=1) - baseline.mean(axis=1)
    delta = float(per_clip.mean()) if n else 0.0
    sd = float(per_clip.std(ddof=1)) if n > 1 else 0.0
    half = 1.959963984540054 * sd / math.sqrt(n) if n else 1.0
    ci = (delta - half, delta + half)
    if ka == 1 and kb == 1:
        b = int(((candidate[:, 0] == 1) & (baseline[:, 0] == 0)).sum())
        c = int(((candidate[:, 0] == 0) & (baseline[:, 0] == 1)).sum())
        p_reg, p_imp = mcnemar_exact(b, c)
        return GroupTest(n, 1, 1, delta, ci, p_reg, p_imp, "exact McNemar")
    total = baseline.sum(axis=1) + candidate.sum(axis=1)
    informative = (total > 0) & (total < ka + kb)
    t_obs = candidate.sum(axis=1)[informative].sum()
    tot = total[informative]
    rng = np.random.default_rng(seed)
    draws = np.zeros(resamples, dtype=np.int64)
    # Chunked to bound memory on 1088 clips x 9999 resamples.
    for start in range(0, resamples, 1000):
        size = min(1000, resamples - start)
        sample = rng.hypergeometric(tot, ka + kb - tot, kb, size=(size, tot.size))
        draws[start : start + size] = sample.sum(axis=1)
    p_reg = (1 + int((draws >= t_obs).sum())) / (resamples + 1)
    p_imp = (1 + int((draws <= t_obs).sum())) / (resamples + 1)
    return GroupTest(
        n, ka, kb, delta, ci, p_reg, p_imp, f"within-clip permutation ({resamples} resamples)"
    )

"""Noise calibration from A/A runs (one commit, different seeds) at a tail threshold: the
discordant rate ψ, the MDE, and with three runs or more whether the runs vary more than their
clips explain (over-dispersion: a run-level effect, e.g. batch-dependent numerics, which a
run-group test that takes seeds as independent does not see)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import norm

from omni_tasks.analysis.groups import broken_matrix, run_dispersion
from omni_tasks.records import ClipRecord


@dataclass(frozen=True)
class NoiseCalibration:
    tau: float
    n_runs: int
    n_clips: int
    psi: float  # share of clips whose broken flag differs between two runs of one commit
    mde: float  # detectable Δ tail at 80 % power
    # Var of the runs' broken counts over what independent clips give (1: none); ≥ 3 runs.
    dispersion: float | None = None
    dispersion_p: float | None = None  # χ² test that the runs vary no more than that

    @property
    def overdispersed(self) -> bool:
        return self.dispersion_p is not None and self.dispersion_p < 0.05


def mde(psi: float, n: int, alpha: float, m: int = 1, power: float = 0.8) -> float:
    """MDE = (z(1 − α/m) + z(power)) · √(ψ/n), one-sided, for m comparisons a night."""
    if n <= 0:
        return 1.0
    return float((norm.ppf(1 - alpha / m) + norm.ppf(power)) * math.sqrt(psi / n))


def calibrate(
    runs: Sequence[Sequence[ClipRecord]], tau: float, alpha: float, m: int = 1
) -> NoiseCalibration:
    if len(runs) < 2:
        raise ValueError("noise calibration needs at least two runs of one commit")
    _, mat = broken_matrix(runs, tau)
    n = mat.shape[0]
    rates = [
        float((mat[:, i] != mat[:, j]).mean()) if n else 0.0
        for i, j in itertools.combinations(range(mat.shape[1]), 2)
    ]
    psi = sum(rates) / len(rates)
    phi, p = run_dispersion([mat], min_df=2)
    return NoiseCalibration(tau, len(runs), n, psi, mde(psi, n, alpha, m), phi, p)

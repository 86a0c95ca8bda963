"""Where a single step entered a series of nightly paired tables: the likelihood-ratio
confidence set of its change point (Hinkley 1970), the auto-bisect range's nights.

Each night's Δ tail, (candidate only − baseline only) / n, is read as normal with its paired
variance. A step at night τ fits one mean before τ and another from τ on; the log-likelihood
of every τ is compared with the best one's, and every τ within `THRESHOLD` (twice the
difference) is a night the step could have entered on. The range runs from the night before
the earliest of them to the latest.

The earlier rule asked the last good night to *rule out* the regression (its Δ bound below
what one night can flag). At 300 questions that floor (≈ 6 points) is above a real 5-point
step, so a few bad nights pooled could clear it, and 8 % of ranges left the culprit out or had
none. The change point instead compares where the series moved, so a step below one night's
threshold still stands out against the nights before it.

The level before the step is fitted, not assumed zero: two branches that differ by a constant
that never alerted still place the step where the series moved. At least one night is before
the step: the oldest night fitted can be the range's start, and when the step came before it
the bisection's endpoint check finds no regression between the endpoints and names no commit
(analysis/bisect.py). Asking instead whether every night could be after the step left three
quiet 300-question nights and a REGRESSED one (issue 45's reproduction) without a range.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Table = Sequence[int]  # (both broken, candidate only, baseline only, neither)

# 2·Δlog-likelihood. A lower one narrows the range and leaves the culprit out more often; at 8
# bench_statistics_sim's ranges hold it after 99.1 % of 5-point drops at 300 questions (median
# 5 nights wide) and 99.5 % of seed-TTS's 8 → 10.1 % steps (3 nights).
THRESHOLD = 8.0


@dataclass(frozen=True)
class StepNights:
    """Indices (oldest first) of the nights the step could have entered on."""

    earliest: int  # at least 1: some night is before the step
    latest: int


def _night(table: Table) -> tuple[float, float]:
    """Δ tail and its weight (1 / variance); a night without a discordant pair counts as one."""
    n12, n21 = int(table[1]), int(table[2])
    n = sum(int(x) for x in table)
    delta = (n12 - n21) / n
    var = ((n12 + n21) / n - delta * delta) / n
    return delta, 1 / max(var, 1 / (n * n))


def _misfit(points: Sequence[tuple[float, float]]) -> float:
    """Weighted squared deviations from the segment's own fitted mean (−2·log-likelihood)."""
    total = sum(w for _, w in points)
    if not total:
        return 0.0
    mean = sum(d * w for d, w in points) / total
    return sum(w * (d - mean) ** 2 for d, w in points)


def step_nights(tables: Sequence[Table], threshold: float = THRESHOLD) -> StepNights:
    """The change point's confidence set over `tables` (oldest first, at least two): every τ
    (the step's first night, 1 ≤ τ < len) whose fit is within `threshold` of the best."""
    if len(tables) < 2:
        raise ValueError("a change point needs a night before it and one after")
    points = [_night(t) for t in tables]
    misfit = {tau: _misfit(points[:tau]) + _misfit(points[tau:]) for tau in range(1, len(points))}
    least = min(misfit.values())
    plausible = [tau for tau, m in misfit.items() if m - least <= threshold]
    return StepNights(min(plausible), max(plausible))

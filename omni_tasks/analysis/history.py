"""History-aware evidence (pure): tonight's candidate against the baseline's per-item history
instead of tonight's one baseline draw, the over-dispersion φ of run-level noise, and a
restart-free CUSUM of the nightly z.

Tonight's baseline is one noisy draw of a branch that runs every night. Against the mean of
its last K nights the null variance of Δ̂ falls from 2V to about V(1/c + 1/K) (V = Σ p(1 − p),
c candidate nights), so one night with history is worth about two nights of McNemar.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scipy.stats import norm

from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.contracts.night import ItemHistory


@dataclass(frozen=True)
class BaselineWindow:
    """The baseline nights the history rests on (oldest first, tonight's included), each
    item's broken share over them, each night's broken total, and why the window was refused
    (None: it is used)."""

    nights: tuple[dt.date, ...]
    rates: dict[str, float]
    totals: tuple[int, ...]
    refused: str | None = None

    @property
    def variance(self) -> float:
        """V = Σ p(1 − p) over the items: one night's null variance of the broken count."""
        return _unbiased(sum(p * (1 - p) for p in self.rates.values()), len(self.totals))


def _unbiased(v: float, k: int) -> float:
    """Σ r(1 − r) over rates r of k nights estimates Σ p(1 − p) low by the factor (k − 1)/k:
    an item broken on none of 15 nights still breaks sometimes (72 % of seed-TTS' easy items
    at p .0216)."""
    return v * k / (k - 1) if k > 1 else v


def baseline_window(
    items: ItemHistory, tonight: Mapping[str, bool], *, drift_p: float, phi: float = 1.0
) -> BaselineWindow:
    """The baseline's window (the nights `items` holds) with tonight's draw added, over the
    items tonight has. Refused when the two halves' broken totals differ by more than run-level
    noise explains (two-sided p < drift_p, the variance widened by φ): the baseline moved
    inside the window, so its mean is not tonight's baseline."""
    broken = dict.fromkeys(tonight, 0)
    totals = []
    for _, night in items.broken:
        hits = [u for u in night if u in broken]
        for u in hits:
            broken[u] += 1
        totals.append(len(hits))
    totals.append(sum(tonight.values()))
    rates = {u: (b + tonight[u]) / (items.observed.get(u, 0) + 1) for u, b in broken.items()}
    window = BaselineWindow(tuple(d for d, _ in items.broken), rates, tuple(totals))
    return BaselineWindow(window.nights, rates, window.totals, _drift(window, phi, drift_p))


def _drift(window: BaselineWindow, phi: float, drift_p: float) -> str | None:
    totals = window.totals
    if len(totals) < 4:
        return f"{len(totals)} baseline nights on record, fewer than 4"
    half = len(totals) // 2
    old, new = totals[:half], totals[half:]
    diff = sum(new) / len(new) - sum(old) / len(old)
    sd = math.sqrt(max(phi, 1.0) * window.variance * (1 / len(old) + 1 / len(new)))
    p = 2 * float(norm.sf(abs(diff) / sd)) if sd > 0 else (1.0 if diff == 0 else 0.0)
    if p < drift_p:
        return (
            f"the baseline drifted inside its {len(totals)}-night window "
            f"({sum(old) / len(old):.1f} → {sum(new) / len(new):.1f} broken, p {p:.2g})"
        )
    return None


@dataclass(frozen=True)
class Overdispersion:
    """φ = var(B_t) / Σ p(1 − p) over a window of nightly totals (floor 1), and how many
    nights it rests on; with fewer than `min_nights` the prior stands."""

    phi: float
    nights: int
    estimated: bool


def overdispersion(
    totals: Sequence[int], variance: float, *, min_nights: int, prior: float = 1.0
) -> Overdispersion:
    if len(totals) < max(min_nights, 2) or variance <= 0:
        return Overdispersion(max(prior, 1.0), len(totals), False)
    mean = sum(totals) / len(totals)
    var = sum((t - mean) ** 2 for t in totals) / (len(totals) - 1)
    return Overdispersion(max(var / variance, 1.0), len(totals), True)


@dataclass(frozen=True)
class HistoryStat:
    """The candidate's last `candidate_nights` nights against the baseline window's mean:
    Δ̂ (a share of items) and its z under the null, widened by √φ."""

    n: int
    delta: float
    z: float
    candidate_nights: int
    sd: float = 0.0  # Δ̂'s standard error under the null, widened by √φ


def history_z(
    candidate: Sequence[Mapping[str, bool]], window: BaselineWindow, phi: float = 1.0
) -> HistoryStat:
    """`candidate`: per night (newest last), item → broken. Items outside the window are left
    out; an item a candidate night lacks counts over the nights that have it."""
    items = [u for u in window.rates if any(u in night for night in candidate)]
    n, c, k = len(items), len(candidate), len(window.totals)
    if n == 0 or c == 0:
        return HistoryStat(0, 0.0, 0.0, c)
    cand = 0.0
    for u in items:
        seen = [night[u] for night in candidate if u in night]
        cand += sum(seen) / len(seen)
    base = sum(window.rates[u] for u in items)
    delta = (cand - base) / n
    var = _unbiased(sum(window.rates[u] * (1 - window.rates[u]) for u in items), k) * (
        1 / c + 1 / k
    )
    sd = math.sqrt(max(phi, 1.0) * var) / n
    z = delta / sd if sd > 0 else (math.inf if delta > 0 else 0.0)
    return HistoryStat(n, delta, z, c, sd)


def _excursion(zs: Sequence[float], k: float) -> tuple[float, int]:
    """The one-sided CUSUM of nightly z's (reference k), restart-free: quiet nights before a
    step cannot drag it below 0, as they drag a sequential test from a fixed start; and how
    many nights its current excursion spans (the nights since it last sat at 0): where a step
    most likely began."""
    s, run = 0.0, 0
    for z in zs:
        s = max(0.0, s + z - k)
        run = run + 1 if s > 0 else 0
    return s, run


def confirms(nights: Sequence[HistoryStat], policy: GatePolicy) -> str | None:
    """Why the history path confirms the newest of a key's consecutive nights (oldest first,
    each night's history z of one candidate night), else None:

    - tonight's z alone at one-sided p `history_p`, with Δ̂ ≥ min_effect; or
    - the CUSUM of the nights' z (reference `cusum_k`) at `cusum_h` or more, with Δ̂ ≥
      min_effect tonight or pooled over the last nights of the CUSUM's excursion (never over
      the quiet nights before it began, which would drag a step's Δ̂ below the floor).

    Both thresholds are calibrated on simulated A/A nights (bench/calibrate_history.py; the
    item-level check is bench_statistics_sim.py --clip-model), not set from Lorden's bound:
    the z's of consecutive nights share most of their baseline window, so they are not
    independent."""
    if not nights:
        return None
    tonight, floor = nights[-1], policy.min_effect
    one = float(norm.isf(policy.history_p))
    if tonight.z >= one and tonight.delta >= floor:
        return (
            f"history z {tonight.z:.1f} ≥ {one:.1f} (one-sided p {policy.history_p:g}), "
            f"Δ̂ {tonight.delta * 100:+.2f} points over {tonight.n} items"
        )
    s, run = _excursion([night.z for night in nights], policy.cusum_k)
    if s < policy.cusum_h:
        return None
    pooled = [(sum(x.delta for x in nights[-j:]) / j, j) for j in range(1, max(run, 1) + 1)]
    delta, j = max(pooled)
    if delta < floor:
        return None
    over = "tonight" if j == 1 else f"the last {j} nights"
    return (
        f"CUSUM of the history z {s:.1f} ≥ {policy.cusum_h:g} over {run} nights, Δ̂ "
        f"{delta * 100:+.2f} points over {tonight.n} items ({over})"
    )

"""Gate design in the forms maintainers use elsewhere, pure:

- a **mean gate** as TensorRT-LLM sets its accuracy references (a one-sided hypothesis test):
  α (false-fail chance), β (miss chance), σ (one item's spread) and n give the minimum
  detectable effect θ = (z₁₋α + z₁₋β)·σ·√(2/n) and the threshold reference − z₁₋α·σ·√(2/n)
  (for a figure that must stay above its reference; mirrored for one that must stay below).
  The √2 is TensorRT-LLM's: the reference is itself the mean of n items, so a night is a
  two-sample test against it (tests/integration/defs/accuracy/README.md there);
- a **k-of-n gate** as upstream vLLM-Omni turned flaky per-request checks into (PR #5681:
  "≥ 29 of 40", no retries and no early exit): its false-fail chance at the healthy pass rate,
  its power against a degraded one, and the smallest n (with its k) that meets both;
- a **zero-tolerance gate** ("0 wrong of 32", voice isolation): its power to catch a leak rate,
  and the n needed for a stated power.

Binomial tails are exact (scipy.stats.binom); the normal approximation is the mean gate's only,
as TensorRT-LLM's is."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from scipy.stats import binom, norm

MAX_N = 100_000


@dataclass(frozen=True)
class MeanGate:
    alpha: float
    beta: float
    sigma: float
    n: int
    theta: float  # the minimum detectable effect at power 1 - β
    threshold: float | None  # reference ∓ z₁₋α·σ·√(2/n) (None without a reference)


def mean_gate(
    alpha: float,
    beta: float,
    sigma: float,
    n: int,
    reference: float | None = None,
    direction: Literal[">=", "<="] = ">=",
) -> MeanGate:
    if not (0 < alpha < 1 and 0 < beta < 1 and sigma >= 0 and n >= 1):
        raise ValueError("need 0 < α, β < 1, σ ≥ 0 and n ≥ 1")
    se = sigma * math.sqrt(2 / n)  # night and reference: two means of n items each
    theta = (norm.ppf(1 - alpha) + norm.ppf(1 - beta)) * se
    threshold = None
    if reference is not None:
        margin = norm.ppf(1 - alpha) * se
        threshold = reference - margin if direction == ">=" else reference + margin
    return MeanGate(alpha, beta, sigma, n, float(theta), threshold)


@dataclass(frozen=True)
class KOfN:
    n: int
    k: int  # the gate passes with at least k passing items of n
    healthy: float  # the pass rate with nothing wrong
    degraded: float | None  # a pass rate the gate should catch
    false_fail: float  # P(fewer than k pass | healthy)
    power: float | None  # P(fewer than k pass | degraded)


def k_of_n(n: int, k: int, healthy: float, degraded: float | None = None) -> KOfN:
    """A "≥ k of n" gate's false-fail chance and power (every item run once, no retries)."""
    if not (1 <= k <= n <= MAX_N and 0 <= healthy <= 1):
        raise ValueError("need 1 ≤ k ≤ n and a pass rate in [0, 1]")
    power = None if degraded is None else float(binom.cdf(k - 1, n, degraded))
    return KOfN(n, k, healthy, degraded, float(binom.cdf(k - 1, n, healthy)), power)


def k_for(n: int, healthy: float, alpha: float) -> int:
    """The largest k whose false-fail chance at the healthy pass rate stays ≤ α (a gate that
    tolerates the most misses a healthy build shows; ≥ 1)."""
    # binom.ppf gives the smallest x with cdf(x) ≥ α: fewer than that many passes has a chance
    # below α, so k = that x (then P(X < k) = cdf(x - 1) < α).
    k = int(binom.ppf(alpha, n, healthy))
    while k >= 1 and binom.cdf(k - 1, n, healthy) > alpha:
        k -= 1
    return max(k, 1)


def n_for_k_of_n(healthy: float, degraded: float, alpha: float, beta: float) -> KOfN:
    """The smallest n, with its k from `k_for`, whose gate fails a healthy build at most α of
    the time and catches the degraded pass rate at least 1 - β of the time."""
    if not (0 < degraded < healthy < 1):
        raise ValueError("need 0 < degraded < healthy < 1")
    for n in range(1, MAX_N + 1):
        gate = k_of_n(n, k_for(n, healthy, alpha), healthy, degraded)
        if gate.false_fail <= alpha and gate.power is not None and gate.power >= 1 - beta:
            return gate
    raise ValueError(f"no n up to {MAX_N} separates {healthy:g} from {degraded:g}")


@dataclass(frozen=True)
class ZeroTolerance:
    n: int
    rate: float  # the per-item leak rate the gate should catch
    power: float  # P(at least one leak among n)


def zero_tolerance(n: int, rate: float) -> ZeroTolerance:
    """ "0 wrong of n": the chance it sees at least one of a `rate` leak."""
    if not (n >= 1 and 0 <= rate <= 1):
        raise ValueError("need n ≥ 1 and a rate in [0, 1]")
    return ZeroTolerance(n, rate, 1 - (1 - rate) ** n)


def n_for_zero_tolerance(rate: float, power: float) -> int:
    """The smallest n whose "0 wrong of n" catches a `rate` leak with `power`."""
    if not (0 < rate < 1 and 0 < power < 1):
        raise ValueError("need 0 < rate, power < 1")
    return math.ceil(math.log(1 - power) / math.log(1 - rate))

"""Gate design (gates/design.py) against first principles: binomial tails summed term by term
with math.comb, and the normal quantile from the standard library."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from omni_tasks.gates.design import (
    k_for,
    k_of_n,
    mean_gate,
    n_for_k_of_n,
    n_for_zero_tolerance,
    zero_tolerance,
)


def below(k: int, n: int, p: float) -> float:
    """P(X < k) for X ~ Binomial(n, p), term by term."""
    return math.fsum(math.comb(n, x) * p**x * (1 - p) ** (n - x) for x in range(k))


def test_upstreams_29_of_40_gate() -> None:
    g = k_of_n(40, 29, 0.9, 0.6)
    assert g.false_fail == pytest.approx(below(29, 40, 0.9), rel=1e-9)
    assert g.power == pytest.approx(below(29, 40, 0.6), rel=1e-9)


def test_the_most_tolerant_k_stays_within_alpha() -> None:
    for n, healthy, alpha in ((40, 0.9, 0.01), (100, 0.8, 0.05), (32, 0.99, 0.02)):
        k = k_for(n, healthy, alpha)
        assert below(k, n, healthy) <= alpha
        assert k == n or below(k + 1, n, healthy) > alpha  # one more required breaks α


def test_the_smallest_n_meets_both_goals_and_one_less_does_not() -> None:
    g = n_for_k_of_n(0.9, 0.75, alpha=0.01, beta=0.1)
    assert below(g.k, g.n, 0.9) <= 0.01 and below(g.k, g.n, 0.75) >= 0.9
    smaller = g.n - 1
    k = k_for(smaller, 0.9, 0.01)
    assert not (below(k, smaller, 0.9) <= 0.01 and below(k, smaller, 0.75) >= 0.9)


def test_zero_wrong_of_32_and_the_n_a_one_percent_leak_needs() -> None:
    assert zero_tolerance(32, 0.05).power == pytest.approx(1 - 0.95**32)
    n = n_for_zero_tolerance(0.01, 0.9)
    assert 1 - 0.99**n >= 0.9 > 1 - 0.99 ** (n - 1)


def test_a_mean_gate_as_a_hypothesis_test() -> None:
    z = NormalDist().inv_cdf
    g = mean_gate(0.05, 0.2, sigma=0.42, n=300, reference=0.78)
    se = 0.42 / math.sqrt(300)
    assert g.theta == pytest.approx((z(0.95) + z(0.8)) * se, rel=1e-9)
    assert g.threshold == pytest.approx(0.78 - z(0.95) * se, rel=1e-9)
    wer = mean_gate(0.05, 0.2, sigma=0.1, n=1088, reference=0.03, direction="<=")
    assert wer.threshold is not None and wer.threshold > 0.03

"""Gate design (gates/design.py) against first principles: binomial tails summed term by term
with math.comb, and the normal quantile from the standard library."""

from __future__ import annotations

import math

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


# TensorRT-LLM's own output: `scripts/compute_theta_and_thresholds.py --num_samples_total 14042
# --sigma 50 --alpha 0.05 --beta 0.2`, as printed in tests/integration/defs/accuracy/README.md
# (NVIDIA/TensorRT-LLM): num_samples, theta, threshold - reference.
TRTLLM_MMLU_TABLE = [
    (32, 31.080936, -20.560670),
    (64, 21.977540, -14.538589),
    (1024, 5.494385, -3.634647),
    (4096, 2.747193, -1.817324),
    (14042, 1.483729, -0.981517),
]


@pytest.mark.parametrize(("n", "theta", "offset"), TRTLLM_MMLU_TABLE)
def test_a_mean_gate_is_tensorrt_llms(n: int, theta: float, offset: float) -> None:
    g = mean_gate(0.05, 0.2, sigma=50, n=n, reference=0.0)
    assert g.theta == pytest.approx(theta, abs=1e-6)
    assert g.threshold == pytest.approx(offset, abs=1e-6)


def test_a_figure_that_must_stay_below_gets_its_threshold_above_the_reference() -> None:
    wer = mean_gate(0.05, 0.2, sigma=0.1, n=1088, reference=0.03, direction="<=")
    above = mean_gate(0.05, 0.2, sigma=0.1, n=1088, reference=0.03)
    assert wer.threshold is not None and above.threshold is not None
    assert wer.threshold > 0.03
    assert wer.threshold - 0.03 == pytest.approx(0.03 - above.threshold, rel=1e-12)

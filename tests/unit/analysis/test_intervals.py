"""Wilson, Newcombe method 10 (REFERENCE.md §4 worked values), exact McNemar, Holm."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from omni_tasks.analysis.intervals import holm, mcnemar_exact, newcombe_paired, wilson


@pytest.mark.parametrize(
    ("table", "expected"),
    [((1, 1, 7, 12), (-0.2857, -0.5069, -0.0256)), ((59, 6, 16, 80), (-0.0621, -0.1186, -0.0046))],
)
def test_newcombe_method_10_worked_values(table, expected) -> None:  # type: ignore[no-untyped-def]
    got = newcombe_paired(*table)
    assert got == pytest.approx(expected, abs=1e-4)


def test_newcombe_identical_runs_is_zero_centred() -> None:
    delta, lo, hi = newcombe_paired(80, 0, 0, 1008)
    assert delta == 0 and lo < 0 < hi


def test_wilson_known_value() -> None:
    # 89 of 1088 (p = 0.0818), by the score formula with z = 1.96
    lo, hi = wilson(89, 1088)
    assert lo == pytest.approx(0.06695, abs=5e-5) and hi == pytest.approx(0.09959, abs=5e-5)
    assert wilson(0, 10)[0] == pytest.approx(0.0, abs=1e-12)
    assert wilson(10, 10)[1] == pytest.approx(1.0, abs=1e-12)


def test_mcnemar_matches_scipy_and_both_sides() -> None:
    p_reg, p_imp = mcnemar_exact(71, 9)
    assert p_reg == binomtest(71, 80, 0.5, alternative="greater").pvalue
    assert p_imp == binomtest(9, 80, 0.5, alternative="greater").pvalue
    assert p_reg < 1e-10 and p_imp > 0.99
    assert mcnemar_exact(0, 0) == (1.0, 1.0)
    assert mcnemar_exact(3, 0)[0] == pytest.approx(0.125)


def test_holm_by_hand() -> None:
    # sorted: 0.01 (x3 = 0.03), 0.02 (x2 = 0.04), 0.04 (x1 = 0.04, monotone)
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []

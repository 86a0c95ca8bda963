"""The resolve rule's floor: min_effect where one night is precise, what one night can call
REGRESSED where it is not (analysis/resolution.py)."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from omni_tasks.analysis.resolution import rule_out
from omni_tasks.gates.policy import load_policy

POLICY = load_policy()


def test_at_seed_tts_size_the_floor_is_min_effect() -> None:
    quiet = [(80, 30, 30, 948)] * 3  # 1,088 clips, ψ ≈ .055
    assert rule_out(quiet, POLICY).floor == POLICY.min_effect


def test_at_300_questions_the_floor_is_one_nights_critical_delta() -> None:
    quiet = [(60, 25, 25, 190)] * 3  # ψ = 50/300
    expected = norm.ppf(1 - POLICY.alpha) * math.sqrt(50 / 300 / 300)
    r = rule_out(quiet, POLICY)
    assert r.floor == pytest.approx(expected)
    assert r.ruled_out  # Δ = 0 over 900 questions: the 99 % bound is about 3.5 points


def test_a_step_does_not_raise_its_own_floor() -> None:
    """The floor's ψ is the noise (twice the smaller discordant count): a night with more
    regressions than improvements moves Δ̂, not what must be ruled out."""
    noise = rule_out([(60, 25, 25, 190)] * 3, POLICY)
    step = rule_out([(60, 45, 25, 170)] * 3, POLICY)
    assert step.floor == pytest.approx(noise.floor)
    assert not step.ruled_out


def test_multiple_choice_resolves_on_two_nights_at_95_percent_and_seed_tts_keeps_99() -> None:
    """Two quiet nights of 300 questions, 44 regressed and 36 improved pooled: Δ̂ = 8/600 =
    1.33 points with s.e. √80/600 = 1.49, against a floor of z(.99)·√(.12/300) = 4.65 points
    (ψ = 72/600). The 95 % bound (≈ 1.33 + 1.96·1.49 = 4.25) is below it, the 99 % bound
    (≈ 5.17) is not: a multiple-choice series resolves on them, the default policy does not."""
    nights = [(60, 22, 18, 200)] * 2
    mc = POLICY.for_benchmark("daily_omni")
    assert (mc.resolve_nights, POLICY.resolve_nights) == (2, 3)
    assert rule_out(nights, mc).floor == pytest.approx(norm.ppf(0.99) * math.sqrt(0.12 / 300))
    assert rule_out(nights, mc).ruled_out and not rule_out(nights, POLICY).ruled_out


def test_the_resolve_rule_moves_no_verdict_so_the_policy_version_stays() -> None:
    looser = POLICY.model_copy(update={"resolve_confidence": 0.9, "resolve_nights": 5})
    assert looser.policy_version == POLICY.policy_version
    assert looser.legacy_policy_version == POLICY.legacy_policy_version

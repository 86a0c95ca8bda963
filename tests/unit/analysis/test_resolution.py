"""The resolve rule's floor, chosen from the series' ψ/n: min_effect where k quiet nights can
tell it from noise, wider (and said) where they cannot (analysis/resolution.py)."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from omni_tasks.analysis.resolution import resolution_floor, rule_out
from omni_tasks.gates.policy import load_policy

POLICY = load_policy()


def _floor_by_hand(psi: float, n: int) -> float:
    """(z of the narrowest bound + z of the A/A share) standard errors of three nights."""
    z = norm.ppf(0.5 + POLICY.resolve_confidence_min / 2) + norm.ppf(POLICY.resolve_aa_share)
    return float(z * math.sqrt(psi / (POLICY.resolve_nights * n)))


def test_at_seed_tts_size_the_floor_is_min_effect() -> None:
    quiet = [(80, 30, 30, 948)] * 3  # 1,088 clips, ψ ≈ .055
    r = rule_out(quiet, POLICY)
    assert r.floor == POLICY.min_effect and not r.widened
    assert r.basis(POLICY.min_effect) == "the policy's min_effect"


def test_a_small_suite_is_gated_wider_and_says_so() -> None:
    """300 questions at ψ = .17: three nights' A/A noise is wider than 2 points, so the floor
    is what they can rule out, and the thread names the size and ψ."""
    floor, _ = resolution_floor(0.17, 300, POLICY)
    assert floor == pytest.approx(_floor_by_hand(0.17, 300))
    assert floor > 0.05  # a 5-point drop is not tracked there
    quiet = [(60, 25, 26, 189)] * 3
    r = rule_out(quiet, POLICY)
    assert r.widened and r.floor > POLICY.min_effect
    assert "at 300 items a night" in r.basis(POLICY.min_effect)
    assert "a smaller persisting step may resolve" in r.basis(POLICY.min_effect)
    assert r.ruled_out  # Δ̂ = −1/300 a night


def test_the_floor_does_not_depend_on_the_family() -> None:
    """Multiple choice and seed-TTS at the same ψ and n get the same floor (issue 65: per
    family, 200 clips resolved 81.9 % of A/A alerts within three nights)."""
    mc = POLICY.for_benchmark("daily_omni")
    assert resolution_floor(0.1, 500, mc) == resolution_floor(0.1, 500, POLICY)
    assert mc.resolve_nights == POLICY.resolve_nights == 3


def test_a_step_does_not_raise_its_own_floor() -> None:
    """The floor's ψ is the noise (twice the smaller discordant count, and its A/A shortfall):
    a night with more regressions than improvements moves Δ̂ much more than the floor."""
    noise = rule_out([(60, 25, 25, 190)] * 3, POLICY)
    step = rule_out([(60, 45, 25, 170)] * 3, POLICY)
    assert step.floor < noise.floor * 1.05
    assert noise.ruled_out and not step.ruled_out


def test_the_bound_is_mcnemars_normal_bound_on_the_pooled_counts() -> None:
    """At 1,088 clips the floor is min_effect and the bound the widest (resolve_confidence):
    a persisting 2.1-point step must fall that far below itself to resolve."""
    r = rule_out([(80, 40, 30, 938)] * 3, POLICY)
    z = norm.ppf(0.5 + POLICY.resolve_confidence / 2)
    assert r.high == pytest.approx((30 + z * math.sqrt(210)) / 3264)
    assert _floor_by_hand(0.063, 1088) <= POLICY.min_effect  # 1,088 clips are not gated wider


def test_the_resolve_rule_moves_no_verdict_so_the_policy_version_stays() -> None:
    looser = POLICY.model_copy(
        update={"resolve_confidence": 0.9, "resolve_nights": 5, "resolve_aa_share": 0.9}
    )
    assert looser.policy_version == POLICY.policy_version
    assert looser.legacy_policy_version == POLICY.legacy_policy_version

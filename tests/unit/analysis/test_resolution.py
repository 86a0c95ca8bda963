"""The resolve rule's floor, chosen from the series' ψ/n: min_effect where k quiet nights can
tell it from noise, wider (and said) where they cannot (analysis/resolution.py)."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from omni_tasks.analysis.resolution import against, resolution_floor, rule_out
from omni_tasks.contracts import DecisionHistory
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


def _t(share: float) -> float:
    """Student's t quantile at 59 degrees of freedom: φ estimated from 60 nightly totals."""
    return float(student_t.ppf(share, 59))


def test_run_level_noise_widens_the_bound_by_root_phi_read_on_students_t() -> None:
    """Each night's run-level shift adds φ − 1 times the counts' variance to its Δ̂, and
    φ̂ is a draw (as analysis/gate.py `widened` reads it): z_max becomes t's, times √φ."""
    r = rule_out([(80, 40, 30, 938)] * 3, POLICY, 1.3, 60)
    assert r.high == pytest.approx((30 + _t(0.995) * math.sqrt(1.3 * 210)) / 3264)
    assert r.floor == POLICY.min_effect and r.phi == 1.3
    plain = rule_out([(80, 40, 30, 938)] * 3, POLICY)
    assert plain.high < r.high and plain.phi == 1.0


def test_phi_within_its_own_estimation_noise_keeps_the_floor_at_min_effect() -> None:
    """1,088 clips at ψ .063: φ̂ 1.3 is within one standard error of 1 (relative sd √(2/59),
    18 %), so the floor stays min_effect (a series without run-level noise is not gated wider
    on φ̂'s noise) while the bound's z is t's; at φ̂ 1.6 the size is gated wider, its floor
    the φ-widened (z_min + z_aa) σ."""
    floor, z = resolution_floor(0.063, 1088, POLICY, 1.3, 60)
    assert (floor, z) == (POLICY.min_effect, pytest.approx(_t(0.995)))
    sigma = math.sqrt(0.063 / (3 * 1088))
    assert 1.3 / (1 + math.sqrt(2 / 59)) < 1.1  # one standard error below: about 1
    assert (_t(0.975) + _t(0.98)) * sigma * math.sqrt(1.3) > POLICY.min_effect  # φ̂ would gate
    floor, z = resolution_floor(0.063, 1088, POLICY, 1.6, 60)
    assert floor == pytest.approx((_t(0.975) + _t(0.98)) * sigma * math.sqrt(1.6))
    assert z == pytest.approx(_t(0.975))


def test_a_size_gated_wider_by_run_level_noise_says_so() -> None:
    """Multiple choice's run-level noise (φ ≈ 2 at 1,197 questions): the thread names φ."""
    quiet = [(180, 120, 118, 779)] * 3
    r = rule_out(quiet, POLICY, 2.0, 60)
    psi = (2 * 354 + math.sqrt(2 * 714 / math.pi)) / 3591
    assert r.floor == pytest.approx((_t(0.975) + _t(0.98)) * math.sqrt(2.0 * psi / 3591))
    assert r.widened and "run-level noise φ 2.00" in r.basis(POLICY.min_effect)
    assert "φ" not in rule_out(quiet, POLICY).basis(POLICY.min_effect)


def _night(delta: float, sd: float = 0.0055, refused: str | None = None) -> DecisionHistory:
    """A 1,088-clip night's history evidence: Δ̂, its standard error, a 15-night window."""
    return DecisionHistory(delta / sd if sd else 0.0, delta, 1088, 15, refused, 1.0, 0, sd)


def test_a_streaks_history_pools_its_candidates_but_not_its_shared_window() -> None:
    """Three nights against nearly the same 15 baseline nights: the candidates' variance
    shrinks by three, the window's does not (φV(1/c + 1/k)/n² against φV(1 + 1/k)/n²)."""
    delta, sd = against([_night(0.01), _night(0.02, 0.0050), _night(0.0, 0.0060)])
    assert delta == pytest.approx(0.01)
    assert sd == pytest.approx(0.0055 * math.sqrt((1 / 3 + 1 / 15) / (1 + 1 / 15)))


def test_a_night_without_usable_history_leaves_the_streak_to_mcnemar() -> None:
    for missing in (None, _night(0.0, refused="drifted"), _night(0.0, sd=0.0)):
        assert against([_night(0.0), missing, _night(0.0)]) is None
    quiet = [(80, 40, 30, 938)] * 3
    assert rule_out(quiet, POLICY, histories=[_night(0.0), None, _night(0.0)]) == rule_out(
        quiet, POLICY
    )


def test_at_1088_clips_the_history_streak_holds_a_step_open_that_mcnemar_lets_go() -> None:
    """Three nights of a persisting step that came out low, Δ̂ 0.74 points: McNemar's bound
    (z 2.58, σ 0.42 points on these counts) clears min_effect, so the alert would resolve.
    Against the baseline's history σ is 0.34 points, so z_c rises to what A/A can afford,
    min_effect / σ − z_aa (5.9 − 2.05), and the bound stays above it. An A/A streak still
    clears it."""
    quiet = [(80, 37, 29, 942)] * 3
    assert rule_out(quiet, POLICY).ruled_out
    step = rule_out(quiet, POLICY, histories=[_night(8 / 1088)] * 3)
    sd = 0.0055 * math.sqrt((1 / 3 + 1 / 15) / (1 + 1 / 15))
    z_c = POLICY.min_effect / sd - norm.ppf(POLICY.resolve_aa_share)
    assert z_c > norm.ppf(0.5 + POLICY.resolve_confidence / 2)
    assert step.history and step.floor == POLICY.min_effect
    assert step.high == pytest.approx(8 / 1088 + z_c * sd) and not step.ruled_out
    assert "against the baseline's per-item history" in step.basis(POLICY.min_effect)
    aa = rule_out([(80, 30, 30, 948)] * 3, POLICY, histories=[_night(0.0)] * 3)
    assert aa.history and aa.ruled_out


def test_a_short_windows_history_is_less_precise_so_mcnemar_bounds_the_streak() -> None:
    """Two baseline nights in the window: each night's Δ̂ carries the window's whole variance,
    wider than McNemar's on the same nights, so the streak is McNemar's."""
    short = DecisionHistory(0.0, 0.0, 1088, 2, None, 1.0, 0, 0.012)
    quiet = [(80, 30, 30, 948)] * 3
    assert rule_out(quiet, POLICY, histories=[short] * 3) == rule_out(quiet, POLICY)

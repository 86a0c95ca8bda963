"""Error rates of the gate and the bisection by seeded simulation over the real decision code
(issue 18's acceptance; full-size figures: bench/bench_statistics_sim.py)."""

from __future__ import annotations

import pytest

from bench.simlib import aa_false_confirmation, aa_probabilities, bisect_errors
from omni_tasks.gates.policy import load_policy

POLICY = load_policy()


def test_aa_false_confirmation_after_mixed_group_and_paired_nights() -> None:
    r = aa_false_confirmation(POLICY, nights=600_000, seed=20261130, group_share=0.5)
    assert 0.002 < r.regressed / r.nights < 0.006  # A/A false REGRESSED ≈ 0.4 % of nights
    # Goal 1e-4 a series; a fleet of 12 series, 1e-3 false confirmed alerts a calendar night.
    assert r.rate <= 1e-3 / 12
    # Before the fix a group night pooled as "nothing", so about 4e-3 of the nights after one
    # confirmed; now those nights are no likelier to confirm than any other.
    assert r.after_group / r.nights <= 1.5e-4


def test_run_group_nights_with_run_level_noise_do_not_confirm_alone() -> None:
    """Each run's hard-set rate ± 3 points: the exact group test, which takes seeds as
    independent, falsely regresses about 1e-3 of such nights, and each of them used to confirm
    alone (p far below confirm_p); now a second REGRESSED night is needed."""
    from bench.simlib import group_false_confirmation

    regressed, confirmed = group_false_confirmation(POLICY, 6000, seed=3, run_sd=0.03)
    assert regressed >= 1  # ≈ 1e-3 of nights; each of them confirmed under the old rule
    assert confirmed == 0


def test_the_model_has_the_documented_tail_and_noise() -> None:
    probs = aa_probabilities()
    assert 0.075 < probs.mean() < 0.085
    psi = float((2 * probs * (1 - probs)).mean())
    assert 0.05 < psi < 0.07


def test_bisection_on_an_8_to_14_point_step_is_right_and_costs_under_two_full_runs() -> None:
    """Clips chosen from the endpoints' stored nightly runs, the endpoints checked on fresh
    seeds, then the steps: within ⌈log2 16⌉ + 2 steps and 2 full-run equivalents."""
    e = bisect_errors(0.14, histories=600, seed=1)
    d = e.as_dict()
    assert e.wrong_first_bad / e.histories <= 0.02
    assert e.no_regression == 0
    assert e.good_called_bad / e.good_steps <= 0.0125
    assert e.good_steps > 800  # enough good steps for the per-step rate to mean something
    assert e.most_steps <= 4 + 2
    assert d["full_runs_mean"] <= 2.0


def test_choosing_clips_by_fresh_runs_costs_two_more_full_runs() -> None:
    stored = bisect_errors(0.14, histories=100, seed=3).as_dict()
    fresh = bisect_errors(0.14, histories=100, seed=3, stored=False).as_dict()
    assert fresh["full_runs_mean"] == pytest.approx(stored["full_runs_mean"] + 2, abs=0.2)


def test_bisection_on_an_8_to_10_point_step_is_reported() -> None:
    e = bisect_errors(0.101, histories=300, seed=2)
    # A 2-point step is at the edge of what a 16-commit bisection can resolve: it costs more
    # runs and leaves steps undecided at the repeat cap, yet stays mostly right.
    assert e.forced_steps > 0
    assert e.wrong_first_bad / e.histories <= 0.05
    assert e.good_called_bad / e.good_steps <= 0.0125


def test_a_bisection_between_equal_endpoints_names_no_commit() -> None:
    """No regression anywhere in 16 commits: the endpoint check ends nearly every bisection
    with "no regression", and a commit is named only after the check found the bad endpoint
    worse (its α is 5 %, so at most that share)."""
    e = bisect_errors(None, histories=300, seed=4)
    assert e.no_regression / e.histories >= 0.95
    assert e.wrong_first_bad + e.no_regression == e.histories


def test_the_auto_bisect_range_keeps_a_small_step_s_culprit() -> None:
    """A persisting 8 → 10.1 % step: the range is where a single step fits the series, so a
    SAME night after the culprit (a fifth of them) does not start it (the audit measured
    35.8 % of ranges leaving the culprit out under the newest-SAME-night rule); the bench
    measures 0.5 % at 1,000 series."""
    from bench.simlib import range_misses

    r = range_misses(0.101, 200, seed=9, policy=POLICY)
    assert r.opened >= 190
    assert r.excluded_rate <= 0.03
    assert r.no_range == 0 and r.width(0.5) <= 5


def test_the_ab_repeat_rule_fails_an_aa_pair_no_more_than_the_nightly_and_finds_a_step() -> None:
    """A small version of bench/bench_ab.py: A/A pairs rarely end `failure` (the nightly's
    one-night rule falsely regresses 0.46 % of nights; the bench measures the A/B's rate at
    20,000 pairs), and an 8 → 14 % step ends `failure` within the budget."""
    from bench.simlib import aa_probabilities, ab_rates, step_probabilities

    policy = load_policy()
    aa = aa_probabilities()
    rates = ab_rates(aa, aa, 3000, 6000, seed=5, policy=policy)
    assert rates.failure <= 0.008  # 0.46 % plus three standard errors at 3,000 pairs
    assert rates.success + rates.failure + rates.neutral == pytest.approx(1.0)
    good, bad = step_probabilities(0.14)
    step = ab_rates(good, bad, 100, 6000, seed=6, policy=policy)
    assert step.failure >= 0.95 and step.clips_mean <= 6000


def test_an_alert_on_a_persisting_small_step_does_not_flap() -> None:
    """The lifecycle's resolve rule (three nights in a row whose pooled Δ upper bound is below
    a floor chosen from ψ/n, min_effect at 1,088 clips): a persisting 8 → 10.1 %
    step rarely resolves its alert in 30 nights (the audit measured 97.8 % under the old "two
    non-REGRESSED nights" rule), while an A/A pair's alert still resolves within three nights
    (bench/bench_statistics_sim.py prints the full-size figures)."""
    from bench.simlib import alert_resolutions

    policy = load_policy()
    assert alert_resolutions(0.101, 80, 30, seed=7, policy=policy) <= 0.10
    assert alert_resolutions(0.0, 200, 3, seed=8, policy=policy) >= 0.92


def test_a_false_small_suite_alert_resolves_within_three_nights() -> None:
    """At 300 questions (ψ ≈ .17) and 200 clips three quiet nights cannot rule out 2 points,
    and the audit found 18 % of A/A alerts at 200 clips still open after three nights under
    the per-family rule; the floor chosen from ψ/n resolves 95 % within three (the full-size
    figures are bench_statistics_sim's), while a 1,197-question series still holds a real
    5-point drop open."""
    from bench.simlib import MULTIPLE_CHOICE, SEED_TTS, alert_resolutions

    policy = load_policy()
    mc = MULTIPLE_CHOICE
    assert alert_resolutions(0.0, 400, 3, seed=9, policy=policy, n=300, model=mc) >= 0.92
    assert alert_resolutions(0.0, 400, 3, seed=9, policy=policy, n=200, model=SEED_TTS) >= 0.92
    drop = mc.tail + 0.05
    assert alert_resolutions(drop, 60, 30, seed=9, policy=policy, n=1197, model=mc) <= 0.05

"""Same-morning confirmation, pure (analysis/rerun.py): which items re-run, which seeds, the
sign test over items with its decision text, the budget, and the night's confirmation reading
a stored re-run (night/gate.py `_confirm`). Expected p-values are summed by hand from the
binomial, never by the function under test."""

from __future__ import annotations

import dataclasses
import datetime as dt
from math import comb, erf, pi, sqrt

from omni_tasks.analysis import rerun
from omni_tasks.analysis.rerun import RERUN_SEED_BASE
from omni_tasks.contracts import Decision, DecisionHistory
from omni_tasks.contracts.night import NightDecisionRow, night_key
from omni_tasks.contracts.rerun import RerunResult
from omni_tasks.gates.policy import load_policy
from omni_tasks.night.gate import _confirm
from tests.factories import D0
from tests.unit.night.test_alert_plan import inputs, night

POLICY = load_policy().for_benchmark("seed_tts_en")


def upper_tail(k: int, n: int) -> float:
    """P(Binom(n, ½) ≥ k), summed term by term."""
    return sum(comb(n, i) for i in range(k, n + 1)) / 2**n


def test_discordant_takes_each_branchs_lone_breaks_never_the_candidates_alone() -> None:
    base = {"a": True, "b": False, "c": False, "d": True, "e": False, "only_base": True}
    cand = {"a": False, "b": True, "c": False, "d": True, "e": False, "only_cand": True}
    # a: baseline only, b: candidate only; d broken on both, c and e on neither; items one
    # branch lacks drop. Swapping the branches gives the same set: the test stays fair.
    assert rerun.discordant(base, cand) == ("a", "b")
    assert rerun.discordant(cand, base) == ("a", "b")


def test_sign_p_is_the_exact_binomial_tail_and_shrinks_its_counts_by_phi() -> None:
    for worse, better in [(4, 1), (9, 2), (30, 12), (0, 5), (6, 0)]:
        assert abs(rerun.sign_p(worse, better) - upper_tail(worse, worse + better)) < 1e-12
    # φ 2 halves both counts: 30:12 weighs as 15:6, whose tail is summed by hand.
    assert abs(rerun.sign_p(30, 12, phi=2.0) - upper_tail(15, 21)) < 1e-12
    assert rerun.sign_p(30, 12, phi=1.5) > rerun.sign_p(30, 12)
    assert rerun.sign_p(30, 12, phi=0.5) == rerun.sign_p(30, 12)  # φ's floor is 1


def test_fresh_seeds_start_above_every_nightly_and_skip_those_on_record() -> None:
    on_record = {42, RERUN_SEED_BASE, RERUN_SEED_BASE + 2}
    assert rerun.fresh_seeds(on_record, 3) == (
        RERUN_SEED_BASE + 1,
        RERUN_SEED_BASE + 3,
        RERUN_SEED_BASE + 4,
    )
    assert rerun.fresh_seeds(set(), 2) == (RERUN_SEED_BASE, RERUN_SEED_BASE + 1)


def test_sign_test_counts_each_item_once_over_its_seeds() -> None:
    items = ["w1", "w2", "w3", "b1", "tie", "half"]
    # Two seeds a branch: an item's sign is its broken count on the candidate minus the
    # baseline's, over the seeds where both judged it.
    base = [
        {"w1": False, "w2": False, "w3": True, "b1": True, "tie": True, "half": False},
        {"w1": False, "w2": False, "w3": False, "b1": True, "tie": False},
    ]
    cand = [
        {"w1": True, "w2": True, "w3": True, "b1": False, "tie": False, "half": True},
        {"w1": True, "w2": False, "w3": True, "b1": False, "tie": True, "half": True},
    ]
    worse, better, p = rerun.sign_test(base, cand, items)
    # w1 2-0, w2 1-0, w3 2-1, half 1-0 (seed 2 lacks it on the baseline): candidate-worse;
    # b1 0-2: baseline-worse; tie 1-1: no sign.
    assert (worse, better) == (4, 1)
    assert p == upper_tail(4, 5)


def test_a_re_run_confirms_below_rerun_alpha_and_says_so_in_counts() -> None:
    items = [f"u{i}" for i in range(12)]
    # 9 items broken on the candidate at both seeds and never on the baseline; 2 the reverse;
    # 1 broken on both.
    cand_one = {u: i < 9 or i == 11 for i, u in enumerate(items)}
    base_one = {u: i >= 9 for i, u in enumerate(items)}
    result = rerun.judge(
        "rebase",
        "main",
        items,
        (RERUN_SEED_BASE, RERUN_SEED_BASE + 1),
        [base_one, base_one],
        [cand_one, cand_one],
        n=100,
        alpha=POLICY.rerun_alpha,
    )
    assert (result.candidate_worse, result.baseline_worse) == (9, 2)
    assert result.p_value == upper_tail(9, 11)  # 67 / 2048 ≈ .033 …
    assert not result.confirmed  # … not below .02
    assert result.text().startswith(
        "not confirmed by the same-morning re-run: 9 of 12 re-run items broke again on "
        "rebase, 2 on main"
    )
    stronger = dataclasses.replace(
        result, candidate_worse=10, baseline_worse=1, p_value=upper_tail(10, 11)
    )
    assert stronger.confirmed  # 12 / 2048 ≈ .0059
    assert stronger.text().startswith(
        "confirmed the same morning: 10 of 12 re-run items broke again on rebase, 1 on main"
    )
    # Cost: 12 items of 100, 2 seeds, both branches.
    assert result.full_runs == 2 * 2 * 12 / 100


def test_over_budget_is_skipped_and_says_why() -> None:
    # 14 items of 100 at 2 seeds on both branches: 0.56 full runs, over 0.5.
    skipped = rerun.over_budget("rebase", "main", 14, 100, 2, 0.5)
    assert skipped is not None and not skipped.confirmed
    assert "0.56 full runs, over the 0.5 budget" in skipped.text()
    assert rerun.over_budget("rebase", "main", 12, 100, 2, 0.5) is None  # 0.48


def test_the_result_keeps_one_json_spelling() -> None:
    result = RerunResult("rebase", "main", 30, (7, 8), 12, 1, 0.0017, 0.005, 0.6)
    assert RerunResult.from_json(result.to_json()) == result


def _row(verdict: str) -> NightDecisionRow:
    d = Decision(
        benchmark="seed_tts_en",
        nightly=D0,
        candidate_branch="rebase",
        baseline_branch="main",
        variant="default",
        verdict=verdict,
        confirmed=False,
        mcnemar_p=1e-3,
        mcnemar_p_holm=1e-3,
        delta_tail_fraction=0.05,
        delta_tail_fraction_ci=(0.01, 0.09),
        regressed=13,
        improved=2,
        n_paired=300,
        reasons=[],
        mde=None,
        same_margin=None,
    )
    return NightDecisionRow(d, None, None, None, [], {})


def test_a_stored_re_run_confirms_a_regressed_night_that_nothing_else_confirms() -> None:
    # A night REGRESSED at Holm p 1e-3: above confirm_p, no earlier night to pool with.
    tonight = night(0, "REGRESSED", mcnemar_p_holm=1e-3, regressed=13, improved=2, n_paired=300)
    key = night_key(tonight)
    confirms = RerunResult("rebase", "main", 30, (7, 8), 12, 0, upper_tail(12, 12), 0.005, 0.2)
    fails = dataclasses.replace(confirms, candidate_worse=5, p_value=upper_tail(5, 5))  # .031

    def confirmed(verdict: str, result: RerunResult | None) -> bool:
        k = dataclasses.replace(tonight, verdict=verdict)
        found = {key: result} if result else {}
        rows, _ = _confirm(inputs(0, [k], reruns=found), [_row(verdict)], [k], POLICY)
        return rows[0].decision.confirmed

    assert not confirmed("REGRESSED", None)
    assert confirmed("REGRESSED", confirms)
    assert not confirmed("REGRESSED", fails)
    assert not confirmed("UNKNOWN", confirms)  # a re-run confirms only a REGRESSED night
    skipped = dataclasses.replace(confirms, skipped="over budget")
    assert not confirmed("REGRESSED", skipped)
    # Another night's re-run is not tonight's.
    other = {(D0 + dt.timedelta(days=1), *key[1:]): confirms}
    rows, _ = _confirm(inputs(0, [tonight], reruns=other), [_row("REGRESSED")], [tonight], POLICY)
    assert not rows[0].decision.confirmed


def test_no_nightly_may_run_at_a_re_run_seed() -> None:
    import pytest
    from pydantic import ValidationError

    from omni_tasks.deployment.schema import NightlyParams

    assert NightlyParams(seeds=[RERUN_SEED_BASE - 1]).seeds == [6_999_999]
    with pytest.raises(ValidationError, match=r"seeds\.1"):
        NightlyParams(seeds=[42, 7_000_000])


def test_a_night_whose_history_does_not_agree_is_not_re_run() -> None:
    # rerun_history_p .01 is z 2.326 (one-sided): a usable window at z 2.0 says no; z 2.5,
    # a refused window, or no history evidence at all leave the re-run to McNemar's REGRESSED.
    def evidence(z: float, refused: str | None = None) -> DecisionHistory:
        return DecisionHistory(z, 0.021, 1088, 15, refused, 1.0, 60)

    skipped = rerun.disagrees("rebase", "main", evidence(2.0), POLICY)
    assert skipped is not None and skipped.full_runs == 0 and not skipped.confirmed
    assert skipped.text() == (
        "same-morning re-run skipped: the night's history evidence does not agree (z 2.00 < 2.33)"
    )
    assert rerun.disagrees("rebase", "main", evidence(2.5), POLICY) is None
    assert rerun.disagrees("rebase", "main", evidence(0.0, "drifted"), POLICY) is None
    assert rerun.disagrees("rebase", "main", None, POLICY) is None


def phi_cdf(x: float) -> float:
    """The standard normal CDF, from the error function."""
    return 0.5 * (1 + erf(x / sqrt(2)))


Z_98 = 2.0537489106318225  # z(1 − rerun_alpha .02), from the normal table


def test_one_nights_noise_from_the_baseline_window_else_from_tonights_discordance() -> None:
    # No usable history: 200 items, 10 candidate-only and 6 baseline-only; noise explains
    # 2·6 + √(2·16/π) = 15.19 of them (ψ .076), and σ = √(φ·ψ/n).
    psi_n = 12 + sqrt(32 / pi)
    sigma, basis = rerun.night_sigma(10, 6, 200, 1.0)
    assert abs(sigma - sqrt(psi_n) / 200) < 1e-12 and basis == "tonight's ψ 0.076"
    assert rerun.night_sigma(6, 10, 200, 1.0) == (sigma, basis)  # the smaller count, either
    sigma, basis = rerun.night_sigma(10, 6, 200, 3.0)
    assert abs(sigma - sqrt(3 * psi_n) / 200) < 1e-12 and basis == "tonight's ψ 0.076, φ 3.00"
    assert rerun.night_sigma(10, 6, 200, 0.5)[0] == rerun.night_sigma(10, 6, 200, 1.0)[0]
    # A usable window whose standard error of Δ̂, √(φV(1 + 1/15))/n, is 1.2 points: one paired
    # night (two runs, 2φV) is √(2 · 1.2² / (16/15)) = 1.64 points, whatever tonight's counts.
    h = DecisionHistory(2.5, 0.03, 200, 15, None, 1.2, 60, 0.012)
    sigma, basis = rerun.night_sigma(10, 6, 200, 1.2, h)
    assert abs(sigma - sqrt(2 * 0.012**2 / (1 + 1 / 15))) < 1e-12
    assert basis == "the baseline's 15 nights, φ 1.20"
    assert rerun.night_sigma(3, 30, 200, 1.2, h) == (sigma, basis)
    # A refused window (or none, or one stored before its standard error was) leaves tonight's
    # counts.
    refused = DecisionHistory(2.5, 0.03, 200, 15, "drifted", 1.0, 60, 0.012)
    assert rerun.night_sigma(10, 6, 200, 1.0, refused) == rerun.night_sigma(10, 6, 200, 1.0)
    older = DecisionHistory(2.5, 0.03, 200, 15, None, 1.0, 60)
    assert rerun.night_sigma(10, 6, 200, 1.0, older) == rerun.night_sigma(10, 6, 200, 1.0)


def test_power_is_one_nights_evidence_of_a_min_effect_step_at_rerun_alpha() -> None:
    # σ 1.95 points: a 2-point step is 1.026 σ, confirmed at p < .02 15 % of the time.
    sigma = sqrt(12 + sqrt(32 / pi)) / 200
    assert abs(phi_cdf(0.02 / sigma - Z_98) - 0.1521) < 1e-3
    assert abs(rerun.power(sigma, POLICY) - phi_cdf(0.02 / sigma - Z_98)) < 1e-9
    assert abs(rerun.power(0.01, POLICY) - phi_cdf(2 - Z_98)) < 1e-9  # 48 %
    assert rerun.power(0.0, POLICY) == 1.0  # no noise at all


def test_an_underpowered_re_run_is_skipped_and_says_why() -> None:
    assert POLICY.rerun_power == 0.2
    skipped = rerun.underpowered("rebase", "main", 10, 6, 200, 1.0, POLICY)
    assert skipped is not None and skipped.full_runs == 0 and not skipped.confirmed
    assert skipped.items == 16
    assert skipped.text() == (
        "same-morning re-run skipped: 16 discordant items of 200: one night's noise is 1.95 "
        "points (from tonight's ψ 0.076), so a re-run would confirm a 2.0-point step "
        "(p < 0.02) only 15 % of the time, below rerun_power 0.2: at this size one re-run "
        "cannot tell such a step from noise"
    )
    # seed-TTS at 200 items (ψ .063: σ √(.063/200) = 1.77 points) through its window: 18 %.
    sigma = sqrt(0.063 / 200)
    se = sigma / sqrt(2 / (1 + 1 / 15))  # the window's standard error of Δ̂
    h = DecisionHistory(2.5, 2.5 * se, 200, 15, None, 1.0, 60, se)
    skipped = rerun.underpowered("rebase", "main", 9, 4, 200, 1.0, POLICY, h)
    assert skipped is not None
    assert "one night's noise is 1.77 points (from the baseline's 15 nights)" in skipped.text()
    assert f"only {phi_cdf(0.02 / sigma - Z_98) * 100:.0f} % of the time" in skipped.text()
    assert "only 18 % of the time" in skipped.text()
    # At 544 items (σ √(.063/544) = 1.08 points): 41 %, re-run.
    sigma = sqrt(0.063 / 544)
    h = DecisionHistory(3.0, 3.0 * sigma / sqrt(2 / (1 + 1 / 15)), 544, 15, None, 1.0, 60)
    assert abs(phi_cdf(0.02 / sigma - Z_98) - 0.42) < 0.01
    assert rerun.underpowered("rebase", "main", 24, 10, 544, 1.0, POLICY, h) is None
    # The demo's night (8 of 100 candidate-only, none baseline-only, no usable window): noise
    # explains √(16/π) = 2.26 items, a 2-point step is 1.33 σ, 23.5 % of the time: re-run.
    assert abs(phi_cdf(2 / sqrt(sqrt(16 / pi)) - Z_98) - 0.235) < 1e-3
    assert rerun.underpowered("rebase", "main", 8, 0, 100, 1.0, POLICY) is None

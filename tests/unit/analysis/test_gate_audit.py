"""The seven defects of the statistics audit (issue 18), each pinned with its failing input."""

from __future__ import annotations

import datetime as dt
import itertools

import numpy as np
import pytest
from scipy.stats import binomtest

from omni_tasks.analysis.gate import Evidence, SeriesPoint, confirmations, decide_night
from omni_tasks.analysis.groups import compare_groups, null_distribution
from omni_tasks.analysis.intervals import holm, mcnemar_exact, newcombe_paired
from omni_tasks.gates.policy import load_policy

POLICY = load_policy()


def table_evidence(n11: int, n12: int, n21: int, n22: int) -> Evidence:
    delta, lo, hi = newcombe_paired(n11, n12, n21, n22)
    p_reg, p_imp = mcnemar_exact(n12, n21)
    return Evidence(n11 + n12 + n21 + n22, n12, n21, p_reg, p_imp, delta, (lo, hi))


def day(d: int, month: int = 1) -> dt.date:
    return dt.date(2027, month, d)


def paired(when: dt.date, n11: int, n12: int, n21: int, n22: int) -> SeriesPoint:
    v = decide_night([table_evidence(n11, n12, n21, n22)], POLICY)[0]
    return SeriesPoint(when, v.verdict, v.p_regress_holm, n12, n21, n11 + n12 + n21 + n22)


# 1 — a run-group night stores no paired table: pooling skips it.
def test_a_group_night_does_not_let_the_next_night_confirm_on_its_own() -> None:
    after = paired(day(2), 60, 55, 28, 945)
    assert after.verdict == "REGRESSED" and after.p_regress_holm == pytest.approx(0.002, abs=5e-4)
    group = SeriesPoint(day(1), "UNKNOWN", 0.2, 0, 0, 0, paired=False)
    assert confirmations([group, after], POLICY) == [False, False]
    # The same night after a paired SAME night is not confirmed either (the reference case).
    same = paired(day(1), 60, 20, 20, 988)
    assert same.verdict == "SAME"
    assert confirmations([same, after], POLICY) == [False, False]
    # A group night that was itself REGRESSED is a consecutive REGRESSED night: confirms.
    group_regressed = SeriesPoint(day(1), "REGRESSED", 0.003, 0, 0, 0, paired=False)
    assert confirmations([group_regressed, after], POLICY) == [False, True]


# 2 — a group night's p-value is exact, with no Monte Carlo floor; yet (third audit) it never
# confirms alone: the test takes seeds as independent, and copied or run-level-noisy seeds
# make it far too small, so a second REGRESSED night confirms it.
def test_a_large_group_step_gets_an_exact_p_yet_needs_a_second_night() -> None:
    rng = np.random.default_rng(2)
    base = (rng.random((1088, 2)) < 0.08).astype(np.int64)
    cand = (rng.random((1088, 2)) < 0.36).astype(np.int64)  # Δ ≈ +28 points
    test = compare_groups(base, cand)
    assert test.delta_broken_rate > 0.25
    assert test.p_regress < 1e-20 < POLICY.confirm_p
    ev = Evidence(
        1088,
        400,
        50,
        test.p_regress,
        test.p_improve,
        test.delta_broken_rate,
        test.delta_ci,
        delta_exact=test.delta_exact,
    )
    v = decide_night([ev], POLICY)[0]
    point = SeriesPoint(day(1), v.verdict, v.p_regress_holm, 0, 0, 0, paired=False)
    assert confirmations([point], POLICY) == [False]
    again = SeriesPoint(day(2), v.verdict, v.p_regress_holm, 0, 0, 0, paired=False)
    assert confirmations([point, again], POLICY) == [False, True]


def brute_force_p(base: np.ndarray, cand: np.ndarray) -> float:
    """Every within-clip relabelling, enumerated: the definition of the permutation p-value."""
    ka, kb = base.shape[1], cand.shape[1]
    both = np.concatenate([base, cand], axis=1)
    t_obs = int(cand.sum())
    per_clip = []
    for row in both:
        outcomes = [sum(row[list(c)]) for c in itertools.combinations(range(ka + kb), kb)]
        per_clip.append(outcomes)
    hits = total = 0
    for combo in itertools.product(*per_clip):
        total += 1
        hits += sum(combo) >= t_obs
    return hits / total


def test_exact_group_p_equals_full_enumeration() -> None:
    rng = np.random.default_rng(5)
    for kb in (1, 2, 3):
        base = (rng.random((6, 2)) < 0.4).astype(np.int64)
        cand = (rng.random((6, kb)) < 0.6).astype(np.int64)
        assert compare_groups(base, cand).p_regress == pytest.approx(brute_force_p(base, cand))
    pmf, _ = null_distribution(np.array([1, 2, 2, 3, 1]), 2, 3)
    assert pmf.sum() == pytest.approx(1.0)


# 4 — Δ from counts: an exact 2-point step is REGRESSED.
def test_an_exact_two_point_step_is_regressed_despite_float_rounding() -> None:
    ev = table_evidence(46, 40, 20, 894)
    assert ev.delta_tail < 0.02  # 0.01999999999999999 as floats
    v = decide_night([ev], POLICY)[0]
    assert v.verdict == "REGRESSED"
    assert v.p_regress_holm == pytest.approx(0.0067, abs=1e-4)
    # Mirror image: exactly −2 points is IMPROVED.
    assert decide_night([table_evidence(46, 20, 40, 894)], POLICY)[0].verdict == "IMPROVED"


# 5 — small n: the margin is capped, so SAME cannot mean "within ±129 points".
def test_small_n_is_unknown_not_same() -> None:
    v = decide_night([table_evidence(0, 6, 0, 0)], POLICY)[0]
    assert v.verdict == "UNKNOWN"
    assert any("cap" in r for r in v.reasons)
    for n in range(1, 16):
        assert decide_night([table_evidence(0, 0, 0, n)], POLICY)[0].verdict != "SAME"
    # A full night of identical runs is still SAME.
    assert decide_night([table_evidence(90, 0, 0, 998)], POLICY)[0].verdict == "SAME"


# 6 — "consecutive" means within confirm_window_days (default 3).
def weak(when: dt.date, verdict: str = "REGRESSED") -> SeriesPoint:
    # Δ +2.0 points (28:6 of 1,088), p ≈ 1e-4: REGRESSED, not confirmed alone; two pooled are.
    return SeriesPoint(when, verdict, 1.1e-4 if verdict == "REGRESSED" else None, 28, 6, 1088)


def test_consecutive_nights_lie_within_the_window() -> None:
    assert confirmations([weak(day(1)), weak(day(2))], POLICY) == [False, True]
    assert confirmations([weak(day(1)), weak(day(15))], POLICY) == [False, False]
    assert confirmations([weak(day(1)), weak(day(15, 2))], POLICY) == [False, False]
    infra_between = [weak(day(1)), weak(day(2), "INFRA"), weak(day(3))]
    assert confirmations(infra_between, POLICY) == [False, False, True]
    # A missing night inside the window neither breaks nor extends: 1st and 4th confirm,
    # 1st and 5th do not.
    assert confirmations([weak(day(1)), weak(day(4))], POLICY) == [False, True]
    assert confirmations([weak(day(1)), weak(day(5))], POLICY) == [False, False]


# 7 — the policy version hashes decision-relevant fields only.
def test_a_report_only_edit_keeps_the_policy_version() -> None:
    v = POLICY.policy_version
    assert POLICY.model_copy(update={"slo_tail": 0.2}).policy_version == v
    assert POLICY.model_copy(update={"legacy_mean_max": 0.5}).policy_version == v
    assert POLICY.model_copy(update={"report_taus": [1.0, 2.0]}).policy_version == v
    assert POLICY.model_copy(update={"alpha": 0.05}).policy_version != v
    assert POLICY.model_copy(update={"confirm_window_days": 7}).policy_version != v


def test_a_benchmark_override_is_its_own_policy_version_and_leaves_others_alone() -> None:
    from omni_tasks.analysis.policy import BenchmarkOverrides

    tuned = POLICY.model_copy(
        update={"benchmarks": {"videomme": BenchmarkOverrides(min_effect=0.05)}}
    )
    assert tuned.policy_version == POLICY.policy_version  # adding an override keeps the rest
    assert tuned.legacy_policy_version == POLICY.legacy_policy_version
    assert tuned.for_benchmark("seed_tts_en") is tuned
    video = tuned.for_benchmark("videomme")
    assert video.min_effect == 0.05 and video.same_margin == POLICY.same_margin
    assert video.policy_version != POLICY.policy_version
    # A 3-point step regresses under the default 2-point minimum, not under Video-MME's 5.
    step = Evidence(
        n_paired=1000,
        regressed=40,
        improved=10,
        p_regress=1e-6,
        p_improve=1.0,
        delta_tail=0.03,
        delta_tail_ci=(0.015, 0.045),
    )
    assert decide_night([step], POLICY)[0].verdict == "REGRESSED"
    assert decide_night([step], video)[0].verdict != "REGRESSED"


def test_mcnemar_and_holm_still_match_scipy() -> None:
    assert mcnemar_exact(55, 28)[0] == pytest.approx(
        binomtest(55, 83, 0.5, alternative="greater").pvalue, rel=1e-12
    )
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


# Third audit, 7 — multiple choice at a few hundred questions: the margin is capped near
# min_effect, so a night that cannot rule out a 5-point drop is UNKNOWN, not SAME.
def test_a_300_question_night_cannot_be_same_on_multiple_choice() -> None:
    night = table_evidence(40, 22, 23, 215)  # ψ = .15, Δ −0.3 points
    assert decide_night([night], POLICY)[0].verdict == "SAME"  # the general 10-point cap
    for benchmark in ("daily_omni", "videomme"):
        v = decide_night([night], POLICY.for_benchmark(benchmark))[0]
        assert v.verdict == "UNKNOWN"
        assert v.margin is not None and v.margin > 0.07
        assert any("too few paired items" in r for r in v.reasons)
    # A 2,000-question night with the same discordance can still be SAME.
    big = table_evidence(260, 150, 150, 1440)
    assert decide_night([big], POLICY.for_benchmark("videomme"))[0].verdict == "SAME"


# Issue 45 — the pooled two-night rule at sizes where Δ ≥ min_effect does not bind.
@pytest.mark.parametrize(
    ("first", "second"),
    [
        ((60, 20, 14, 206), (60, 25, 9, 206)),  # Daily-Omni, 300 questions: pooled p .0052
        ((30, 22, 16, 476), (30, 28, 12, 474)),  # seed-TTS, limit 544
    ],
)
def test_two_noisy_small_nights_pooled_do_not_confirm(first, second) -> None:
    a, b = paired(day(1), *first), paired(day(2), *second)
    assert b.verdict == "REGRESSED" and a.verdict != "REGRESSED"
    pooled_p = mcnemar_exact(first[1] + second[1], first[2] + second[2])[0]
    assert POLICY.confirm_pool_p < pooled_p < POLICY.alpha  # what used to confirm
    assert confirmations([a, b], POLICY) == [False, False]


def test_a_real_small_step_still_confirms_on_its_second_night() -> None:
    """300 questions, 8 → 16 % wrong: both nights pooled clear the pooled level."""
    a, b = paired(day(1), 20, 30, 6, 244), paired(day(2), 20, 28, 5, 247)
    assert b.verdict == "REGRESSED"
    assert confirmations([a, b], POLICY)[1]


# Issue 45 — two runs whose texts differ but whose broken items are the same are one outcome.
def test_runs_with_the_same_broken_items_are_one_outcome_whatever_their_text() -> None:
    from omni_tasks.analysis.groups import outcome_fingerprint
    from omni_tasks.records import ClipRecord

    def run(wers: list[float], said: str) -> list[ClipRecord]:
        return [
            ClipRecord(f"u{i}", "a b c d", "ok", "graded", w, hypothesis=f"{said} {i}")
            for i, w in enumerate(wers)
        ]

    tau = POLICY.primary_tau
    first = outcome_fingerprint(run([0.0, 0.25, 1.0, 0.75], "alpha"), tau)
    reworded = outcome_fingerprint(run([0.25, 0.0, 1.5, 0.6], "beta"), tau)  # same broken: u2, u3
    assert first == reworded
    assert first != outcome_fingerprint(run([0.0, 0.25, 1.0, 0.0], "alpha"), tau)


# Issue 45 #7 — a small step's alert opens sooner when three consecutive nights pool.
STEP_NIGHTS = ((60, 44, 12, 972), (60, 16, 5, 1007), (60, 27, 4, 997))  # 1,088 clips each


def one_sided(b: int, c: int) -> float:
    return float(binomtest(b, b + c, 0.5, alternative="greater").pvalue)


def test_three_consecutive_nights_pooled_confirm_what_two_cannot() -> None:
    (_, b1, c1, _), (_, b2, c2, _), (_, b3, c3, _) = STEP_NIGHTS
    n = 1088
    # The arithmetic, from scipy and the counts: the last night is REGRESSED but not alone
    # confirmed; its pool with the night before is 34 net of 2,176 (1.6 points, under 2); all
    # three pooled are 68 net of 3,264 (2.1 points) at p ≈ 5e-11, under 1e-4 / 2.
    assert 1e-5 < one_sided(b3, c3) < 0.01 and (b3 - c3) * 50 >= n
    assert (b2 + b3 - c2 - c3) * 50 < 2 * n
    assert (b1 + b2 + b3 - c1 - c2 - c3) * 50 >= 3 * n
    assert one_sided(b1 + b2 + b3, c1 + c2 + c3) < 1e-4 / 2
    nights = [paired(day(i + 1), *t) for i, t in enumerate(STEP_NIGHTS)]
    assert nights[1].verdict != "REGRESSED" and nights[2].verdict == "REGRESSED"
    assert POLICY.confirm_pool_nights == 3
    assert confirmations(nights, POLICY)[2]
    two = POLICY.model_copy(update={"confirm_pool_nights": 2})
    assert confirmations(nights, two) == [False, False, False]


def test_a_pool_stops_at_a_gap_or_a_group_night() -> None:
    first, second, third = STEP_NIGHTS
    # The first night 4 days before the second is not consecutive (window 3): not pooled.
    gap = [paired(day(1), *first), paired(day(5), *second), paired(day(6), *third)]
    assert confirmations(gap, POLICY)[2] is False
    # A group night stores no table: the pool ends there, and the night before it is not read.
    group = SeriesPoint(day(2), "UNKNOWN", None, 0, 0, 0, paired=False)
    behind = [paired(day(1), *first), group, paired(day(3), *third)]
    assert confirmations(behind, POLICY)[2] is False


def test_every_confirmation_test_is_exact_so_the_bound_holds_at_any_size() -> None:
    """A series-night falsely confirms at most confirm_p + confirm_pool_p (1e-4) whatever its
    size, because each test's p-value is exact: given N discordant items, the chance under A/A
    that p falls below a level is at most the level (summed here from the binomial pmf)."""
    from scipy.stats import binom

    levels = (POLICY.confirm_p, POLICY.confirm_pool_p / (POLICY.confirm_pool_nights - 1))
    assert POLICY.confirm_p + POLICY.confirm_pool_p <= 1e-4
    for n in range(1, 400):
        ps = [mcnemar_exact(b, n - b)[0] for b in range(n + 1)]
        pmf = binom.pmf(range(n + 1), n, 0.5)
        for level in levels:
            assert sum(w for p, w in zip(ps, pmf, strict=True) if p < level) <= level

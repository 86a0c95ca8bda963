"""Paired A/B, gate rules, confirmation order, run groups and A/A behaviour."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from scipy.stats import t as student_t

from omni_tasks.analysis.gate import (
    Evidence,
    SeriesPoint,
    confirmations,
    decide_night,
    widened,
)
from omni_tasks.analysis.groups import compare_groups
from omni_tasks.analysis.noise import calibrate, mde
from omni_tasks.analysis.paired import comparability, paired_table
from omni_tasks.analysis.trend import change_points
from omni_tasks.gates.policy import load_policy
from tests.unit.analysis.clips import clip, from_flags

POLICY = load_policy()


def evidence(baseline, candidate, tau=0.5) -> Evidence:  # type: ignore[no-untyped-def]
    t = paired_table(baseline, candidate, tau)
    return Evidence(
        t.n_paired,
        t.regressed,
        t.improved,
        t.mcnemar_p,
        t.mcnemar_p_improve,
        t.delta_tail_fraction,
        t.delta_tail_fraction_ci,
    )


def test_hand_computed_paired_table() -> None:
    base = from_flags([True, True, False, False, False, True])
    cand = from_flags([True, False, True, True, False, True])
    cand.append(clip("extra", 5.0))  # only in the candidate: not paired
    base[4] = clip("u4", None, synth="request_failed", grade=None)  # infra: excluded
    t = paired_table(base, cand, 0.5)
    assert (t.n_paired, t.stable_broken, t.regressed, t.improved, t.stable_ok) == (5, 2, 2, 1, 0)
    assert t.mcnemar_p == pytest.approx(0.5)  # P(Binom(3, .5) >= 2)
    assert t.delta_tail_fraction == pytest.approx(4 / 5 - 3 / 5)
    assert t.regressed_clips == ["u2", "u3"]


flags = st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=300)


@settings(max_examples=60, deadline=None)
@given(flags)
def test_swapping_sides_swaps_b_c_p_and_direction(pairs) -> None:  # type: ignore[no-untyped-def]
    a = from_flags([x for x, _ in pairs])
    b = from_flags([y for _, y in pairs])
    ab, ba = paired_table(a, b, 0.5), paired_table(b, a, 0.5)
    assert (ab.regressed, ab.improved) == (ba.improved, ba.regressed)
    assert (ab.mcnemar_p, ab.mcnemar_p_improve) == (ba.mcnemar_p_improve, ba.mcnemar_p)
    assert ab.delta_tail_fraction == pytest.approx(-ba.delta_tail_fraction)
    v_ab, v_ba = (
        decide_night([evidence(a, b)], POLICY)[0],
        decide_night([evidence(b, a)], POLICY)[0],
    )
    mirror = {
        "REGRESSED": "IMPROVED",
        "IMPROVED": "REGRESSED",
        "SAME": "SAME",
        "UNKNOWN": "UNKNOWN",
    }
    assert v_ba.verdict == mirror[v_ab.verdict]


def test_identical_runs_are_same() -> None:
    rng = np.random.default_rng(1)
    run = from_flags(list(rng.random(1088) < 0.1))
    t = paired_table(run, run, 0.5)
    assert t.regressed == t.improved == 0
    assert t.delta_capped_mean_wer_ci == (0.0, 0.0)
    assert decide_night([evidence(run, run)], POLICY)[0].verdict == "SAME"


def test_infra_is_never_regressed_and_is_left_out_of_holm() -> None:
    strong = Evidence(1088, 71, 9, 2e-13, 1.0, 0.057, (0.04, 0.07))
    weak = Evidence(1088, 30, 15, 0.018, 0.99, 0.014, (0.0, 0.03))
    infra = Evidence(infra_reasons=("candidate coverage 90.0% below the 98% floor",))
    verdicts = decide_night([strong, infra, weak], POLICY)
    assert [v.verdict for v in verdicts][:2] == ["REGRESSED", "INFRA"]
    assert verdicts[2].p_regress_holm == pytest.approx(0.018)  # m = 2 live comparisons
    assert verdicts[0].p_regress_holm == pytest.approx(4e-13)


def test_regressed_needs_the_practical_minimum() -> None:
    tiny = Evidence(100000, 600, 400, 1e-10, 1.0, 0.002, (0.001, 0.003))
    assert decide_night([tiny], POLICY)[0].verdict == "SAME"


def night(day: int, verdict: str, p: float | None = 0.001, b: int = 40, c: int = 10) -> SeriesPoint:
    return SeriesPoint(dt.date(2026, 11, day), verdict, p, b, c, 1088)


def test_confirmation_rules_in_nightly_order() -> None:
    # Strong on one night -> confirmed at once.
    assert confirmations([night(1, "REGRESSED", 1e-6)], POLICY) == [True]
    # Weak alone (Δ +2.0 points, 28:6) -> not; two consecutive REGRESSED nights (listed out
    # of order), pooled, -> the later one.
    series = [night(3, "REGRESSED", 1e-4, 28, 6), night(2, "REGRESSED", 1e-4, 28, 6)]
    assert confirmations(series, POLICY) == [True, False]
    # An INFRA night between neither confirms nor breaks the streak.
    series = [
        night(1, "REGRESSED", 1e-4, 28, 6),
        night(2, "INFRA", None),
        night(3, "REGRESSED", 1e-4, 28, 6),
    ]
    assert confirmations(series, POLICY) == [False, False, True]
    # A SAME night between breaks it.
    series = [
        night(1, "REGRESSED", 1e-4, 28, 6),
        night(2, "SAME", 0.5, 5, 5),
        night(3, "REGRESSED", 1e-4, 28, 6),
    ]
    assert confirmations(series, POLICY) == [False, False, False]
    # UNKNOWN then REGRESSED: pooled counts decide.
    series = [night(1, "UNKNOWN", 0.02, 40, 18), night(2, "REGRESSED", 0.004, 45, 12)]
    assert confirmations(series, POLICY) == [False, True]


def test_fingerprints_decide_comparability() -> None:
    a = {
        "benchmark": "b",
        "dataset_fingerprint": "d1",
        "prompt_fingerprint": "p",
        "execution_fingerprint": None,
        "grader_id": "g",
    }
    ok, reasons, warnings = comparability(a, dict(a))
    assert ok and not reasons and any("execution_fingerprint unknown" in w for w in warnings)
    ok, reasons, _ = comparability(a, {**a, "grader_id": "g2"})
    assert not ok and "grader_id differs" in reasons[0]
    ok, reasons, _ = comparability(a, {**a, "execution_fingerprint": "h200"})
    assert not ok


def test_a_cross_lane_compare_is_labelled_as_one() -> None:
    """Asked for by name (`compare`), two lanes of a series compare, and say so; the same
    lane says nothing."""
    a = {"benchmark": "b", "lane": "cuda-h100x2", "model": "m/x", "grader_id": "g"}
    for key in ("dataset_fingerprint", "prompt_fingerprint", "execution_fingerprint"):
        a[key] = "f"
    ok, reasons, warnings = comparability(a, {**a, "lane": "rocm-mi300"})
    assert ok and not reasons
    assert any(w.startswith("cross-lane comparison: cuda-h100x2 vs rocm-mi300") for w in warnings)
    assert not any("cross-" in w for w in comparability(a, dict(a))[2])


def test_window_policies_that_differ_are_named_and_unknown_ones_warn() -> None:
    base = {
        "benchmark": "b",
        "dataset_fingerprint": "d",
        "prompt_fingerprint": "p",
        "execution_fingerprint": "e",
    }
    old = {**base, "grader_id": "artifact:vllm-omni-seed-tts/truncate30"}
    new = {**base, "grader_id": "artifact:vllm-omni-seed-tts/whole-timestamps"}
    ok, reasons, _ = comparability(old, new)
    assert not ok and reasons == [
        "window policies differ: truncate30 (harness 0.26.0, 0.28.0) vs whole-timestamps "
        "(harness 0.30.0, 0.31.0rc1, 0.32.0rc1); re-grade one run under the other's policy "
        "(grade --window/--harness-version) or force the comparison"
    ]
    bare = {**base, "grader_id": "artifact:vllm-omni-seed-tts"}
    ok, _, warnings = comparability(bare, dict(bare))
    assert ok and any("window policy unknown" in w for w in warnings)
    ok, reasons, _ = comparability(bare, old)  # unknown pairs only with unknown
    assert not ok and "grader_id differs" in reasons[0]


def draw_run(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return rng.random(probs.size) < probs


def aa_probabilities(n: int = 1088) -> np.ndarray:
    """8 % broken on average with psi ≈ 6 %: a hard set that usually fails, the rest rarely."""
    probs = np.full(n, 0.0216)
    probs[: int(0.075 * n)] = 0.8
    return probs


def test_aa_pairs_rarely_regress_and_mostly_same() -> None:
    rng = np.random.default_rng(20261130)
    probs = aa_probabilities()
    p_small = regressed = same = 0
    for _ in range(200):
        base = from_flags(list(draw_run(probs, rng)))
        cand = from_flags(list(draw_run(probs, rng)))
        ev = evidence(base, cand)
        v = decide_night([ev], POLICY)[0]
        p_small += ev.p_regress < 0.01
        regressed += v.verdict == "REGRESSED"
        same += v.verdict == "SAME"
    assert p_small <= 5
    assert regressed <= 2
    assert same >= 150


def test_noise_calibration_recovers_psi() -> None:
    rng = np.random.default_rng(7)
    probs = aa_probabilities()
    runs = [from_flags(list(draw_run(probs, rng))) for _ in range(4)]
    cal = calibrate(runs, 0.5, alpha=0.01)
    expected_psi = float(np.mean(2 * probs * (1 - probs)))
    assert cal.psi == pytest.approx(expected_psi, abs=0.012)
    assert cal.mde == pytest.approx(mde(cal.psi, 1088, 0.01), rel=1e-9)
    # REFERENCE.md §4: psi 8 % -> about 2.7 points one-sided at alpha 0.01
    assert mde(0.08, 1088, 0.01) == pytest.approx(0.027, abs=0.001)


def test_unequal_run_groups_keep_size_near_alpha() -> None:
    rng = np.random.default_rng(11)
    probs = aa_probabilities(400)
    rejections = 0
    sims = 300
    for _ in range(sims):
        a = np.stack([draw_run(probs, rng) for _ in range(4)], axis=1).astype(np.int64)
        b = draw_run(probs, rng)[:, None].astype(np.int64)
        res = compare_groups(a, b)
        rejections += res.p_regress < 0.05
    assert 0.02 <= rejections / sims <= 0.09


def test_groups_detect_a_real_step_and_are_deterministic() -> None:
    rng = np.random.default_rng(3)
    probs = aa_probabilities()
    worse = np.minimum(probs * 1.8, 1.0)
    a = np.stack([draw_run(probs, rng) for _ in range(3)], axis=1).astype(np.int64)
    b = np.stack([draw_run(worse, rng) for _ in range(3)], axis=1).astype(np.int64)
    r1 = compare_groups(a, b)
    r2 = compare_groups(a, b)
    assert r1 == r2
    assert r1.p_regress < 0.001 and r1.delta_broken_rate > 0.03


def test_trend_finds_a_step_and_respects_known_breaks() -> None:
    days = [dt.date(2026, 10, 1) + dt.timedelta(days=i) for i in range(30)]
    rng = np.random.default_rng(5)
    values = [0.08 + rng.normal(0, 0.004) for _ in range(15)] + [
        0.14 + rng.normal(0, 0.004) for _ in range(15)
    ]
    values[5] = 0.2  # a single spike is not a change point (minimum segment 3)
    cps = change_points(days, values, min_segment=3)
    assert [c.nightly for c in cps] == [days[15]]
    assert cps[0].before < 0.1 < 0.13 < cps[0].after
    flat = [0.08 + rng.normal(0, 0.004) for _ in range(30)]
    known = change_points(days, flat, known_breaks=[days[10]])
    assert [(c.nightly, c.known_break) for c in known] == [(days[10], True)]


def test_noise_sees_runs_that_vary_more_than_their_clips() -> None:
    """Issue 45 (6): seeds of a server whose hard set breaks more on some runs than others
    (a run-level effect) are not independent draws; `noise` says so from ten A/A runs, and says
    nothing of the kind when only the clips vary."""
    rng = np.random.default_rng(11)
    probs = aa_probabilities()
    hard = probs == 0.8
    plain = [from_flags(list(draw_run(probs, rng))) for _ in range(10)]
    shaken = []
    for _ in range(10):
        run = probs.copy()
        run[hard] = np.clip(run[hard] + rng.normal(0.0, 0.15), 0.0, 1.0)
        shaken.append(from_flags(list(draw_run(run, rng))))
    quiet, noisy = calibrate(plain, 0.5, alpha=0.01), calibrate(shaken, 0.5, alpha=0.01)
    assert quiet.dispersion is not None and not quiet.overdispersed
    assert noisy.dispersion is not None and noisy.overdispersed and noisy.dispersion > 2
    assert calibrate(plain[:2], 0.5, alpha=0.01).dispersion is None  # two runs cannot tell


def test_two_regressed_paired_nights_confirm_only_pooled() -> None:
    """Issue 45: at 1,197 questions (ψ ≈ .17) one night is falsely REGRESSED nearly α of the
    time, and 'REGRESSED twice in a row' confirmed A/A noise at 1.1e-4 a night. Two such
    nights of 120:84 (Δ +3 points, p ≈ .007 each) pool to p ≈ 2e-4: not confirmed; a run-group
    night (no table) still confirms as the second REGRESSED night."""
    from omni_tasks.analysis.intervals import mcnemar_exact

    p_one, p_two = mcnemar_exact(120, 84)[0], mcnemar_exact(240, 168)[0]
    assert p_one < POLICY.alpha and POLICY.confirm_pool_p < p_two < 1e-3
    first = SeriesPoint(dt.date(2026, 11, 1), "REGRESSED", p_one, 120, 84, 1197)
    second = SeriesPoint(dt.date(2026, 11, 2), "REGRESSED", p_one, 120, 84, 1197)
    assert confirmations([first, second], POLICY) == [False, False]
    group = SeriesPoint(dt.date(2026, 11, 1), "REGRESSED", 0.001, 0, 0, 1197, paired=False)
    assert confirmations([group, second], POLICY) == [False, True]


def test_a_group_night_whose_seeds_vary_beyond_their_clips_is_widened() -> None:
    """Two seeds a side that break 200 and 50 of 1,000 clips (and 250 and 100): each side's
    runs differ by far more than clips breaking independently allow (φ ≈ 150), so the seeds
    are not independent draws and 350 against 250 broken must not read as an exact p ≈ 0."""
    flags = np.arange(1000)[:, None]
    base = np.hstack([flags < 200, flags < 50]).astype(np.int64)
    cand = np.hstack([flags < 250, flags < 100]).astype(np.int64)
    t = compare_groups(base, cand)
    assert t.dispersion is not None and t.dispersion > 100
    assert "widened" in t.method and t.p_regress > 0.01
    # Seeds that vary as their clips do are left alone: the same counts, spread over clips.
    rng = np.random.default_rng(5)
    even = compare_groups(rng.random((1000, 2)) < 0.125, rng.random((1000, 2)) < 0.175)
    assert even.dispersion is None and "widened" not in even.method
    assert even.p_regress < 1e-4


def test_phi_widens_a_p_on_students_t_when_phi_was_estimated() -> None:
    # z 4.2649 (one-sided p 1e-5) over √2 is 3.0157: on the normal p ≈ 1.28e-3; read on t
    # with 59 degrees of freedom (φ from 60 nightly totals) the tail is heavier, ≈ 1.9e-3.
    z = 4.264890793922825 / math.sqrt(2.0)
    assert abs(widened(1e-5, 2.0) - norm.sf(z)) < 1e-12
    assert abs(widened(1e-5, 2.0, 60) - student_t.sf(z, 59)) < 1e-12
    assert widened(1e-5, 2.0, 60) > 1.4 * widened(1e-5, 2.0)
    assert widened(1e-5, 1.0, 60) == 1e-5  # φ at its floor: nothing to widen
    # A night at Holm p 1e-8 confirms alone at φ 1.2 on the normal (≈ 1.5e-7 < 1e-5) and on
    # t with 59 degrees of freedom (≈ 1.7e-6); with 14 nights' totals (13: ≈ 9.8e-5) it does
    # not.
    night = SeriesPoint(dt.date(2026, 11, 1), "REGRESSED", 1e-8, 120, 20, 1088, phi=1.2)
    assert confirmations([night], POLICY) == [True]
    assert confirmations([dataclasses.replace(night, phi_nights=60)], POLICY) == [True]
    assert confirmations([dataclasses.replace(night, phi_nights=14)], POLICY) == [False]

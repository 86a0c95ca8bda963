"""The history path (analysis/history.py): the window's unbiased variance, the history z, and
`confirms` (one night's z, or the restart-free CUSUM over the excursion, each with Δ̂ ≥
min_effect). Every expectation is worked by hand in the comments."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest

from bench import clip_model_sim
from omni_tasks.analysis.history import HistoryStat, baseline_window, confirms, history_z
from omni_tasks.contracts.night import ItemHistory
from omni_tasks.gates.policy import load_policy

# One-night path at z ≥ 4.265 (one-sided p 1e-5); CUSUM k = 1, h = 5; floor 2 points.
POLICY = load_policy().model_copy(
    update={"history_p": 1e-5, "cusum_k": 1.0, "cusum_h": 5.0, "min_effect": 0.02}
)
D = [dt.date(2027, 1, d) for d in range(1, 5)]
# a broken on the first of three nights, b on the first two; both observed on all three
WINDOW = ItemHistory(
    ((D[0], frozenset("ab")), (D[1], frozenset("b")), (D[2], frozenset())), {"a": 3, "b": 3}
)


def nights(zs: list[float], deltas: list[float]) -> list[HistoryStat]:
    return [HistoryStat(1000, d, z, 1) for z, d in zip(zs, deltas, strict=True)]


def test_window_variance_is_unbiased_over_its_nights() -> None:
    # a broken on 1 of 4 nights (r .25), b on 2 (r .5): Σ r(1 − r) = .1875 + .25 = .4375,
    # times 4/3 for the four nights: .58333
    w = baseline_window(WINDOW, {"a": False, "b": False}, drift_p=1e-9)
    assert w.rates == {"a": 0.25, "b": 0.5}
    assert w.variance == pytest.approx(0.4375 * 4 / 3)


def test_history_z_against_the_window_mean() -> None:
    # the same window; the candidate breaks both: Δ̂ = (2 − .75) / 2 = .625;
    # sd = √(.58333 × (1 + 1/4)) / 2 = .42696; z = 1.4638
    w = baseline_window(WINDOW, {"a": False, "b": False}, drift_p=1e-9)
    stat = history_z([{"a": True, "b": True}], w)
    assert stat.delta == pytest.approx(0.625)
    assert stat.z == pytest.approx(0.625 / (math.sqrt(0.4375 * 4 / 3 * 1.25) / 2))


def test_one_night_confirms_at_history_p_with_the_floor() -> None:
    assert confirms(nights([4.3], [0.021]), POLICY) is not None  # 4.3 ≥ 4.265
    assert confirms(nights([4.2], [0.021]), POLICY) is None  # below, and CUSUM 3.2 < 5
    assert confirms(nights([9.0], [0.019]), POLICY) is None  # Δ̂ under 2 points


def test_cusum_confirms_when_it_reaches_h() -> None:
    # k = 1: S = 2, 4, 6; it reaches 5 on the third night, Δ̂ tonight 2.2 points
    assert confirms(nights([3, 3], [0.022, 0.022]), POLICY) is None
    why = confirms(nights([3, 3, 3], [0.022, 0.022, 0.022]), POLICY)
    assert why is not None and "6.0 ≥ 5" in why and "+2.20 points" in why


def test_cusum_pools_the_floor_over_the_excursion() -> None:
    # S = 2, 4, 6.5; tonight 1.9 points, but the last 3 nights pooled (3 + 1.5 + 1.9) / 3
    # = 2.133 ≥ 2
    why = confirms(nights([3, 3, 3.5], [0.03, 0.015, 0.019]), POLICY)
    assert why is not None and "+2.13 points" in why and "the last 3 nights" in why
    # the last 3 pooled: (2.5 + 1.5 + 1.9) / 3 = 1.967, last 2: 1.7, tonight: 1.9: none ≥ 2
    assert confirms(nights([3, 3, 3.5], [0.025, 0.015, 0.019]), POLICY) is None


def test_quiet_nights_before_the_excursion_are_not_pooled() -> None:
    # S = 0, 0, 2, 4, 6.5: the excursion is the last 3 nights (1.8, 1.8, 1.9 points: best
    # 1.9); all five pooled would give (5 + 0 + 1.8 + 1.8 + 1.9) / 5 = 2.1, which must not count
    zs, deltas = [0, 0, 3, 3, 3.5], [0.05, 0.0, 0.018, 0.018, 0.019]
    assert confirms(nights(zs, deltas), POLICY) is None


def test_quiet_nights_do_not_drag_the_cusum_below_zero() -> None:
    # ten nights at z −3 leave S at 0 (restart-free), then 3, 6 ≥ 5; a sum from the first
    # night (−30 + 8 − 12 k) would never get there
    zs, deltas = [-3.0] * 10 + [4, 4], [-0.01] * 10 + [0.021, 0.021]
    assert confirms(nights(zs, deltas), POLICY) is not None


def test_no_nights_confirm_nothing() -> None:
    assert confirms([], POLICY) is None


def test_the_benchs_vectorised_history_z_is_the_products() -> None:
    """bench/clip_model_sim.py computes every night's z in numpy; on a small series it must
    equal baseline_window + overdispersion + history_z night by night."""
    from omni_tasks.analysis.history import overdispersion

    policy = POLICY.model_copy(update={"history_nights": 5, "phi_nights": 14})
    rng = np.random.default_rng(3)
    p = np.linspace(0.02, 0.6, 40)
    base = rng.random((13 + 4, 40)) < p
    cand = rng.random((4, 40)) < p
    z, delta, _, phi, sd = clip_model_sim.history_evidence(base, cand, policy)
    names = [f"u{i}" for i in range(40)]
    day = [dt.date(2027, 1, 1) + dt.timedelta(d) for d in range(base.shape[0])]
    for t in range(4):
        row = 13 + t
        last = range(row - policy.history_nights, row)
        items = ItemHistory(
            tuple((day[j], frozenset(u for i, u in enumerate(names) if base[j, i])) for j in last),
            dict.fromkeys(names, len(last)),
        )
        tonight = {u: bool(base[row, i]) for i, u in enumerate(names)}
        first = baseline_window(items, tonight, drift_p=1e-12)
        noise = overdispersion(
            base[row - 13 : row + 1].sum(1).tolist(), first.variance, min_nights=14
        )
        window = baseline_window(items, tonight, drift_p=1e-12, phi=noise.phi)
        stat = history_z([{u: bool(cand[t, i]) for i, u in enumerate(names)}], window, noise.phi)
        assert phi[t] == pytest.approx(noise.phi)
        assert delta[t] == pytest.approx(stat.delta)
        assert z[t] == pytest.approx(stat.z)
        assert sd[t] == pytest.approx(stat.sd) and stat.sd > 0


def test_the_history_thresholds_are_decision_fields() -> None:
    # they confirm nights, so an edit is a new policy version; the pre-hash legacy version
    # (migration 0004's map) does not move, since it never had them
    shipped = load_policy()
    for field, value in (
        ("cusum_h", 9.0),
        ("cusum_k", 0.5),
        ("history_p", 1e-7),
        ("phi_nights", 30),
    ):
        edited = shipped.model_copy(update={field: value})
        assert edited.policy_version != shipped.policy_version, field
        assert edited.legacy_policy_version == shipped.legacy_policy_version, field

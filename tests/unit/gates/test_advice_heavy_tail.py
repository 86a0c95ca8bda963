"""Issue 45's model as read here: a mean-WER gate over a heavy-tailed clip model (12 % hard
clips that break half the time, 3 % that nearly always break, a broken clip's WER lognormal
half the time), written here and not by the advisor. The gate is set where the truth fails 8 %
of nights; the advisor's interval from twenty nights must hold it (the audit's own model gave
1.3 % [0, 4.1 %]; this one's does not reproduce that miss)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import numpy as np

from omni_tasks.gates.advice import BrokenValues, Night, advise
from omni_tasks.gates.table import Threshold, UpstreamGate

N = 1088
RATES = np.concatenate([np.full(131, 0.5), np.full(33, 0.97), np.full(N - 164, 0.005)])


AUDIT = (1.015, 1.05)  # (μ, σ) of the broken WER's lognormal, fitted to the audit's truth


def nights_of_wer(
    rng: np.random.Generator, nights: int, lognormal: tuple[float, float] = (0.0, 1.5)
) -> np.ndarray:
    """WER per clip (nights × clips), written here, not by the advisor."""
    shape = (nights, N)
    broken = rng.random(shape) < RATES
    heavy = rng.random(shape) < 0.5
    value = np.where(heavy, rng.lognormal(*lognormal, shape), rng.uniform(0.5, 1.0, shape))
    return np.where(broken, value, rng.exponential(0.02, shape))


def test_the_false_fail_interval_holds_a_heavy_tailed_truth() -> None:
    truth = np.concatenate(
        [nights_of_wer(np.random.default_rng(s), 2000).mean(axis=1) for s in range(10)]
    )
    threshold = float(np.quantile(truth, 0.92))  # the truth fails 8 % of nights
    _holds(threshold, float((truth > threshold).mean()), nights_of_wer)


def test_the_audits_gate_at_035_is_not_called_safe() -> None:
    """The audit's setting itself: `--threshold 0.35`, its unstated lognormal fitted to its
    stated truth (8.2 % false-fail at 0.35, 98th percentile 0.400; bench/bench_gate_advice.py).
    It gave 1.3 % [0, 4.1 %]; the interval must hold the truth."""
    truth = np.concatenate(
        [nights_of_wer(np.random.default_rng(s), 2000, AUDIT).mean(axis=1) for s in range(10)]
    )
    true_p = float((truth > 0.35).mean())
    assert 0.07 < true_p < 0.095  # the fit: the audit's 8.2 % within this many nights' error
    _holds(0.35, true_p, lambda rng, k: nights_of_wer(rng, k, AUDIT))


def _holds(threshold: float, true_p: float, model: Callable[..., np.ndarray]) -> None:
    history = model(np.random.default_rng(99), 20)
    nights = [
        Night(
            dt.date(2026, 11, 1) + dt.timedelta(days=i),
            "c",
            float(wer.mean()),
            {f"u{k}": float(x) for k, x in enumerate(wer)},
        )
        for i, wer in enumerate(history)
    ]
    gate = UpstreamGate("seed_tts_en", "m", "mean_wer", "<=", (Threshold(threshold),))
    a = advise(nights, gate, target=0.02, broken=lambda v: v > 0.5, draws=2000)
    low, high = a.p_fail_interval
    assert low <= true_p <= high, (a.p_fail, a.p_fail_interval, true_p)


def test_a_runaway_seen_on_one_clip_can_recur_on_any_clip_that_breaks() -> None:
    # Five clips break every night at WER 0.8; clip "b" ran away (WER 40) on 2 nights of 20
    # and is fine otherwise; four clips are always fine. Past a mean of 6 takes two runaways
    # on one night: per-item values never give that (only b has them). Pooled, each broken
    # draw is a runaway with q = 2/102, and two of the five always-broken clips draw one with
    # 1 - (1-q)^5 - 5q(1-q)^4 = 0.38 % (b's own broken nights add 0.02 %).
    nights = []
    for i in range(20):
        values = (
            {f"a{k}": 0.8 for k in range(5)}
            | {"b": 40.0 if i in (3, 7) else 0.0}
            | {f"f{k}": 0.0 for k in range(4)}
        )
        nights.append(
            Night(
                dt.date(2026, 11, 1) + dt.timedelta(days=i), "c", sum(values.values()) / 10, values
            )
        )
    gate = UpstreamGate("seed_tts_en", "m", "mean_wer", "<=", (Threshold(6.0),))
    q = 2 / 102
    expected = 1 - (1 - q) ** 5 - 5 * q * (1 - q) ** 4 + 0.1 * q * (1 - (1 - q) ** 5)
    a = advise(nights, gate, broken=lambda v: v > 0.5, draws=40_000)
    assert abs(a.p_fail - expected) < 0.0015, (a.p_fail, expected)


def test_the_runaway_tail_reaches_past_the_largest_runaway_seen() -> None:
    # 1,000 runaways past WER 1 from a Pareto tail of shape 0.5 (written here with numpy):
    # the fitted tail has that shape within 3 standard errors ((1 + ξ)/√n ≈ 0.05) and draws
    # values past the largest seen.
    rng = np.random.default_rng(5)
    runaways = 1.0 + 2.0 * (rng.pareto(2.0, 1000))  # Lomax(α 2, scale 2): ξ 0.5, σ 1
    fitted = BrokenValues.fit(np.concatenate([rng.uniform(0.5, 1.0, 1000), runaways]))
    assert abs(fitted.shape - 0.5) < 0.15 and abs(fitted.scale - 1.0) < 0.15
    assert fitted.tail_share == 0.5
    drawn = fitted.sample(np.random.default_rng(6), 200_000)
    assert (drawn > runaways.max()).mean() > 0
    assert abs((drawn > 1.0).mean() - 0.5) < 0.005


def test_runaways_that_do_not_vary_are_drawn_as_seen() -> None:
    # Forty runaways all at WER 2.0 (a length cap): no tail is fitted to them, so every draw
    # is a value that was seen, 2.0 in 40 of 140.
    fitted = BrokenValues.fit(np.concatenate([np.full(40, 2.0), np.full(100, 0.8)]))
    drawn = fitted.sample(np.random.default_rng(0), 50_000)
    assert set(np.unique(drawn)) == {0.8, 2.0}
    assert abs((drawn == 2.0).mean() - 40 / 140) < 0.01


def test_a_pool_of_runaways_only_draws_every_value_from_the_tail() -> None:
    # Every broken item a runaway (as in a night of length-cap failures that vary): there is
    # no body to draw from, and every draw is a runaway.
    runaways = 1.0 + np.random.default_rng(3).exponential(1.0, 60)
    drawn = BrokenValues.fit(runaways).sample(np.random.default_rng(4), 10_000)
    assert len(drawn) == 10_000 and (drawn > 1.0).all()

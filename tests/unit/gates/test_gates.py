"""Upstream's gates as data and the advisor's pure parts: a gate fails only when its figure
is strictly past the threshold of its date, a missing figure is no verdict, the table refuses
what it cannot use, and a summary-only series' advice holds a normal model's known truth."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from omni_tasks import benchmarks
from omni_tasks.gates.advice import Night, TooFewNights, advise, gate_history
from omni_tasks.gates.table import GateTableError, Threshold, UpstreamGate, load_table
from omni_tasks.gates.text import rounded_threshold
from omni_tasks.series import Series

D0 = dt.date(2026, 11, 1)
WER = UpstreamGate(
    "seed_tts_en",
    "m",
    "seed_tts_content_error_mean",
    "<=",
    (Threshold(0.5), Threshold(0.35, D0 + dt.timedelta(days=3))),
)


def test_a_gate_fails_strictly_past_the_threshold_of_its_date() -> None:
    assert WER.verdict(0.35) == "pass" and WER.verdict(0.3501) == "fail"
    assert WER.verdict(None) == "not_evaluated" and WER.verdict(math.nan) == "not_evaluated"
    assert WER.threshold_on(D0) == 0.5 and WER.threshold_on(D0 + dt.timedelta(days=3)) == 0.35
    acc = UpstreamGate("videomme", "m", "videomme_accuracy", ">=", (Threshold(0.68),))
    assert acc.verdict(0.68) == "pass" and acc.verdict(0.6799) == "fail"


def test_the_history_judges_each_night_by_its_own_threshold() -> None:
    figures = [0.4, 0.45, None, 0.4, 0.37, 0.36]  # passes 0.5, then fails 0.35 from night 3
    nights = [Night(D0 + dt.timedelta(days=i), "c", f) for i, f in enumerate(figures)]
    h = gate_history(nights, WER)
    assert (h.failing, h.not_evaluated, h.current_streak, h.longest_streak) == (3, 1, 3, 3)
    assert h.never_passed  # every night under 0.35 failed
    assert [t["threshold"] for t in h.thresholds] == [0.5, 0.35]


def test_the_shipped_table_names_known_figures_of_registered_benchmarks() -> None:
    table = load_table()
    assert {(g.benchmark, g.figure) for g in table} >= {
        ("seed_tts_en", "seed_tts_content_error_mean"),
        ("seed_tts_zh", "seed_tts_sim_mean"),
        ("daily_omni", "daily_omni_accuracy"),
        ("videomme", "videomme_accuracy"),
    }
    for g in table:
        bench = benchmarks.get(g.benchmark)
        assert g.figure in bench.figures or g.figure == "seed_tts_sim_mean"
        if not bench.summary_only_family:  # judge means: the advisor models nightly figures
            assert bench.figure_values(g.figure, []) == []  # the advisor can resample it
    minicpm = [
        g for g in table if g.model == "openbmb/MiniCPM-o-4_5" and g.benchmark == "seed_tts_zh"
    ]
    assert {(g.comparator, g.threshold) for g in minicpm} == {("<=", 0.0156), (">=", 0.689)}


def test_a_gate_table_that_cannot_be_used_is_refused_with_where(tmp_path: Path) -> None:
    bad = tmp_path / "gates.yaml"
    bad.write_text(
        "version: 1\ngates:\n  - {benchmark: b, model: m, figure: f, comparator: '<',"
        " history: [{threshold: 1}]}\n"
    )
    with pytest.raises(GateTableError, match=r"gates\[0\]: comparator"):
        load_table(bad)
    bad.write_text(
        "version: 1\ngates:\n  - {benchmark: b, model: m, figure: f, comparator: '<=',"
        " history: [{threshold: .nan}]}\n"
    )
    with pytest.raises(GateTableError, match="finite number"):
        load_table(bad)


def test_a_figure_a_benchmark_cannot_resample_is_an_error() -> None:
    with pytest.raises(ValueError, match="not a per-item mean"):
        benchmarks.get("daily_omni").figure_values("daily_omni_correct", [])


def test_summary_only_advice_holds_a_normal_models_truth() -> None:
    rng = np.random.default_rng(4)
    mu, sd, threshold = 0.30, 0.03, 0.35
    hits = 0
    for h in range(20):
        figures = rng.normal(mu, sd, 25)
        nights = [Night(D0 + dt.timedelta(days=i), None, float(f)) for i, f in enumerate(figures)]
        gate = UpstreamGate("seed_tts_en", "m", "x", "<=", (Threshold(threshold),))
        a = advise(nights, gate, seed=h, draws=4000)
        assert a.method.startswith("normal model") and a.items is None
        hits += a.p_fail_interval[0] <= norm.sf((threshold - mu) / sd) <= a.p_fail_interval[1]
    assert hits >= 16  # a 95 % interval, 20 histories


def test_too_few_nights_is_refused() -> None:
    nights = [Night(D0, None, 0.3), Night(D0, None, None)]
    with pytest.raises(TooFewNights, match="at least 3 nights"):
        advise(nights, WER)


def test_the_suggested_line_is_rounded_away_from_the_figure() -> None:
    assert rounded_threshold(0.27612, "<=") == pytest.approx(0.277)
    assert rounded_threshold(0.01561, "<=") == pytest.approx(0.0157)
    assert rounded_threshold(0.6849, ">=") == pytest.approx(0.684)


def test_a_series_config_replaces_the_tables_gates() -> None:
    from omni_tasks.gates.table import gates_of

    s = Series("seed_tts_en", "Qwen/Qwen3-Omni-30B-A3B-Instruct", "rocm-mi300")
    assert [g.threshold for g in gates_of(s)] == [0.35]
    assert gates_of(s, []) == []  # `upstream_gate: none`: the lane imports no threshold


def test_published_figures_name_their_unit_protocol_and_source(tmp_path: Path) -> None:
    from omni_tasks.gates.published import PublishedError, load_published

    table = load_published()
    assert all(p.unit and p.protocol and p.source for p in table)
    assert {p.comparable for p in table} <= {None, "videomme_accuracy"}
    bad = tmp_path / "published.yaml"
    bad.write_text(
        "version: 1\nfigures:\n  - {benchmark: b, model: m, value: .inf, unit: u,"
        " protocol: p, source: s, comparable: null}\n"
    )
    with pytest.raises(PublishedError, match="finite number"):
        load_published(bad)


def test_every_advice_carries_the_gate_as_tensorrt_llm_would_set_it_from_history() -> None:
    # σ is one item's spread over the history, n the items, the reference the median night:
    # θ = (z.95 + z.80)·σ·√(2/n) and the threshold the reference + z.95·σ·√(2/n) (a ceiling).
    rng = np.random.default_rng(3)
    values = rng.binomial(1, 0.1, size=(12, 400)).astype(float)  # 12 nights, 400 items
    nights = [
        Night(
            D0 + dt.timedelta(days=i), "c", float(v.mean()), {f"i{k}": x for k, x in enumerate(v)}
        )
        for i, v in enumerate(values)
    ]
    gate = UpstreamGate("seed_tts_en", "m", "mean_wer", "<=", (Threshold(0.2),))
    a = advise(nights, gate, target=0.05, draws=2000)
    d = a.design
    assert d is not None and d.threshold is not None and a.design_p_fail is not None
    sigma = float(values.std(ddof=1))
    assert d.n == 400 and d.sigma == pytest.approx(sigma)
    se = sigma * math.sqrt(2 / 400)
    assert d.theta == pytest.approx((norm.ppf(0.95) + norm.ppf(0.8)) * se)
    assert d.threshold == pytest.approx(a.median_figure + norm.ppf(0.95) * se)
    # The √2 counts the reference's own noise; a median of 12 nights has little, so the design
    # fails fewer nights than α: about P(Z > z.95·√2) = 1 % (Bernoulli items, normal enough).
    expected = norm.sf(norm.ppf(0.95) * math.sqrt(2))
    assert expected / 2.5 < a.design_p_fail < expected * 2.5

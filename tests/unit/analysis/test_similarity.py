"""Speaker similarity as a second gated metric: the paired sign test beyond a margin, and how it
joins the tail's verdict."""

from __future__ import annotations

import dataclasses

from omni_tasks.analysis.gate import Verdict
from omni_tasks.analysis.similarity import combine, sim_test
from tests.unit.analysis.clips import clip


def _with_sim(values: list[float | None]) -> list:  # type: ignore[type-arg]
    return [dataclasses.replace(clip(f"u{i}"), sim=v) for i, v in enumerate(values)]


SAME = Verdict("SAME", 0.6, 0.6, 0.03, 0.01, ["tail"])


def test_clips_within_the_margin_count_neither_way() -> None:
    base = _with_sim([0.70, 0.70, 0.70, 0.70, None])
    cand = _with_sim([0.69, 0.60, 0.80, float("nan"), 0.70])
    t = sim_test(base, cand, margin=0.02)
    assert (t.n_paired, t.n_down, t.n_up) == (3, 1, 1)  # nan and a missing side are unpaired
    assert t.mean_delta is not None and abs(t.mean_delta - (-0.01 - 0.10 + 0.10) / 3) < 1e-12
    assert t.p_down == 0.75  # one down, one up: P(X >= 1 | n=2, 1/2)


def test_a_fall_makes_the_verdict_regressed_and_a_rise_changes_nothing() -> None:
    base = _with_sim([0.75] * 20)
    fell = sim_test(base, _with_sim([0.70] * 12 + [0.75] * 8), margin=0.02)
    assert combine(SAME, fell, alpha=0.05).verdict == "REGRESSED"
    rose = sim_test(base, _with_sim([0.80] * 12 + [0.75] * 8), margin=0.02)
    assert combine(SAME, rose, alpha=0.05).verdict == "SAME"
    assert combine(SAME, rose, alpha=0.05).reasons[-1].startswith("speaker similarity")


def test_a_gated_sim_that_was_not_computed_is_never_a_pass() -> None:
    missing = sim_test(_with_sim([None] * 5), _with_sim([0.7] * 5), margin=0.02)
    out = combine(SAME, missing, alpha=0.05)
    assert out.verdict == "INFRA" and "never a pass" in out.reasons[-1]
    infra = Verdict("INFRA", None, None, None, None, ["no baseline"])
    assert combine(infra, missing, alpha=0.05) is infra

"""Clip accounting, failure modes and per-run statistics on hand-computed cases."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omni_tasks.analysis.accounting import count_of, is_broken
from omni_tasks.analysis.failure_modes import diagnose
from omni_tasks.analysis.run_stats import run_stats
from tests.unit.analysis.clips import clip


def test_status_table() -> None:
    assert count_of(clip("a", 0.2)) == "scored"
    assert count_of(clip("b", 0.0, synth="over_long")) == "scored"
    assert count_of(clip("c", 1.0, grade="empty_transcript")) == "scored"
    for s in ("no_audio", "timeout_partial"):
        assert count_of(clip("d", None, synth=s, grade=None)) == "failed"
    for s in ("request_failed", "timeout_no_output"):
        assert count_of(clip("e", None, synth=s, grade=None)) == "infra"
    assert count_of(clip("f", None, grade="grader_error")) == "infra"
    assert is_broken(clip("g", 0.0, synth="over_long"), 0.5)  # broken whatever its WER
    assert is_broken(clip("h", None, synth="no_audio", grade=None), 0.5)
    assert not is_broken(clip("i", None, synth="request_failed", grade=None), 0.5)


def test_hand_computed_run() -> None:
    clips = [
        clip("ok1", 0.0),
        clip("ok2", 0.25),
        clip("over", 7.0, hyp_words=60, question=True, thinker_wer=5.0),  # answered a question
        clip("garb", 0.8, hyp_words=8, thinker_wer=0.0),
        clip("trunc", 0.75, hyp_words=2, thinker_wer=0.0),
        clip("empty", 1.0, grade="empty_transcript", hyp_words=0),
        clip("fail", None, synth="no_audio", grade=None),
        clip("infra", None, synth="request_failed", grade=None),
    ]
    s = run_stats(clips, tau=0.5, n_expected=9)  # one clip never came back: infra too
    assert (s.n_scored, s.n_failed, s.n_infra, s.n_expected) == (6, 1, 2, 9)
    assert s.coverage == pytest.approx(7 / 9)
    assert s.mean_wer == pytest.approx((0 + 0.25 + 7 + 0.8 + 0.75 + 1) / 6)
    assert s.capped_mean_wer == pytest.approx((0 + 0.25 + 1 + 0.8 + 0.75 + 1 + 1) / 7)
    assert s.n_broken == 5 and s.tail_fraction == pytest.approx(5 / 7)
    assert s.n_runaway == 1
    modes = s.failure_modes
    assert modes["over_generation"].clips == 1
    assert modes["garbled"].clips == 1
    assert modes["truncated"].clips == 2  # 2/8 words and the empty transcript
    assert modes["no_output"].clips == 1
    total = 0 + 0.25 + 7 + 0.8 + 0.75 + 1 + 1
    assert modes["over_generation"].error_share == pytest.approx(7 / total)
    assert s.origins == {"thinker": 1, "talker": 2, "unknown": 2}
    assert s.answered_clips == 1
    assert s.questions.n_scored == 1 and s.statements.n_scored == 5
    at_one = run_stats(clips, tau=1.0)
    assert at_one.n_broken == 2  # WER 7 and the failed clip; WER 1.0 is not > 1


def test_origin_and_flags() -> None:
    d = diagnose(clip("x", 3.0, hyp_words=30, thinker_wer=0.05, question=True, leak=True), 0.5)
    assert d is not None
    assert (d.mode, d.origin, d.task_leak, d.answered) == ("over_generation", "talker", True, True)
    assert diagnose(clip("y", 0.2), 0.5) is None


clip_strategy = st.builds(
    clip,
    st.text(min_size=1, max_size=5),
    st.one_of(st.none(), st.floats(0, 50)),
    synth=st.sampled_from(
        ["ok", "over_long", "no_audio", "timeout_partial", "timeout_no_output", "request_failed"]
    ),
    grade=st.sampled_from([None, "graded", "empty_transcript", "grader_error"]),
    hyp_words=st.integers(0, 100),
)


@given(st.lists(clip_strategy, max_size=40), st.floats(0.05, 2.0), st.integers(0, 10))
def test_counts_sum_and_capped_figures_bounded(clips, tau, extra) -> None:  # type: ignore[no-untyped-def]
    s = run_stats(clips, tau, n_expected=len(clips) + extra)
    assert s.n_scored + s.n_failed + s.n_infra == s.n_expected == len(clips) + extra
    if s.capped_mean_wer is not None:
        assert 0 <= s.capped_mean_wer <= 1
        assert 0 <= s.tail_fraction <= 1
    assert sum(m.clips for m in s.failure_modes.values()) == s.n_broken

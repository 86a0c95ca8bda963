"""A clip cut at our audio cap is not what the harness heard: the harness-style figures leave
it out and count it, and the figure mean agrees with the summary."""

from __future__ import annotations

from omni_tasks import benchmarks
from omni_tasks.analysis.official import official_summary
from omni_tasks.records import ClipRecord


def test_a_capped_clip_is_counted_not_averaged() -> None:
    clips = [
        ClipRecord("u0", "a b", "ok", "graded", 0.0),
        ClipRecord("u1", "a b", "ok", "graded", 0.5),
        ClipRecord("u2", "a b", "over_long", "graded", 20.43),  # 60 s of an 80 s runaway
    ]
    summary = official_summary(clips)
    assert summary["seed_tts_content_evaluated"] == 2
    assert summary["seed_tts_content_error_mean"] == 0.25
    assert summary["seed_tts_audio_capped"] == 1
    values = benchmarks.get("seed_tts_en").figure_values("seed_tts_content_error_mean", clips)
    assert values == [0.0, 0.5, None]

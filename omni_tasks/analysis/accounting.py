"""Clip accounting (DESIGN.md status table): every clip lands in exactly one count."""

from __future__ import annotations

from typing import Literal

from omni_tasks.records import ClipRecord

Count = Literal["scored", "failed", "infra"]

_AUDIO = {"ok", "over_long"}
_FAILED = {"no_audio", "timeout_partial"}  # the model misbehaved: broken, nothing gradable
_SCORED_GRADES = {"graded", "empty_transcript"}


def count_of(clip: ClipRecord) -> Count:
    if clip.synth_status in _FAILED:
        return "failed"
    if clip.synth_status in _AUDIO and clip.grade_status in _SCORED_GRADES:
        return "scored"
    # request_failed, timeout_no_output, grader_error, or not graded: transport/server/grader.
    return "infra"


def error_of(clip: ClipRecord, kind: Count | None = None) -> float:
    """Uncapped WER of a scored clip; an empty transcript is WER 1; failed clips count 1.
    A multiple-choice item's error is 1 when its answer is wrong, else 0. `kind`: the clip's
    count_of, when the caller has it already."""
    if (kind or count_of(clip)) == "failed":
        return 1.0
    if clip.incorrect is not None:
        return float(clip.incorrect)
    if clip.grade_status == "empty_transcript":
        return 1.0 if clip.wer is None else clip.wer
    return float(clip.wer or 0.0)


def is_wer_scored(clip: ClipRecord) -> bool:
    """Scored by WER (seed-TTS), not by a right/wrong answer (multiple choice)."""
    return clip.incorrect is None


def is_broken(clip: ClipRecord, tau: float) -> bool:
    """Broken at threshold tau: failed, ran past the audio cap, or WER > tau. A multiple-choice
    item is broken when its answer is wrong, whatever tau. (The baseline's per-item history
    reads the same rule in SQL: night_baseline_items.sql.)"""
    if clip.synth_status in _FAILED:
        return True
    if clip.synth_status not in _AUDIO or clip.grade_status not in _SCORED_GRADES:
        return False  # infra: says nothing about the model
    if clip.incorrect is not None:
        return clip.incorrect
    return clip.synth_status == "over_long" or error_of(clip, "scored") > tau

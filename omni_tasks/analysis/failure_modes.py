"""Failure modes, flags and origin of broken clips, derived for a given tau."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from omni_tasks.analysis.accounting import count_of, is_broken
from omni_tasks.records import ClipRecord

Mode = Literal["over_generation", "garbled", "truncated", "no_output"]
Origin = Literal["thinker", "talker", "unknown"]
MODES: tuple[Mode, ...] = ("over_generation", "garbled", "truncated", "no_output")
ORIGINS: tuple[Origin, ...] = ("thinker", "talker", "unknown")

OVER_GENERATION_RATIO = 2.0
TRUNCATED_RATIO = 0.5
THINKER_WER_THRESHOLD = 0.1


@dataclass(frozen=True)
class Diagnosis:
    mode: Mode
    origin: Origin
    task_leak: bool
    is_question: bool
    answered: bool


def failure_mode(clip: ClipRecord) -> Mode:
    """over_generation if hyp/ref words >= 2, truncated if <= 0.5, else garbled.
    A clip that ran past the audio cap is over-generation; one with no output is no_output."""
    if count_of(clip) == "failed":
        return "no_output"
    if clip.synth_status == "over_long":
        return "over_generation"
    if not clip.ref_words:
        return "garbled"
    ratio = (clip.hyp_words or 0) / clip.ref_words
    if ratio >= OVER_GENERATION_RATIO:
        return "over_generation"
    if ratio <= TRUNCATED_RATIO:
        return "truncated"
    return "garbled"


def origin(clip: ClipRecord) -> Origin:
    """thinker when the thinker text itself is wrong (WER > 0.1), talker when it was right."""
    if clip.thinker_wer is None:
        return "unknown"
    return "thinker" if clip.thinker_wer > THINKER_WER_THRESHOLD else "talker"


def diagnose(clip: ClipRecord, tau: float) -> Diagnosis | None:
    """None for clips that are not broken at tau."""
    if not is_broken(clip, tau):
        return None
    mode = failure_mode(clip)
    return Diagnosis(
        mode=mode,
        origin=origin(clip),
        task_leak=clip.task_leak,
        is_question=clip.is_question,
        answered=mode == "over_generation" and clip.is_question,
    )

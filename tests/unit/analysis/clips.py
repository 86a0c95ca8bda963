"""Builders of clip records for the statistics tests."""

from __future__ import annotations

from omni_tasks.records import ClipRecord


def clip(
    utt: str,
    wer: float | None = 0.0,
    *,
    synth: str = "ok",
    grade: str | None = "graded",
    ref_words: int = 8,
    hyp_words: int | None = None,
    thinker_wer: float | None = None,
    question: bool = False,
    leak: bool = False,
) -> ClipRecord:
    return ClipRecord(
        utt_id=utt,
        reference_text=f"reference {utt}",
        synth_status=synth,
        grade_status=grade,
        wer=wer,
        ref_words=ref_words,
        hyp_words=ref_words if hyp_words is None else hyp_words,
        hypothesis=f"heard {utt}",
        thinker_wer=thinker_wer,
        is_question=question,
        task_leak=leak,
    )


def from_flags(broken: list[bool], prefix: str = "u") -> list[ClipRecord]:
    return [
        clip(f"{prefix}{i}", 2.0 if b else 0.0, hyp_words=24 if b else None)
        for i, b in enumerate(broken)
    ]

"""The reference harness's own summary (vLLM-Omni `compute_seed_tts_wer_metrics`), recomputed
from clip records by its rules, so a run's official figures can be checked against an
artifact's and shown beside ours.

Upstream's mean and median cover only clips with a WER: every failure is left out, and so is
`empty_asr` (a silent or noise clip). Our capped mean and tail fraction count those as broken
instead (docs/users/reading-output.md says why the two means differ). Counts: `request_failed`
(ours: request_failed and timeouts), `no_pcm` (no usable audio), `asr_failed` (empty_audio,
asr_exception, empty_asr, wer_compute_failed: ours empty_transcript and grader_error).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from omni_tasks.contracts import JsonObject
from omni_tasks.records import ClipRecord

FIGURES = (
    "seed_tts_content_evaluated",
    "seed_tts_content_error_mean",
    "seed_tts_content_error_median",
    "seed_tts_request_failed",
    "seed_tts_no_pcm",
    "seed_tts_asr_failed",
)


FAILED_REQUEST = ("request_failed", "timeout_no_output", "timeout_partial")


def official_summary(clips: Sequence[ClipRecord]) -> JsonObject:
    # One outcome per clip, as upstream counts it: a request that failed is a failed request
    # even when audio arrived before it broke off (and our grading transcribed that audio).
    # A clip cut at our audio cap is not what the harness heard (it reads to the end): left
    # out of the harness figures and counted as `seed_tts_audio_capped` (ours, not upstream's).
    errs = [
        c.wer
        for c in clips
        if c.grade_status == "graded"
        and c.wer is not None
        and c.synth_status not in FAILED_REQUEST
        and c.synth_status != "over_long"
    ]
    request_failed = no_pcm = asr_failed = 0
    for c in clips:
        if c.synth_status in FAILED_REQUEST:
            request_failed += 1
        elif c.synth_status == "no_audio":
            if (c.synth_detail or "").startswith("empty_audio"):
                asr_failed += 1
            else:
                no_pcm += 1
        elif c.grade_status in ("empty_transcript", "grader_error"):
            asr_failed += 1
    return {
        "seed_tts_content_evaluated": len(errs),
        # statistics.fmean, as upstream: exactly rounded (fsum), so the order does not matter.
        "seed_tts_content_error_mean": _fmean(errs) if errs else None,
        "seed_tts_content_error_median": statistics.median(errs) if errs else None,
        "seed_tts_request_failed": request_failed,
        "seed_tts_no_pcm": no_pcm,
        "seed_tts_asr_failed": asr_failed,
        "seed_tts_audio_capped": sum(c.synth_status == "over_long" for c in clips),
    }


def _fmean(values: list[float]) -> float:
    try:
        return statistics.fmean(values)
    except OverflowError:  # WERs near the float limit (refused on import): still no crash
        return finite_mean(values)


def finite_mean(values: list[float]) -> float:
    """A mean that cannot overflow for any finite inputs (each term divided first)."""
    n = len(values)
    return math.fsum(v / n for v in values)


def disagreements(
    reported: JsonObject, recomputed: JsonObject, figures: Sequence[str] = FIGURES
) -> list[str]:
    """The artifact's own figures that its items do not reproduce, named with both values."""
    return [
        f"{key}: artifact {reported[key]!r}, items give {recomputed[key]!r}"
        for key in figures
        if key in reported and reported[key] != recomputed[key]
    ]

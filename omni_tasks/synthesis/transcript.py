"""Transcript-mode grading: the simulator sends, with each clip, the words its audio holds, so a
run is graded without an ASR model (the statistics', DAGs' and fault tests' fast path). The
words are cut to what the reference harness's 30 s window would hear."""

from __future__ import annotations

from omni_tasks.grading.asr import WINDOW_SAMPLES
from omni_tasks.grading.grade import grade_transcript
from omni_tasks.grading.wer import NORMALIZER_VERSION
from omni_tasks.records import ClipAudio, ClipGrade, Grader
from omni_tasks.synthesis import protocol
from omni_tasks.synthesis.client import ClipResult

TRANSCRIPT_GRADER = Grader(
    f"simulator-transcript/truncate30/{NORMALIZER_VERSION}", {"backend": "simulator-transcript"}
)


def transcript_grades(
    results: list[ClipResult], clips: list[ClipAudio], system_prompt: str | None, lang: str
) -> list[ClipGrade]:
    words_in_window = int(WINDOW_SAMPLES / 16_000 / protocol.SECONDS_PER_WORD)
    return [
        grade_transcript(c, " ".join(r.heard.split()[:words_in_window]), system_prompt, lang)
        for r, c in zip(results, clips, strict=True)
        if r.heard is not None and r.status in ("ok", "over_long")
    ]

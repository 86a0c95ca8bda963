"""Grade stored audio into a grading: transcribe (batched), score with seed-tts-eval, store.

A grading belongs to a run and a grader id; re-grading with another grader adds a grading and
never a run. Grading the same run with the same grader again returns the stored grading.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from omni_tasks.audio import read_audio
from omni_tasks.grading import flags
from omni_tasks.grading.asr import LoadedGrader
from omni_tasks.grading.wer import score
from omni_tasks.progress import progress_bar
from omni_tasks.records import ClipAudio, ClipGrade, Grader
from omni_tasks.store import runs
from omni_tasks.store.queries import sql

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GradingOutcome:
    run_key: str
    grading_id: int
    grader_id: str
    n_graded: int
    n_empty: int
    n_errors: int
    created: bool


def grade_transcript(
    clip: ClipAudio, hypothesis: str, system_prompt: str | None, lang: str = "en"
) -> ClipGrade:
    """Score one transcript against the clip's reference (and the thinker text, if any)."""
    question = flags.is_question(clip.reference_text)
    try:
        thinker_wer = (
            score(clip.reference_text, clip.thinker_text, lang).wer if clip.thinker_text else None
        )
        result = score(clip.reference_text, hypothesis, lang)
    except ValueError as exc:
        return ClipGrade(clip.utt_id, "grader_error", hypothesis=hypothesis, is_question=question,
                         error_detail=f"unscorable reference: {exc}")  # fmt: skip
    return ClipGrade(
        clip.utt_id,
        "graded" if hypothesis.strip() else "empty_transcript",
        hypothesis=hypothesis,
        wer=result.wer,
        thinker_wer=thinker_wer,
        task_leak=flags.task_leak(clip.reference_text, hypothesis, system_prompt),
        is_question=question,
        **result.grade_fields(),  # type: ignore[arg-type]
    )


def _error(clip: ClipAudio, detail: str) -> ClipGrade:
    return ClipGrade(
        clip.utt_id,
        "grader_error",
        is_question=flags.is_question(clip.reference_text),
        error_detail=detail[:500],
    )


def grade_clips(
    grader: LoadedGrader,
    clips: Sequence[ClipAudio],
    system_prompt: str | None,
    *,
    on_progress: Callable[[int], None] | None = None,
) -> list[ClipGrade]:
    """Grades for every clip that has audio; clips without audio get none (synthesis failed).

    Clips are decoded in batches of the spec's batch size; a batch that fails is retried clip by
    clip so one bad file costs one `grader_error`, not the batch.
    """
    audible = [c for c in clips if c.audio_uri]
    grades: list[ClipGrade] = []
    size = grader.spec.batch_size
    for start in range(0, len(audible), size):
        batch = audible[start : start + size]
        loaded: list[tuple[ClipAudio, np.ndarray]] = []
        for clip in batch:
            try:
                loaded.append((clip, read_audio(str(clip.audio_uri))))
            except (OSError, ValueError) as exc:
                grades.append(_error(clip, f"audio unreadable: {exc}"))
        grades.extend(_transcribe(grader, loaded, system_prompt))
        if on_progress:
            on_progress(len(batch))
    return grades


def _transcribe(
    grader: LoadedGrader, loaded: list[tuple[ClipAudio, np.ndarray]], system_prompt: str | None
) -> list[ClipGrade]:
    if not loaded:
        return []
    try:
        texts = grader.backend.transcribe([a for _, a in loaded])
    except Exception as exc:  # an ASR failure must become rows, not a lost run
        if len(loaded) == 1:
            log.warning("ASR failed on %s: %s", loaded[0][0].utt_id, exc)
            return [_error(loaded[0][0], f"asr failed: {type(exc).__name__}: {exc}")]
        return [g for item in loaded for g in _transcribe(grader, [item], system_prompt)]
    return [grade_transcript(c, t, system_prompt) for (c, _), t in zip(loaded, texts, strict=True)]


def grade_run(
    conn: psycopg.Connection[Any],
    run_key: str,
    grader: LoadedGrader,
    *,
    replace: bool = False,
    show_progress: bool = True,
) -> GradingOutcome:
    """Grade a stored run's audio with `grader` into its own grading (idempotent per grader)."""
    run = runs.get_run(conn, run_key)
    existing = runs.grading_id_of(conn, run["run_id"], grader.grader_id)
    if existing is not None and not replace:
        counts = runs.grade_counts(conn, existing)
        return GradingOutcome(run_key, existing, grader.grader_id, *counts, created=False)
    clips = [
        ClipAudio(**r) for r in conn.execute(sql("clip_audio_of_run"), {"run_id": run["run_id"]})
    ]
    with progress_bar(show_progress) as bar:
        task = bar.add_task(f"grading {run_key}", total=sum(1 for c in clips if c.audio_uri))
        grades = grade_clips(
            grader, clips, run["system_prompt"], on_progress=lambda n: bar.advance(task, n)
        )
    with conn.transaction():
        if existing is not None:
            conn.execute("DELETE FROM omni.grading WHERE grading_id = %s", (existing,))
        grading_id = runs.insert_grading(
            conn, run["run_id"], Grader(grader.grader_id, grader.description()), grades
        )
    n_graded = sum(g.grade_status == "graded" for g in grades)
    n_empty = sum(g.grade_status == "empty_transcript" for g in grades)
    return GradingOutcome(
        run_key, grading_id, grader.grader_id, n_graded, n_empty, len(grades) - n_graded - n_empty,
        created=True,
    )  # fmt: skip

"""Grade stored audio into a grading: transcribe (batched), score with seed-tts-eval, store.

A grading belongs to a run and a grader id; re-grading with another grader adds a grading and
never a run. Grading the same run with the same grader again returns the stored grading.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from omni_tasks.evidence.audio import read_audio
from omni_tasks.grading import flags
from omni_tasks.grading.asr import LoadedGrader
from omni_tasks.grading.wer import score
from omni_tasks.progress import progress_bar
from omni_tasks.records import ClipAudio, ClipGrade, Grader
from omni_tasks.store import runs

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
        return ClipGrade(
            clip.utt_id,
            "grader_error",
            hypothesis=hypothesis,
            is_question=question,
            error_detail=f"unscorable reference: {exc}",
        )
    return result.onto(
        ClipGrade(
            clip.utt_id,
            "graded" if hypothesis.strip() else "empty_transcript",
            hypothesis=hypothesis,
            wer=result.wer,
            thinker_wer=thinker_wer,
            task_leak=flags.task_leak(clip.reference_text, hypothesis, system_prompt),
            is_question=question,
        )
    )


def _error(clip: ClipAudio, detail: str) -> ClipGrade:
    return ClipGrade(
        clip.utt_id,
        "grader_error",
        is_question=flags.is_question(clip.reference_text),
        error_detail=detail[:500],
    )


def block_of(clip: ClipAudio, size: int) -> int:
    """The fixed batch a clip belongs to: its index in the run over the batch size. Batches
    never depend on arrival order or on which neighbours have audio, so a grader id gives the
    same transcripts sequential or pipelined (batch composition can change a transcript)."""
    return clip.ordinal // size


def grade_batch(
    grader: LoadedGrader, batch: Sequence[ClipAudio], system_prompt: str | None
) -> list[ClipGrade]:
    """Grades of one batch's clips with audio; an unreadable file is that clip's grader_error."""
    grades: list[ClipGrade] = []
    loaded: list[tuple[ClipAudio, np.ndarray]] = []
    for clip in batch:
        if not clip.audio_uri:
            continue
        try:
            loaded.append((clip, read_audio(str(clip.audio_uri))))
        except (OSError, ValueError) as exc:
            grades.append(_error(clip, f"audio unreadable: {exc}"))
    return grades + _transcribe(grader, loaded, system_prompt)


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


def pending_blocks(
    clips: Sequence[ClipAudio], size: int, graded: set[str]
) -> list[list[ClipAudio]]:
    """The fixed batches with audio still to grade; a batch's grades are stored together, so
    a batch is either all graded or not at all."""
    blocks: dict[int, list[ClipAudio]] = {}
    for clip in clips:
        if clip.audio_uri:
            blocks.setdefault(block_of(clip, size), []).append(clip)
    return [blocks[b] for b in sorted(blocks) if not any(c.utt_id in graded for c in blocks[b])]


def grade_run(
    conn: psycopg.Connection[Any],
    run_key: str,
    grader: LoadedGrader,
    *,
    replace: bool = False,
    show_progress: bool = True,
) -> GradingOutcome:
    """Grade a stored run's audio with `grader` into its own grading (idempotent per grader).

    Each batch's grades are committed as they are made and the grading is `running` until the
    last one, so a crash loses at most one batch and a re-run grades only what is missing;
    statistics read complete gradings only."""
    run = runs.get_run(conn, run_key)
    existing = runs.grading_of(conn, run.run_id, grader.grader_id)
    if existing is not None and existing[1] == "complete" and not replace:
        counts = runs.grade_counts(conn, existing[0])
        return GradingOutcome(run_key, existing[0], grader.grader_id, *counts, created=False)
    if existing is not None and replace:
        runs.delete_grading(conn, existing[0])
    clips = runs.stored_clips(conn, run.run_id)
    described = Grader(grader.grader_id, grader.description())
    grading_id, _ = runs.open_grading(conn, run.run_id, described)
    conn.commit()
    todo = pending_blocks(clips, grader.spec.batch_size, runs.graded_utts(conn, grading_id))
    with progress_bar(show_progress) as bar:
        task = bar.add_task(f"grading {run_key}", total=sum(len(b) for b in todo))
        for block in todo:
            graded = grade_batch(grader, block, run.system_prompt)
            runs.copy_clip_grades(conn, grading_id, graded)
            conn.commit()
            errors = sum(g.grade_status == "grader_error" for g in graded)
            bar.advance(task, len(block), failed=errors)
    runs.finish_grading(conn, grading_id)
    conn.commit()
    counts = runs.grade_counts(conn, grading_id)
    return GradingOutcome(run_key, grading_id, grader.grader_id, *counts, created=True)

"""Grade while synthesizing: clips flow from the synthesis client to the grader as they complete.

    synthesis (asyncio, N requests in flight) ─ audio file, clip row ─▶ bounded queue
        ─▶ grader thread: fixed batches (grading.grade.block_of), transcribed as each fills
        ─▶ grades back to the one DB writer, committed batch by batch

Synthesis waits on grading only when the queue is full. Every finished clip is stored before
its grade (audio first, grade after) and each batch's grades are committed together, so a
crash in either half leaves the run `running`: the re-run (the same run key) synthesizes only
the clips not stored and grades only the batches not graded. The run gets its final status and
content hash, and the grading becomes `complete`, only after the last clip; statistics read
complete gradings only. Batches are fixed by clip index, so for one grader id the transcripts do
not depend on arrival order: pipelined and sequential runs store the same rows.
"""

from __future__ import annotations

import asyncio
import dataclasses
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from omni_tasks.config import get_settings
from omni_tasks.dataset import Utterance
from omni_tasks.evidence.audio import STORE_RATE, write_audio
from omni_tasks.grading.asr import LoadedGrader
from omni_tasks.grading.grade import block_of, grade_batch, pending_blocks
from omni_tasks.records import INFRA_STATUSES, ClipAudio, ClipGrade, Grader, RunSpec, RunStatus
from omni_tasks.store import runs
from omni_tasks.synthesis.client import ClientConfig, ClipResult, synthesize_all
from omni_tasks.trust.names import path_component

QUEUE_CLIPS = 64  # clips waiting for the grader before synthesis waits (about 4 batches)


def clip_audio(run_key: str, ordinal: int, r: ClipResult) -> ClipAudio:
    """The stored form of one synthesis result; its audio file is written first."""
    uri = None
    if r.audio is not None and len(r.audio):
        folder = f"{get_settings().audio_root_url}/{path_component(run_key)}"
        uri = f"{folder}/{path_component(f'{ordinal:05d}_{r.utt.utt_id}')}.wav"
        write_audio(uri, r.audio, STORE_RATE)
    return ClipAudio(
        r.utt.utt_id,
        ordinal,
        r.utt.target_text,
        r.status,
        audio_uri=uri,
        audio_seconds=round(r.audio_seconds, 3),
        latency_s=None if r.latency_s is None else round(r.latency_s, 3),
        thinker_text=r.thinker_text or None,
        error_detail=r.detail,
    )


def run_status(clips: Sequence[ClipAudio]) -> RunStatus:
    infra = sum(c.synth_status in INFRA_STATUSES for c in clips)
    if infra == len(clips):
        return "failed"
    return "partial" if infra else "complete"


class BatchGrader(threading.Thread):
    """The grader half: takes clips in any order, transcribes each fixed batch once all of its
    clips have arrived, and hands the grades back (the caller's thread writes them)."""

    def __init__(
        self, grader: LoadedGrader, n_clips: int, system_prompt: str | None, queue_clips: int
    ) -> None:
        super().__init__(name="omni-grader", daemon=True)
        self.grader, self.system_prompt = grader, system_prompt
        self.size = grader.spec.batch_size
        self.inbox: queue.Queue[tuple[ClipAudio, bool] | None] = queue.Queue(queue_clips)
        self.outbox: queue.Queue[list[ClipGrade]] = queue.Queue()
        self.expected = {
            b: min(self.size, n_clips - b * self.size) for b in range(-(-n_clips // self.size))
        }
        self.error: BaseException | None = None
        self.abandoned = threading.Event()  # the run stopped: grade nothing more

    def offer(self, clip: ClipAudio, graded: bool) -> None:
        """A stored clip (blocks while the queue is full); `graded`: its batch is stored."""
        self.inbox.put((clip, graded))

    def close(self) -> None:
        self.inbox.put(None)

    def run(self) -> None:
        arrived: dict[int, list[ClipAudio]] = {}
        done: set[int] = set()
        # After an error or abandon, clips are still taken (synthesis keeps storing its audio)
        # but no longer graded.
        while (item := self.inbox.get()) is not None:
            if self.abandoned.is_set():
                continue
            clip, graded = item
            b = block_of(clip, self.size)
            if graded:
                done.add(b)
            arrived.setdefault(b, []).append(clip)
            if len(arrived[b]) < self.expected[b]:
                continue
            block = sorted(arrived.pop(b), key=lambda c: c.ordinal)
            if b in done or not any(c.audio_uri for c in block):
                continue
            try:
                self.outbox.put(grade_batch(self.grader, block, self.system_prompt))
            except BaseException as exc:  # the grader died: the caller stops and raises it
                self.error = exc
                self.abandoned.set()


def run_pipelined(
    conn: psycopg.Connection[Any],
    run_key: str,
    spec: RunSpec,
    utterances: Sequence[Utterance],
    cfg: ClientConfig,
    grader: LoadedGrader,
    *,
    on_clip: Callable[[str], None] | None = None,
) -> None:
    """Synthesize and grade `utterances` into run `run_key` at once (see the module doc)."""
    run_id, _ = runs.start_run(conn, run_key, spec)
    stored = {c.utt_id: c for c in runs.stored_clips(conn, run_id)}
    grading_id, _ = runs.open_grading(conn, run_id, Grader(grader.grader_id, grader.description()))
    conn.commit()
    graded = runs.graded_utts(conn, grading_id)
    worker = BatchGrader(grader, len(utterances), spec.system_prompt, QUEUE_CLIPS)
    worker.start()

    def write_grades() -> None:
        while True:
            try:
                grades = worker.outbox.get_nowait()
            except queue.Empty:
                return
            runs.copy_clip_grades(conn, grading_id, grades)
            conn.commit()
            if on_clip:
                on_clip("graded")

    for clip in stored.values():
        worker.offer(clip, graded=clip.utt_id in graded)
    ordinal = {u.utt_id: i for i, u in enumerate(utterances)}

    def on_done(result: ClipResult) -> None:
        clip = clip_audio(run_key, ordinal[result.utt.utt_id], result)
        runs.insert_clip_audio(conn, run_id, clip)
        conn.commit()  # audio first: the clip is stored before it is graded
        if on_clip:
            on_clip("synthesized")
        worker.offer(clip, graded=False)
        write_grades()

    todo = [u for u in utterances if u.utt_id not in stored]
    try:
        if todo:
            asyncio.run(synthesize_all(todo, cfg, on_done=on_done))
    except BaseException:
        # A failure or a timeout: stop at once. What is stored stays; the re-run does the rest.
        worker.abandoned.set()
        raise
    finally:
        worker.close()
        while worker.is_alive() or not worker.outbox.empty():
            worker.join(timeout=0.05)
            write_grades()
    if worker.error is not None:
        raise worker.error
    clips = runs.stored_clips(conn, run_id)
    final = dataclasses.replace(spec, status=run_status(clips))
    missing = pending_blocks(clips, grader.spec.batch_size, runs.graded_utts(conn, grading_id))
    if missing:  # cannot happen unless rows were removed underneath; never mark it complete
        raise RuntimeError(f"run {run_key}: {len(missing)} batches were not graded")
    runs.finish_run(conn, run_id, final, clips)
    runs.finish_grading(conn, grading_id)
    conn.commit()

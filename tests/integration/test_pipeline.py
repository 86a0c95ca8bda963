"""Grade while synthesizing: the same rows as synthesize-then-grade, whatever order clips
arrive in, and statistics never read a grading before it is complete."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random

import numpy as np
import pytest

from omni_tasks.benchmarks.seed_tts.pipeline import BatchGrader, clip_audio, run_status
from omni_tasks.benchmarks.seed_tts.run import (
    BenchRequest,
    run_benchmark,
    run_spec,
    synthesize,
    utterances_of,
)
from omni_tasks.dataset import load_dataset
from omni_tasks.grading.asr import GraderSpec, LoadedGrader
from omni_tasks.grading.backends import load_grader
from omni_tasks.grading.grade import grade_run
from omni_tasks.records import ClipAudio
from omni_tasks.store import runs
from tests.factories import grade_rows

NIGHT = dt.date(2026, 11, 26)


@pytest.fixture(scope="module")
def tiny_en() -> LoadedGrader:
    return load_grader(GraderSpec(batch_size=4))


def test_pipelined_rows_equal_sequential_rows_under_one_grader_id(db, tiny_en) -> None:
    req = BenchRequest(
        target="simulator:main",
        branch="main",
        commit="c0ffee",
        seed=5,
        limit=11,
        nightly=NIGHT,
        concurrency=6,
        run_key="pipelined",
    )
    piped = run_benchmark(db, req, tiny_en, show_progress=False)

    # The sequential path: synthesize everything, store it, then grade the stored run.
    seq = dataclasses.replace(req, run_key="sequential")
    ds = load_dataset(seq.dataset)
    results = synthesize(seq, ds, show_progress=False)
    clips = [clip_audio("sequential", i, r) for i, r in enumerate(results)]
    spec = dataclasses.replace(
        run_spec(seq, ds, len(utterances_of(seq, ds))), status=run_status(clips)
    )
    runs.save_run(db, spec, clips, run_key="sequential")
    graded = grade_run(db, "sequential", tiny_en, show_progress=False)

    assert piped.grader_id == graded.grader_id
    assert len(grade_rows(db, "pipelined")) == 11
    assert grade_rows(db, "pipelined") == grade_rows(db, "sequential")
    statuses = db.execute("SELECT DISTINCT status FROM omni.grading").fetchall()
    assert statuses == [{"status": "complete"}]


class RecordingBackend:
    """Records the batches a grader is asked to transcribe (their clips' lengths)."""

    runtime = None

    def __init__(self) -> None:
        self.batches: list[tuple[int, ...]] = []

    def features(self, audio: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def transcribe(self, clips) -> list[str]:  # type: ignore[no-untyped-def]
        self.batches.append(tuple(len(c) for c in clips))
        return ["hello"] * len(clips)


def test_batches_do_not_depend_on_arrival_order(tmp_path, monkeypatch, request) -> None:
    from omni_tasks.config import get_settings
    from omni_tasks.evidence.audio import write_audio

    monkeypatch.setenv("OMNI_AUDIO_ROOT", str(tmp_path))  # audio is read only under its root
    get_settings.cache_clear()
    request.addfinalizer(get_settings.cache_clear)

    clips = []
    for i in range(10):
        uri = tmp_path / f"{i}.wav"
        if i != 5:  # one clip without audio: its batch still forms at the same boundaries
            write_audio(str(uri), np.zeros(1600 * (i + 1), np.float32), 16_000)
        clips.append(
            ClipAudio(
                f"u{i}",
                i,
                "Hello.",
                "ok" if i != 5 else "no_audio",
                audio_uri=str(uri) if i != 5 else None,
            )
        )
    seen = []
    for order in (list(range(10)), list(range(9, -1, -1)), random.Random(1).sample(clips, 10)):
        backend = RecordingBackend()
        worker = BatchGrader(LoadedGrader(GraderSpec(batch_size=4), "rec", backend), 10, None, 3)
        worker.start()
        for clip in order:
            worker.offer(clips[clip] if isinstance(clip, int) else clip, graded=False)
        worker.close()
        worker.join()
        assert worker.error is None
        seen.append(sorted(backend.batches))
    assert seen[0] == seen[1] == seen[2]
    assert sorted(len(b) for b in seen[0]) == [2, 3, 4]  # u0-3, u4/u6/u7 (u5 silent), u8-9

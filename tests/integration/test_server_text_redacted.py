"""Server text is stored redacted (issue 64): a thinker transcript or an error detail that
echoes a secret the worker holds, or a token's shape, is stored with [redacted] in its place,
by a whole run's save and by a pipelined run's clip-by-clip insert; the run's content hash is
the hash of what was stored."""

from __future__ import annotations

import datetime as dt

import pytest

from omni_tasks.config import get_settings
from omni_tasks.records import ClipAudio, ClipGrade, Grader, RunSpec
from omni_tasks.store.content import content_of
from omni_tasks.store.runs import (
    insert_clip_audio,
    redacted_clips,
    save_run,
    start_run,
    stored_clips,
)

HELD = "held-service-secret-4242"
SHAPE = "ghp_" + "a" * 36


def _spec() -> RunSpec:
    return RunSpec("seed_tts_en", dt.date(2026, 11, 28), "main", "manual", "complete", 2)


def _clips() -> list[ClipAudio]:
    return [
        ClipAudio("u0", 0, "hello", "ok", thinker_text=f"my token is {HELD}, hello"),
        ClipAudio("u1", 1, "world", "request_failed", error_detail=f"500: auth {SHAPE} denied"),
    ]


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SOME_SERVICE_TOKEN", HELD)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _stored_text(db) -> str:
    rows = db.execute(
        "SELECT coalesce(a.thinker_text, '') || ' ' || coalesce(a.error_detail, '') || ' ' || "
        "coalesce(g.error_detail, '') AS t FROM omni.clip_audio a LEFT JOIN omni.clip_grade g "
        "USING (utt_id)"
    ).fetchall()
    return " ".join(r["t"] for r in rows)


def test_a_saved_run_stores_server_text_redacted(db, held) -> None:
    grades = [
        ClipGrade("u0", "graded", wer=0.0),
        ClipGrade("u1", "grader_error", error_detail=f"server said {HELD}"),
    ]
    result = save_run(db, _spec(), _clips(), (Grader("g1"), grades), run_key="r-redact")
    db.commit()
    text = _stored_text(db)
    assert HELD not in text and SHAPE not in text, text
    assert text.count("[redacted]") == 3 and "hello" in text and "denied" in text
    stored = stored_clips(db, result.run_id)
    assert [c.thinker_text for c in stored] == ["my token is [redacted], hello", None]
    # The content hash is of the stored (redacted) rows: saving the same run again is unchanged.
    digest = content_of(_spec(), stored, None).digest
    assert content_of(_spec(), redacted_clips(_clips()), None).digest == digest
    again = save_run(db, _spec(), _clips(), (Grader("g1"), grades), run_key="r-redact")
    assert again.outcome == "unchanged"


def test_a_pipelined_clip_is_stored_redacted(db, held) -> None:
    run_id, _ = start_run(db, "r-pipelined", _spec())
    for clip in _clips():
        insert_clip_audio(db, run_id, clip)
    db.commit()
    text = _stored_text(db)
    assert HELD not in text and SHAPE not in text and text.count("[redacted]") == 2, text

"""Grading stored audio: a new grading per grader, never a new run; statuses per clip."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omni_tasks.cli import app
from omni_tasks.evidence.audio import STORE_RATE, write_audio
from omni_tasks.grading.asr import GraderSpec
from omni_tasks.grading.backends import load_grader
from omni_tasks.grading.grade import grade_run
from omni_tasks.records import ClipAudio, RunSpec
from omni_tasks.store.runs import save_run
from omni_tasks.voice import speak

SAID = {
    "u0": "The quick brown fox jumps over the lazy dog.",
    "u1": "Could you tell me where the nearest train station is?",
    "u2": "Our team finished the project two weeks ahead of schedule.",
}


def _store_run(db, tmp_path: Path) -> str:
    clips = []
    for i, (utt, text) in enumerate(SAID.items()):
        uri = str(tmp_path / "omni-home" / "audio" / f"{utt}.wav")
        write_audio(uri, speak(text), STORE_RATE)
        clips.append(ClipAudio(utt, i, text, "ok", audio_uri=uri, thinker_text=text))
    broken = tmp_path / "omni-home" / "audio" / "u3.wav"
    broken.write_bytes(b"RIFF not really a wav")
    clips.append(ClipAudio("u3", 3, "Bring an umbrella today.", "ok", audio_uri=str(broken)))
    clips.append(ClipAudio("u4", 4, "Nothing came back.", "request_failed", error_detail="500"))
    spec = RunSpec("seed_tts_en", dt.date(2026, 11, 28), "main", "manual", "complete", len(clips))
    return save_run(db, spec, clips).run_key


@pytest.fixture(scope="module")
def tiny_en():
    return load_grader(GraderSpec())


def test_grade_run_stores_one_grading_with_statuses(db, tmp_path: Path, tiny_en) -> None:
    key = _store_run(db, tmp_path)
    outcome = grade_run(db, key, tiny_en, show_progress=False)
    assert outcome.created and (outcome.n_graded, outcome.n_errors) == (3, 1)
    rows = {
        r["utt_id"]: r
        for r in db.execute(
            "SELECT * FROM omni.clip_grade WHERE grading_id = %s", (outcome.grading_id,)
        )
    }
    assert set(rows) == {"u0", "u1", "u2", "u3"}  # no audio, no grade: synthesis failed
    assert rows["u3"]["grade_status"] == "grader_error"
    assert "audio unreadable" in rows["u3"]["error_detail"]
    for utt in SAID:
        assert rows[utt]["wer"] < 0.2 and rows[utt]["thinker_wer"] == 0.0
        assert rows[utt]["ref_words"] == len(SAID[utt].split())
    assert rows["u1"]["is_question"] and not rows["u0"]["is_question"]
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 1


def test_regrading_adds_a_grading_and_is_idempotent_per_grader(db, tmp_path: Path, tiny_en) -> None:
    key = _store_run(db, tmp_path)
    first = grade_run(db, key, tiny_en, show_progress=False)
    again = grade_run(db, key, tiny_en, show_progress=False)
    assert (again.created, again.grading_id) == (False, first.grading_id)
    longform = load_grader(GraderSpec(window="longform"))
    other = grade_run(db, key, longform, show_progress=False)
    assert other.created and other.grading_id != first.grading_id
    n = db.execute("SELECT count(*) AS n FROM omni.grading").fetchone()["n"]
    assert (n, db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"]) == (2, 1)


def test_cli_grade_then_compare_regrade_with_original(db, tmp_path: Path, tiny_en) -> None:
    key = _store_run(db, tmp_path)
    runner = CliRunner()
    first = runner.invoke(app, ["grade", key, "--json"])
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, ["grade", key, "--window", "longform", "--json"])
    assert second.exit_code == 0, second.output
    a, b = json.loads(first.output)["grader_id"], json.loads(second.output)["grader_id"]
    out = runner.invoke(
        app,
        [
            "compare",
            "--baseline",
            key,
            "--candidate",
            key,
            "--baseline-grader",
            a,
            "--candidate-grader",
            b,
            "--force",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["comparable"] is False
    assert (
        "window policies differ: truncate30 (harness 0.26.0, 0.28.0) vs longform (no harness"
        in (json.dumps(result["warnings"] + result["reasons"]))
    )


def test_cli_grade_errors_are_clear(db) -> None:
    runner = CliRunner()
    out = runner.invoke(app, ["grade", "no-such-run"])
    assert out.exit_code == 1 and "no-such-run" in out.output
    out = runner.invoke(app, ["grade", "x", "--backend", "whisper.cpp"])
    assert out.exit_code == 1 and "unknown ASR backend" in out.output

"""Fault injection on nightly steps against local targets: each fault ends in a defined state
(partial/failed → INFRA, never REGRESSED), nothing stored is lost, and re-running the failed
step converges to the rows of a clean run."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import threading
from pathlib import Path

import pytest
from starlette.responses import JSONResponse

from omni_tasks.benchmarks.seed_tts.run import BenchRequest, run_benchmark
from omni_tasks.config import get_settings
from omni_tasks.contracts.night import NightQuestion
from omni_tasks.gates.policy import load_policy
from omni_tasks.jobs.decide import decide_series
from omni_tasks.jobs.nightly import refresh_outputs
from omni_tasks.series import Series
from omni_tasks.synthesis.simulator import SimulatorConfig, create_app, serve_in_thread
from tests.factories import grade_rows

NIGHT = dt.date(2026, 11, 25)


class Switchable:
    """The simulator (transcript mode) behind a switch: while `fault` is set, requests after
    the first `healthy_first` get what a dead or stalled server gives."""

    def __init__(self, fault: str | None, healthy_first: int = 0) -> None:
        self.inner = create_app(SimulatorConfig("main", transcript=True))
        self.fault = fault
        self.healthy_first = healthy_first
        self.seen = 0
        self.lock = threading.Lock()

    async def __call__(self, scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http" and scope["path"] == "/v1/chat/completions":
            with self.lock:
                self.seen += 1
                faulty = self.fault is not None and self.seen > self.healthy_first
            if faulty and self.fault == "dead":
                await JSONResponse({"error": "engine died"}, status_code=500)(scope, receive, send)
                return
            if faulty and self.fault == "stall":
                import asyncio

                await asyncio.sleep(5)  # past the client's deadline
        await self.inner(scope, receive, send)


def _req(url: str, branch: str, **kw) -> BenchRequest:  # type: ignore[no-untyped-def]
    args = {"commit": "c0ffee", "seed": 7, "limit": 40, "nightly": NIGHT, "transcript_mode": True}
    return BenchRequest(target=url, branch=branch, **{**args, **kw})


def _content(db, key: str) -> str:  # type: ignore[no-untyped-def]
    """Clip content of a run (what was said, heard, scored), not its ids or timings."""
    rows = db.execute(
        "SELECT a.utt_id, a.synth_status, a.thinker_text, g.grade_status, g.hypothesis, g.wer "
        "FROM omni.clip_audio a JOIN omni.run r USING (run_id) "
        "JOIN omni.grading gr ON gr.run_id = r.run_id "
        "LEFT JOIN omni.clip_grade g ON g.grading_id = gr.grading_id AND g.utt_id = a.utt_id "
        "WHERE r.run_key = %s ORDER BY a.utt_id",
        (key,),
    ).fetchall()
    return hashlib.sha256(json.dumps(rows, default=str).encode()).hexdigest()


def _gate(db) -> list[str]:  # type: ignore[no-untyped-def]
    out = decide_series(
        db, NightQuestion(Series("seed_tts_en"), NIGHT, "main", ("main", "rebase")), load_policy()
    )
    return [d.verdict for d in out.decisions]


def test_server_killed_mid_run_is_infra_and_the_rerun_converges(db) -> None:
    server = Switchable("dead", healthy_first=10)
    clean = Switchable(None)
    with serve_in_thread(server) as url, serve_in_thread(clean) as clean_url:
        first = run_benchmark(db, _req(url, "main"), None, show_progress=False)
        assert first.run_status == "partial" and first.statuses["request_failed"] == 30
        run_benchmark(db, _req(clean_url, "rebase"), None, show_progress=False)
        assert _gate(db) == ["INFRA"]  # coverage: never REGRESSED because a server died
        server.fault = None  # restarted; the failed task is retried
        again = run_benchmark(db, _req(url, "main"), None, show_progress=False)
        reference = run_benchmark(db, _req(clean_url, "reference"), None, show_progress=False)
    assert again.synthesized and again.run_status == "complete" and again.run_key == first.run_key
    assert _content(db, again.run_key) == _content(db, reference.run_key)
    assert _gate(db) != ["INFRA"]  # the night decides normally now


def test_stalled_server_times_out_into_a_failed_run(db) -> None:
    server = Switchable("stall")
    with serve_in_thread(server) as url:
        out = run_benchmark(
            db, _req(url, "main", timeout_s=1.0, limit=None), None, show_progress=False
        )
        run_benchmark(db, _req(url, "rebase", timeout_s=1.0), None, show_progress=False)
    assert out.run_status == "failed" and set(out.statuses) == {"timeout_no_output"}
    assert _gate(db) == ["INFRA"]


def test_full_audio_storage_fails_cleanly_and_the_rerun_converges(
    db, tmp_path, monkeypatch
) -> None:
    full = tmp_path / "full"
    full.write_text("not a directory: writes under it fail like a full disk")
    monkeypatch.setenv("OMNI_AUDIO_ROOT", str(full))
    get_settings.cache_clear()
    req = BenchRequest(target="simulator:main", branch="main", seed=3, limit=3, nightly=NIGHT)
    from omni_tasks.grading.asr import GraderSpec
    from omni_tasks.grading.backends import load_grader

    grader = load_grader(GraderSpec())
    with pytest.raises(OSError):
        run_benchmark(db, req, grader, show_progress=False)
    db.rollback()
    # Nothing half-finished is read: the run stays `running` with no clips, its grading is not
    # complete, so statistics and the gate never see it; the re-run resumes it.
    (run,) = db.execute("SELECT run_id, status FROM omni.run").fetchall()
    assert run["status"] == "running"
    assert db.execute("SELECT count(*) AS n FROM omni.clip_audio").fetchone()["n"] == 0
    assert db.execute("SELECT status FROM omni.grading").fetchone()["status"] == "running"
    monkeypatch.setenv("OMNI_AUDIO_ROOT", str(tmp_path / "audio"))
    get_settings.cache_clear()
    out = run_benchmark(db, req, grader, show_progress=False)
    assert out.run_status == "complete" and out.statuses == {"ok": 3}


def test_grafana_down_still_writes_the_report(db, tmp_path, monkeypatch) -> None:
    from tests.factories import REGRESS, store_night

    night = store_night(db, tmp_path, 0, REGRESS)
    monkeypatch.setenv("OMNI_GRAFANA_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("OMNI_GRAFANA_TOKEN", "glsa_x")
    get_settings.cache_clear()
    with pytest.raises(Exception, match=r"(?i)connect|refused|grafana"):
        refresh_outputs(db, [Series("seed_tts_en")], night, 0.5)
    home = Path(__import__("os").environ["OMNI_HOME"])
    assert (home / "reports" / f"seed_tts_en_{night}.html").is_file()


def test_results_db_down_is_a_clear_error_and_a_rerun_converges(tmp_path) -> None:
    """A private Postgres (never the shared one) stopped and restarted around a run."""
    import pgserver

    from omni_tasks.store.db import DatabaseError, connect
    from omni_tasks.store.migrate import migrate

    srv = pgserver.get_server(tmp_path / "pg", cleanup_mode="stop")
    dsn = srv.get_uri()
    with connect(dsn) as conn:
        migrate(conn)
    srv.cleanup()  # the database goes down
    with pytest.raises(DatabaseError, match="cannot connect"):
        connect(dsn)
    srv = pgserver.get_server(tmp_path / "pg", cleanup_mode="stop")  # restarted
    with connect(srv.get_uri()) as conn:
        req = BenchRequest(
            target="simulator:main",
            branch="main",
            seed=1,
            limit=20,
            nightly=NIGHT,
            transcript_mode=True,
        )
        out = run_benchmark(conn, req, None, show_progress=False)
        conn.commit()
        assert out.run_status == "complete"
        again = run_benchmark(conn, req, None, show_progress=False)
        assert not again.synthesized and again.run_key == out.run_key
    srv.cleanup()


class GraderDied(BaseException):
    """What a dying grader raises (CUDA error, OOM kill of its thread): not a per-clip error."""


class DyingBackend:
    """The real transcriber, dying after `calls` batches; counts the clips it transcribed."""

    def __init__(self, real, calls: int | None) -> None:  # type: ignore[no-untyped-def]
        self.real, self.calls, self.clips = real, calls, 0
        self.runtime = real.runtime

    def features(self, audio):  # type: ignore[no-untyped-def]
        return self.real.features(audio)

    def transcribe(self, clips):  # type: ignore[no-untyped-def]
        if self.calls is not None:
            if self.calls == 0:
                raise GraderDied("grader died mid-run")
            self.calls -= 1
        self.clips += len(clips)
        return self.real.transcribe(clips)


def test_grader_dies_mid_run_and_the_rerun_grades_only_the_missing_clips(db) -> None:
    """Pipelined run (synthesis and grading at once): the grader dies after two batches. Every
    clip's audio is stored, the grades of the two batches are kept, the run and its grading stay
    `running` (never read by statistics); the re-run synthesizes nothing, grades only the
    missing batches, and the rows equal a clean run's."""
    from dataclasses import replace

    from omni_tasks.grading.asr import GraderSpec, LoadedGrader
    from omni_tasks.grading.backends import load_grader

    real = load_grader(GraderSpec(batch_size=4))
    dying = DyingBackend(real.backend, calls=2)
    req = BenchRequest(
        target="simulator:main",
        branch="main",
        commit="c0ffee",
        seed=3,
        limit=14,
        nightly=NIGHT,
        concurrency=4,
    )
    with pytest.raises(GraderDied):
        run_benchmark(
            db, req, LoadedGrader(real.spec, real.model_label, dying), show_progress=False
        )
    db.rollback()
    run = db.execute("SELECT run_key, status FROM omni.run").fetchone()
    assert run["status"] == "running"
    assert db.execute("SELECT count(*) AS n FROM omni.clip_audio").fetchone()["n"] == 14
    assert db.execute("SELECT status FROM omni.grading").fetchone()["status"] == "running"
    kept = grade_rows(db, run["run_key"])
    assert len(kept) == 8  # two batches of four
    from omni_tasks.jobs.statistics import compute_stats_for_key
    from omni_tasks.store.runs import RunNotFoundError

    with pytest.raises(RunNotFoundError, match="is not complete"):  # statistics never read it
        compute_stats_for_key(db, run["run_key"], 0.5, load_policy())
    db.rollback()

    healthy = DyingBackend(real.backend, calls=None)
    again = run_benchmark(
        db, req, LoadedGrader(real.spec, real.model_label, healthy), show_progress=False
    )
    assert again.run_key == run["run_key"] and again.run_status == "complete"
    assert healthy.clips == 6  # only the missing batches: 4 + 2
    final = grade_rows(db, again.run_key)
    assert set(kept) <= set(final) and len(final) == 14
    assert db.execute("SELECT status FROM omni.grading").fetchone()["status"] == "complete"

    clean = run_benchmark(db, replace(req, run_key="clean-reference"), real, show_progress=False)
    assert [r[1:] for r in grade_rows(db, clean.run_key)] == [r[1:] for r in final]
    assert _content(db, clean.run_key) == _content(db, again.run_key)

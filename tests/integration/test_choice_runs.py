"""Daily-Omni and Video-MME run here, end to end, on their shipped demo sets: the simulator
listens to each question's audio (or looks at its frames) and answers at its profile's error
rate; `bench --benchmark ID` stores every question; `gate` gives the McNemar counts the
stored answers give when counted by hand; a server that is down leaves every question stored
as a failed request; a damaged Video-MME root is refused with its file and row named."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from omni_tasks.cli import app

runner = CliRunner()
NIGHT = "2026-11-30"


def ask(
    profile: str, branch: str, *extra: str, benchmark: str = "daily_omni", code: int = 0
) -> str:
    """The run key `bench` prints (a run whose every item failed is stored, and exits 1)."""
    out = runner.invoke(
        app,
        [
            "bench",
            "--benchmark",
            benchmark,
            "--target",
            profile,
            "--branch",
            branch,
            "--commit",
            f"{branch}01",
            "--nightly",
            NIGHT,
            *extra,
        ],
    )
    assert out.exit_code == code, out.output
    return out.stdout.strip().splitlines()[-1]


def answers(db, run_key: str) -> dict[str, bool]:
    rows = db.execute(
        "SELECT a.utt_id, a.reference_text, a.thinker_text FROM omni.clip_audio a "
        "JOIN omni.run r USING (run_id) WHERE r.run_key = %s AND a.synth_status = 'ok'",
        (run_key,),
    ).fetchall()
    return {r["utt_id"]: r["thinker_text"].strip() == r["reference_text"] for r in rows}


def test_the_demo_set_regresses_on_the_rebase_profile_by_counted_answers(db, tmp_path) -> None:
    clean = ask("simulator:clean", "clean")
    assert all(answers(db, clean).values())  # it hears every tone and beep right
    base, cand = ask("simulator:main", "main"), ask("simulator:rebase", "rebase")
    b, c = answers(db, base), answers(db, cand)
    assert len(b) == len(c) == 48
    regressed = sum(b[q] and not c[q] for q in b)
    improved = sum(c[q] and not b[q] for q in b)
    assert regressed > improved

    out = runner.invoke(
        app,
        ["gate", "--benchmark", "daily_omni", "--nightly", NIGHT, "--baseline", "main", "--json"],
    )
    assert out.exit_code == 0, out.output
    by_branch = {d["candidate_branch"]: d for d in json.loads(out.stdout)}
    rebase = by_branch["rebase"]
    assert (rebase["n_paired"], rebase["regressed"], rebase["improved"]) == (
        48,
        regressed,
        improved,
    )
    assert rebase["verdict"] == "REGRESSED"
    assert by_branch["clean"]["improved"] == 48 - sum(b.values())
    page = tmp_path / "report.html"  # the report's multiple-choice parts (accuracy) render
    out = runner.invoke(
        app, ["report", "--benchmark", "daily_omni", "--nightly", NIGHT, "--out", str(page)]
    )
    assert out.exit_code == 0, out.output
    assert "<th>accuracy</th>" in page.read_text()

    stats = json.loads(runner.invoke(app, ["stats", cand, "--json"]).stdout)
    assert stats["accuracy"] == pytest.approx(sum(c.values()) / 48) and stats["mean_wer"] is None
    assert set(stats["breakdown"]["task"]) == {"Pitch", "Counting"}


def test_a_server_that_is_down_stores_every_question_as_a_failed_request(db) -> None:
    key = ask("http://127.0.0.1:9", "down", "--limit", "5", "--timeout", "2", code=1)
    rows = db.execute(
        "SELECT synth_status, error_detail FROM omni.clip_audio a JOIN omni.run r "
        "USING (run_id) WHERE r.run_key = %s",
        (key,),
    ).fetchall()
    assert len(rows) == 5 and {r["synth_status"] for r in rows} == {"request_failed"}
    assert all("ConnectError" in r["error_detail"] for r in rows)
    assert db.execute("SELECT status FROM omni.run WHERE run_key = %s", (key,)).fetchone() == {
        "status": "failed"
    }


def test_videomme_is_asked_with_its_frames_and_judged_by_the_official_rule(db) -> None:
    clean = ask("simulator:clean", "clean", benchmark="videomme")
    got = answers(db, clean)  # it sees every colour, count and order right in the frames
    assert len(got) == 5 and all(got.values())
    row = db.execute(
        "SELECT r.benchmark, r.prompt_fingerprint, r.system_prompt, g.grader_id FROM omni.run r "
        "JOIN omni.grading g USING (run_id) WHERE r.run_key = %s",
        (clean,),
    ).fetchone()
    assert row["benchmark"] == "videomme" and row["system_prompt"] is None  # upstream sends none
    assert row["grader_id"] == "choice:videomme-official"
    stats = json.loads(runner.invoke(app, ["stats", clean, "--json"]).stdout)
    assert stats["accuracy"] == 1.0
    assert set(stats["breakdown"]["duration"]) == {"short", "medium"}
    assert set(stats["breakdown"]["task"]) == {
        "Object Recognition",
        "Counting Problem",
        "Temporal Perception",
    }
    shown = runner.invoke(app, ["runs", "show", clean])
    assert "--benchmark videomme" in shown.output and "--backend" not in shown.output


def bench_videomme(dataset: str):  # type: ignore[no-untyped-def]
    return runner.invoke(
        app,
        [
            "bench",
            "--benchmark",
            "videomme",
            "--target",
            "simulator:clean",
            "--branch",
            "main",
            "--dataset",
            dataset,
        ],
    )


def test_a_damaged_videomme_root_names_its_file_and_row(db, tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "vmme"
    (root / "videomme").mkdir(parents=True)
    (root / "video").mkdir()
    row = {
        "videoID": "v1",
        "question_id": "v1-1",
        "question": "Which?",
        "options": ["A. x", "B. y"],
        "answer": "A",
    }
    pq.write_table(pa.Table.from_pylist([row]), root / "videomme/test-00000-of-00001.parquet")
    out = bench_videomme(str(root))
    assert out.exit_code == 1
    assert "test-00000-of-00001.parquet: row 0: no video 'v1'" in " ".join(out.output.split())
    bad = [row, {**row, "question_id": "../../etc", "videoID": "v1"}]
    pq.write_table(pa.Table.from_pylist(bad), root / "videomme/test-00000-of-00001.parquet")
    (root / "video" / "v1.mp4").write_bytes(b"not a video")
    out = bench_videomme(str(root))
    assert out.exit_code == 1 and "row 1: question_id" in " ".join(out.output.split())
    pq.write_table(pa.Table.from_pylist([row]), root / "videomme/test-00000-of-00001.parquet")
    key = ask("simulator:clean", "main", "--dataset", str(root), benchmark="videomme", code=1)
    stored = db.execute(  # a video that cannot be decoded: its question is a stored failure
        "SELECT a.synth_status, a.error_detail, r.status FROM omni.clip_audio a "
        "JOIN omni.run r USING (run_id) WHERE r.run_key = %s",
        (key,),
    ).fetchone()
    assert stored["synth_status"] == "request_failed" and stored["status"] == "failed"
    assert stored["error_detail"].startswith("media: ")
    out = bench_videomme(str(tmp_path))
    assert out.exit_code == 2 and "videomme/test-00000-of-00001.parquet" in out.output


def test_the_report_sets_published_figures_beside_only_a_same_protocol_series(db) -> None:
    """MiniCPM-o 4.5's published Video-MME 70.4 is measured the way the nightly measures it
    (OmniEvalKit's recipe): the report puts tonight's accuracy beside it. Qwen3-Omni's
    published seed-TTS WER is another protocol: shown as a reference only."""
    import datetime as dt

    from omni_tasks import benchmarks
    from omni_tasks.benchmarks.seed_tts.run import BenchRequest
    from omni_tasks.reports.html import nightly_report
    from omni_tasks.series import Series

    night = dt.date(2026, 11, 30)
    minicpm = "openbmb/MiniCPM-o-4_5"
    req = BenchRequest(
        target="simulator:clean", branch="main", benchmark="videomme", model=minicpm, nightly=night
    )
    benchmarks.get("videomme").run(db, req, {})
    page = nightly_report(db, Series("videomme", minicpm), night, 0.5)
    assert "<h2>Published figures</h2>" in page and "70.4 % accuracy" in page
    assert "same protocol (videomme_accuracy): main 100.0" in page
    qwen = nightly_report(db, Series("seed_tts_en"), night, 0.5)
    assert "1.39 % WER" in qwen and "different protocol: a reference" in qwen


def test_a_run_key_asked_again_with_other_inputs_is_refused_naming_them(db) -> None:
    """Run identity is one rule for every family: the same key with another target or subset
    exits 1 naming each difference, and the stored run is kept."""
    key = ask("simulator:main", "main", "--limit", "6")
    before = db.execute("SELECT run_id, content_hash FROM omni.run").fetchall()
    for extra, named in (
        (["--target", "simulator:rebase", "--limit", "6"], "target: stored 'simulator:main'"),
        (["--target", "simulator:main", "--limit", "7"], "dataset and subset"),
    ):
        args = ["bench", "--benchmark", "daily_omni", "--branch", "main", "--commit", "main01"]
        out = runner.invoke(app, [*args, "--nightly", NIGHT, *extra])
        assert out.exit_code == 1, out.output
        assert f"run {key} is stored with other inputs" in out.output and named in out.output
    assert db.execute("SELECT run_id, content_hash FROM omni.run").fetchall() == before
    assert ask("simulator:main", "main", "--limit", "6") == key  # the same inputs: converges

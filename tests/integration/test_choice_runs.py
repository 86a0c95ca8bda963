"""Daily-Omni run here, end to end, on the shipped demo set: the simulator listens to each
question's audio and answers at its profile's error rate; `bench --benchmark daily_omni`
stores every question; `gate` gives the McNemar counts the stored answers give when counted
by hand; a server that is down leaves every question stored as a failed request."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from omni_tasks.cli import app

runner = CliRunner()
NIGHT = "2026-11-30"


def ask(profile: str, branch: str, *extra: str) -> str:
    out = runner.invoke(
        app,
        [
            "bench",
            "--benchmark",
            "daily_omni",
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
    assert out.exit_code == 0, out.output
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
    by_branch = {d["candidate"]: d for d in json.loads(out.stdout)}
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
    key = ask("http://127.0.0.1:9", "down", "--limit", "5", "--timeout", "2")
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

"""`omni-tasks bench` against the simulator: synthesize, store, grade; idempotent re-runs."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from omni_tasks.cli import app

runner = CliRunner()


def _bench(*args: str) -> dict:
    out = runner.invoke(app, ["bench", "--nightly", "2026-11-28", "--json", *args])
    assert out.exit_code == 0, out.output
    return json.loads(out.output[out.output.index("{\n") :])  # after any warning


def test_40_demo_clips_with_real_speech_and_grading(db) -> None:
    """Real speech (piper) graded by real ASR (tiny.en), on the demo set's first 40 clips: each
    costs about a second, and 40 show what 100 did (the same tail fraction, 0.2; 25 of 40 clips
    read perfectly, against 63 of 100)."""
    args = ("--target", "simulator:rebase", "--branch", "rebase", "--seed", "3", "--limit", "40")
    result = _bench(*args)
    assert result["n_expected"] == 40 and result["simulated"]
    assert result["grader_id"].startswith("faster-whisper/tiny.en@")
    rows = db.execute(
        "SELECT a.synth_status, a.audio_uri, a.thinker_text, g.grade_status, g.wer "
        "FROM omni.clip_audio a JOIN omni.run r USING (run_id) "
        "LEFT JOIN omni.clip_grade g ON g.utt_id = a.utt_id AND g.grading_id = %s "
        "WHERE r.run_key = %s",
        (result["grading_id"], result["run_key"]),
    ).fetchall()
    assert len(rows) == 40
    for r in rows:  # every clip has audio or a status that says why not
        assert r["audio_uri"] or r["synth_status"] != "ok"
        assert r["thinker_text"]
        assert r["grade_status"] == "graded" or r["audio_uri"] is None
    assert 0.05 <= result["tail_fraction"] <= 0.35  # the rebase profile on a question-rich corpus
    clean = sum(r["wer"] is not None and r["wer"] == 0 for r in rows)
    assert clean > len(rows) / 2  # piper + tiny.en read most untouched sentences perfectly
    stack = db.execute("SELECT stack FROM omni.run").fetchone()["stack"]
    assert stack["simulated"] is True and stack["simulator"] == "simulator:rebase"


def test_transcript_mode_is_fast_idempotent_and_labelled(db) -> None:
    args = ("--target", "simulator:main", "--branch", "main", "--transcript-mode", "--seed", "3")
    first = _bench(*args)
    assert first["n_expected"] == 100  # no --limit: the whole demo set
    assert first["grader_id"].startswith("simulator-transcript/")
    snapshot = db.execute("SELECT count(*) AS n FROM omni.clip_grade").fetchone()["n"]
    stored = db.execute("SELECT created_at FROM omni.run").fetchone()
    again = _bench(*args)
    assert again["run_key"] == first["run_key"]
    assert db.execute("SELECT created_at FROM omni.run").fetchone() == stored  # not run again
    assert db.execute("SELECT count(*) AS n FROM omni.clip_grade").fetchone()["n"] == snapshot
    text = runner.invoke(app, ["bench", *args, "--nightly", "2026-11-28"])
    assert "[SIMULATED target]" in text.output


def test_bench_input_errors_are_clear(db) -> None:
    cases = [
        (
            ["--target", "simulator:nope", "--branch", "b", "--transcript-mode"],
            "unknown simulator profile",
        ),
        (["--target", "localhost:8000", "--branch", "b"], "expected http(s)://HOST:PORT"),
        (  # nothing answers: a run of failed requests, stored, saying why (two clips say it
            # as well as the whole corpus, which costs a minute of refused connections)
            [
                "--target",
                "http://127.0.0.1:9",
                "--branch",
                "b",
                "--transcript-mode",
                "--limit",
                "2",
            ],
            "All connection attempts failed",
        ),
        (
            [
                "--target",
                "simulator:main",
                "--branch",
                "b",
                "--prompt-template",
                "x",
                "--transcript-mode",
            ],
            "unknown prompt template",
        ),
    ]
    for args, message in cases:
        out = runner.invoke(app, ["bench", *args])
        assert out.exit_code == 1 and message in out.output, (args, out.output)
    out = runner.invoke(
        app, ["bench", "--target", "simulator:main", "--branch", "b", "--dataset", "/x"]
    )
    assert out.exit_code == 2 and "/x has no meta.lst" in out.output, out.output
    # A server that answers but is no simulator cannot speak transcripts.
    from starlette.applications import Starlette

    from omni_tasks.synthesis.simulator import serve_in_thread

    with serve_in_thread(Starlette()) as url:
        args = ["bench", "--target", url, "--branch", "c", "--transcript-mode"]
        out = runner.invoke(app, args)
    assert out.exit_code == 1 and "needs a simulator" in out.output, out.output


def test_the_reproduce_command_recreates_the_same_run(db) -> None:
    import shlex

    first = _bench(
        "--target",
        "simulator:main",
        "--branch",
        "main",
        "--transcript-mode",
        "--seed",
        "5",
        "--limit",
        "12",
        "--commit",
        "abc123",
    )
    shown = json.loads(runner.invoke(app, ["runs", "show", first["run_key"], "--json"]).output)
    command = shlex.split(shown["reproduce"])
    assert command[:2] == ["omni-tasks", "bench"] and "--limit" in command
    again = runner.invoke(app, [*command[1:], "--json"])
    assert again.exit_code == 0, again.output
    result = json.loads(again.output)
    assert result["run_key"] == first["run_key"]
    text = runner.invoke(app, ["runs", "show", first["run_key"][:30]])
    assert "reproduce" in text.output and "omni-tasks bench --target simulator:main" in text.output


def test_a_rerun_with_other_inputs_under_the_same_key_is_an_error_naming_them(db) -> None:
    """A stored run is never returned for a request that measures something else (another
    target, subset or mode used to answer "already stored", exit 0)."""
    base = ["--branch", "b", "--transcript-mode", "--limit", "5"]
    first = _bench("--target", "simulator:main", *base)
    again = _bench("--target", "simulator:main", *base)
    assert again["run_key"] == first["run_key"]
    for args, named in (
        (["--target", "simulator:rebase", *base], "target: stored 'simulator:main'"),
        (["--target", "simulator:main", *base[:-1], "6"], ":first5, asked "),
        (["--target", "simulator:main", *base[:2], *base[3:]], "transcript mode: stored True"),
        (
            ["--target", "simulator:rebase", *base, "--run-key", first["run_key"]],
            "stored with other inputs",
        ),
    ):
        out = runner.invoke(app, ["bench", "--nightly", "2026-11-28", *args])
        assert out.exit_code == 1 and named in out.output, (args, out.output)
    assert db.execute("SELECT count(*) AS n FROM omni.grading").fetchone()["n"] == 1


def test_a_seed_that_never_reached_the_model_is_stored_as_none(db) -> None:
    """Against a URL without its deploy config no seed is sent: the run stores none (and the
    seed it was asked for), so runs asked for seeds 7 and 42 do not pose as two samplings."""
    from omni_tasks.synthesis.simulator import SimulatorConfig, running_simulator

    with running_simulator(SimulatorConfig("main", transcript=True)) as url:
        base = ("--target", url, "--branch", "main", "--transcript-mode", "--limit", "5")
        asked = [_bench(*base, "--seed", seed) for seed in ("7", "42")]
    assert [a["run_key"].split(":")[-2] for a in asked] == ["seed7-unsent", "seed42-unsent"]
    rows = db.execute(
        "SELECT seed, config, execution FROM omni.run ORDER BY run_key DESC"
    ).fetchall()
    assert [r["seed"] for r in rows] == [None, None]
    assert [r["config"]["seed_requested"] for r in rows] == [7, 42]
    assert [r["execution"]["seed_sent"] for r in rows] == [False, False]
    seeded = _bench(
        "--target",
        "simulator:main",
        "--branch",
        "main",
        "--transcript-mode",
        "--limit",
        "5",
        "--seed",
        "7",
    )
    assert seeded["run_key"].split(":")[-2] == "seed7"
    stored = db.execute(
        "SELECT seed, execution FROM omni.run WHERE run_key = %s", (seeded["run_key"],)
    ).fetchone()
    assert stored["seed"] == 7 and stored["execution"]["seed_sent"] is True
    from omni_tasks.benchmarks.reproduce import Reproducible, reproduce_command
    from omni_tasks.store.runs import get_run

    unsent = Reproducible.of_run(get_run(db, asked[0]["run_key"]))
    assert "--seed 7" in reproduce_command(unsent)  # asks again for the key's seed


def test_a_series_on_harness_0_30_scores_a_clip_whose_first_stream_dropped(db) -> None:
    """A server that drops the connection after two chunks on each clip's first try: on
    harness 0.30.0 the run retries, as that harness's client does, and stores the clip `ok`
    with the whole second stream; a run on no harness version fails it (output had begun)."""
    from collections import Counter

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    from omni_tasks.synthesis import protocol
    from omni_tasks.synthesis.simulator import serve_in_thread
    from tests.fakes.hostile_vllm import text_chunk

    tries: Counter[tuple[int, str]] = Counter()

    async def chat(request: Request) -> StreamingResponse:
        body = await request.json()
        text = protocol.target_text(body)
        tries[body.get("seed", 0), text] += 1
        first = tries[body.get("seed", 0), text] == 1
        words = text.split()

        async def stream():  # type: ignore[no-untyped-def]
            yield protocol.sse(text_chunk(text, "m"))
            for i, word in enumerate(words):
                if first and i == 2:
                    raise RuntimeError("connection dropped after two chunks")
                yield protocol.sse(protocol.transcript_chunk(word, 0.4, "m"))
            yield protocol.sse("[DONE]")

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def models(request: Request) -> JSONResponse:  # transcript mode needs a simulator
        return JSONResponse({"data": [{"id": "simulator:dropping+transcript"}]})

    app_ = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/models", models),
        ]
    )
    base = ("--branch", "main", "--transcript-mode", "--limit", "3")
    with serve_in_thread(app_) as url:
        on_030 = _bench("--target", url, *base, "--harness-version", "0.30.0", "--seed", "1")
        tries.clear()
        # Every clip failing fails the run (exit 1); its rows are stored all the same.
        out = runner.invoke(
            app,
            ["bench", "--nightly", "2026-11-28", "--json", "--target", url, *base, "--seed", "2"],
        )
        assert out.exit_code == 1 and "3 of 3 clips" in out.output
        ours = json.loads(out.output[out.output.index("{\n") :])
    rows = {
        key: db.execute(
            "SELECT a.synth_status, a.audio_seconds, a.error_detail FROM omni.clip_audio a "
            "JOIN omni.run r USING (run_id) WHERE r.run_key = %s ORDER BY a.utt_id",
            (key,),
        ).fetchall()
        for key in (on_030["run_key"], ours["run_key"])
    }
    retried = rows[on_030["run_key"]]
    assert [r["synth_status"] for r in retried] == ["ok"] * 3
    assert all("scored on attempt 2" in (r["error_detail"] or "") for r in retried)
    assert all(r["audio_seconds"] > 0.8 + 1e-9 for r in retried)  # more than the two chunks
    assert [r["synth_status"] for r in rows[ours["run_key"]]] == ["request_failed"] * 3
    execution = db.execute(
        "SELECT execution FROM omni.run WHERE run_key = %s", (on_030["run_key"],)
    ).fetchone()["execution"]
    assert execution["client_retry"].startswith("vllm-omni ≤0.31: up to 3 retries of any")

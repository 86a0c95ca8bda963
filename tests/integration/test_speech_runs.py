"""The TTS-model seed-TTS path (`/v1/audio/speech`, upstream's `--backend openai-audio-speech`)
on the simulator: synthesized as streamed PCM, graded by Whisper, stored under its own variant
(the protocol), and gated like a chat run; and what the simulator refuses, it refuses as the
server does."""

from __future__ import annotations

import json

import httpx
from typer.testing import CliRunner

from omni_tasks.cli import app
from omni_tasks.synthesis.simulator import SimulatorConfig, running_simulator

runner = CliRunner()
NIGHT = "2026-11-28"


def _bench(*args: str) -> dict:  # type: ignore[type-arg]
    out = runner.invoke(app, ["bench", "--nightly", NIGHT, "--json", *args])
    assert out.exit_code == 0, out.output
    return json.loads(out.output[out.output.index("{\n") :])


def test_a_speech_run_is_graded_stored_and_gated_like_a_chat_run(db) -> None:  # type: ignore[no-untyped-def]
    base = ("--endpoint", "audio-speech", "--limit", "12", "--seed", "3")
    main = _bench("--target", "simulator:main", "--branch", "main", *base)
    rebase = _bench("--target", "simulator:rebase", "--branch", "rebase", *base)
    assert main["grader_id"].startswith("faster-whisper/tiny.en@")
    runs = db.execute(
        "SELECT run_key, branch, variant, config, seed FROM omni.run ORDER BY branch"
    ).fetchall()
    assert [(r["branch"], r["variant"]) for r in runs] == [
        ("main", "audio-speech"),
        ("rebase", "audio-speech"),
    ]
    assert {r["run_key"] for r in runs} == {main["run_key"], rebase["run_key"]}
    assert runs[0]["config"]["endpoint"] == "audio-speech"
    assert runs[0]["seed"] is None  # the speech body carries no seed
    clips = db.execute(
        "SELECT a.synth_status, a.audio_uri, a.thinker_text, g.grade_status, g.wer "
        "FROM omni.clip_audio a JOIN omni.run r USING (run_id) "
        "LEFT JOIN omni.clip_grade g ON g.utt_id = a.utt_id AND g.grading_id = %s "
        "WHERE r.run_key = %s",
        (main["grading_id"], main["run_key"]),
    ).fetchall()
    assert len(clips) == 12
    assert all(c["audio_uri"] and c["grade_status"] == "graded" for c in clips)
    assert all(not c["thinker_text"] for c in clips)  # a TTS model has no thinker
    assert sum(c["wer"] == 0 for c in clips) >= 6  # piper + tiny.en read most sentences right

    out = runner.invoke(app, ["gate", "--nightly", NIGHT, "--baseline", "main", "--json"])
    assert out.exit_code == 0, out.output
    (decision,) = json.loads(out.stdout)
    assert (decision["candidate_branch"], decision["variant"]) == ("rebase", "audio-speech")
    assert decision["n_paired"] == 12 and decision["verdict"] != "INFRA", decision


def test_the_simulator_refuses_what_it_cannot_serve_as_the_server_does() -> None:
    with running_simulator(SimulatorConfig("main")) as url:
        no_text = httpx.post(f"{url}/v1/audio/speech", json={"input": " ", "stream": True})
        wav = httpx.post(
            f"{url}/v1/audio/speech",
            json={"input": "Hello there.", "stream": True, "response_format": "wav"},
        )
    for r in (no_text, wav):
        assert r.status_code == 400
        assert r.json()["error"]["type"] == "BadRequestError"
    with running_simulator(SimulatorConfig("main", transcript=True)) as url:
        r = httpx.post(
            f"{url}/v1/audio/speech",
            json={"input": "Hello there.", "stream": True, "response_format": "pcm"},
        )
    assert r.status_code == 400 and "chat completions only" in r.json()["error"]["message"]


def test_a_planted_mid_stream_failure_breaks_the_connection() -> None:
    """The stream-errors profile's fault on the speech route: no error chunk (raw PCM has
    none); the server raises in its generator and the connection breaks mid-body."""
    from omni_tasks.synthesis.profiles import load_profile, uniform

    rate = load_profile("stream-errors").stream_error
    texts = [f"Sentence number {i} is read aloud now, slowly and clearly." for i in range(12)]
    planted = [t for t in texts if uniform(42, t, "stream_error") < rate]
    assert planted and len(planted) < len(texts)
    broken = 0
    with running_simulator(SimulatorConfig("stream-errors")) as url:
        for text in texts:
            body = {"input": text, "stream": True, "response_format": "pcm"}
            try:
                with httpx.stream("POST", f"{url}/v1/audio/speech", json=body) as r:
                    assert r.headers["x-audio-sample-rate"] == "24000"
                    r.read()
            except httpx.RemoteProtocolError:
                broken += 1
                assert text in planted
    assert broken == len(planted)

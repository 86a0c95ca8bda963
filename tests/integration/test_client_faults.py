"""The streaming client against a local server that misbehaves in every way it will meet."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from omni_tasks.dataset import Utterance
from omni_tasks.evidence.audio import wav_bytes, write_audio
from omni_tasks.harness import HARNESS, ClientRules, RetryRule, client_rules
from omni_tasks.synthesis import protocol
from omni_tasks.synthesis.client import ClientConfig, synthesize_all
from omni_tasks.synthesis.simulator import loopback_socket, serve_in_thread
from tests.fakes.hostile_vllm import audio_chunk, text_chunk

TONE = (0.1 * np.sin(np.arange(24_000) / 10)).astype(np.float32)  # 1 s at 24 kHz
attempts: Counter[str] = Counter()


def _audio(seconds: float = 1.0) -> bytes:
    return protocol.sse(audio_chunk(wav_bytes(np.tile(TONE, int(seconds)), 24_000), "m"))


async def chat(request: Request) -> Response:
    case = protocol.target_text(await request.json())
    attempts[case] += 1
    if case == "http-500":
        return JSONResponse({"error": "engine dead"}, status_code=500)
    unavailable = {"message": "mm cache miss", "type": "ServiceUnavailableError", "code": 503}
    if case.startswith("503-http") and attempts[case] == 1:
        return JSONResponse({"error": unavailable}, status_code=503)
    if case == "503-plain":
        return JSONResponse({"error": {"message": "busy", "code": 503}}, status_code=503)

    async def stream():
        if case == "flaky" and attempts[case] == 1:
            raise RuntimeError("connection dropped before any output")
        if case.startswith("503-stream") and attempts[case] == 1:
            role = {"role": "assistant", "content": ""}  # a role chunk is no output
            yield protocol.sse({"modality": "text", "choices": [{"index": 0, "delta": role}]})
            yield protocol.sse({"error": unavailable})
            yield protocol.sse("[DONE]")
            return
        if case == "stall-first":
            await asyncio.sleep(5)
        yield protocol.sse(text_chunk("thinking ", "m"))
        if case == "drop" or (case.startswith("drop-first") and attempts[case] == 1):
            yield _audio()
            yield _audio()
            raise RuntimeError("connection dropped mid-stream")
        if case == "stall":
            yield _audio()
            await asyncio.sleep(5)
        if case in ("non-wav", "non-wav-only"):
            yield protocol.sse(
                {"modality": "audio", "choices": [{"delta": {"content": "bm90IGEgd2F2"}}]}
            )
            yield protocol.sse({"modality": "audio", "choices": [{"delta": {"content": "%%%"}}]})
            if case == "non-wav-only":
                yield protocol.sse("[DONE]")
                return
        if case == "five-minutes":
            for _ in range(30):
                yield _audio(10)
        if case != "text-only":
            yield _audio()
            yield _audio()
        if case.startswith("drop-first"):  # its whole stream is 3 s: 2 s came before the drop
            yield _audio()
        yield protocol.sse("[DONE]")

    return StreamingResponse(stream(), media_type="text/event-stream")


@pytest.fixture(scope="module")
def server_url():
    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    with serve_in_thread(app) as url:
        yield url


@pytest.fixture(scope="module")
def prompt(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("p") / "p.wav"
    write_audio(str(path), TONE, 24_000)
    return path


def _run(url: str, prompt: Path, cases: list[str], **kw) -> dict[str, object]:
    utts = [Utterance(c, "prompt", prompt, c, i + 1) for i, c in enumerate(cases)]
    cfg = ClientConfig(
        url,
        protocol.prompt_template("seed-tts-default"),
        seed=1,
        timeout_s=1.5,
        **({"rules": ClientRules(RetryRule("ours, quick", 3, 0.05, incrementing=True))} | kw),
    )
    return {r.utt.utt_id: r for r in asyncio.run(synthesize_all(utts, cfg))}


def test_every_misbehaviour_ends_in_its_status(server_url: str, prompt: Path) -> None:
    cases = [
        "ok",
        "drop",
        "stall",
        "stall-first",
        "non-wav",
        "non-wav-only",
        "five-minutes",
        "http-500",
        "text-only",
        "flaky",
    ]
    started = time.monotonic()
    results = _run(server_url, prompt, cases)
    assert time.monotonic() - started < 6  # nothing waits past its 1.5 s deadline for long
    status = {k: r.status for k, r in results.items()}
    assert status == {
        "ok": "ok",
        "drop": "request_failed",
        "stall": "timeout_partial",
        "stall-first": "timeout_no_output",
        "non-wav": "ok",
        "non-wav-only": "no_audio",
        "five-minutes": "over_long",
        "http-500": "request_failed",
        "text-only": "no_audio",
        "flaky": "ok",
    }
    assert (
        results["ok"].audio_seconds == pytest.approx(2.0)
        and results["ok"].thinker_text == "thinking"
    )
    assert "after output had begun" in (results["drop"].detail or "")
    assert "dropped 2 audio chunk(s)" in (results["non-wav"].detail or "")
    assert results["five-minutes"].audio_seconds == pytest.approx(60.0)
    assert (
        results["five-minutes"].audio is not None
        and len(results["five-minutes"].audio) == 60 * 24_000
    )
    assert "HTTP 500" in (results["http-500"].detail or "") and attempts["http-500"] == 1
    assert attempts["flaky"] == 2  # retried: the connection failed before any output
    assert attempts["drop"] == 1  # not retried: output had begun


def test_unreachable_server_is_retried_then_request_failed(prompt: Path) -> None:
    sock = loopback_socket()
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    results = _run(
        f"http://127.0.0.1:{port}", prompt, ["ok"], rules=ClientRules(RetryRule("two", 2, 0.05))
    )
    assert results["ok"].status == "request_failed"
    assert "connection failed on all 3 attempt(s)" in (results["ok"].detail or "")


# What each release's client does with each first attempt, as read from its
# `async_request_openai_chat_omni_completions` (and the replay through the wheels in
# tests/conformance/test_streams.py): (status, retried) for a drop after two audio chunks, a
# retryable 503 as the HTTP answer, the same 503 as an in-stream chunk before any output, and
# a 503 that is not the retryable kind. Written out, not derived from harness.py.
UP_TO_028 = {
    "drop-first": ("ok", True),  # `except aiohttp.ClientError`: any drop is replayed
    "503-http": ("request_failed", False),
    "503-stream": ("no_audio", False),  # error chunks not read: a "success" without audio
    "503-plain": ("request_failed", False),
}
UP_TO_031 = {**UP_TO_028, "503-stream": ("request_failed", False)}  # error chunks fail
FROM_032 = {
    "drop-first": ("request_failed", False),  # output was seen: never replayed
    "503-http": ("ok", True),  # `_is_retryable_omni_error` before output
    "503-stream": ("ok", True),
    "503-plain": ("request_failed", False),
}
EXPECTED = {
    None: {c: ("request_failed", False) for c in FROM_032},  # ours: drops before output only
    "0.26.0": UP_TO_028,
    "0.28.0": UP_TO_028,
    "0.30.0": UP_TO_031,
    "0.31.0rc1": UP_TO_031,
    "0.32.0rc1": FROM_032,
}


@pytest.mark.parametrize("version", [None, *HARNESS])
def test_the_retry_rule_follows_the_harness_version(
    server_url: str, prompt: Path, version: str | None
) -> None:
    """Each scenario fails on its first attempt only: a drop after two audio chunks, a 503
    ServiceUnavailableError as the HTTP answer or as an in-stream chunk before any output, and
    a 503 that is not the retryable kind. Up to 0.31 the harness retries any dropped connection
    (and scores the clip); from 0.32 only drops and retryable 503s before output."""
    tag = version or "ours"
    cases = [f"{c}-{tag}" for c in ("drop-first", "503-http", "503-stream")] + ["503-plain"]
    attempts.pop("503-plain", None)
    results = _run(server_url, prompt, cases, rules=client_rules(version))
    got = {c.removesuffix(f"-{tag}"): (r.status, attempts[c] > 1) for c, r in results.items()}
    assert got == EXPECTED[version]
    replayed = EXPECTED[version]["drop-first"][1]
    drop = results[f"drop-first-{tag}"]
    if replayed:  # the second attempt's whole stream, not the first one's two chunks
        assert drop.audio_seconds == pytest.approx(3.0)
        assert "scored on attempt 2" in (drop.detail or "")
    else:
        assert drop.audio_seconds == pytest.approx(2.0)

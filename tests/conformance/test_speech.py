"""The `/v1/audio/speech` path (`--backend openai-audio-speech`, 0.32.0rc1): upstream's own
request function, `async_request_openai_audio_speech`, run unmodified, and our speech client
(`omni_tasks/synthesis/speech.py`) read the same answers alike — the simulator's speech route
and scripted servers: PCM at the announced rate and channels, a refusal, a stream broken
mid-body, an empty answer. And the body we send is the one upstream builds from the seed-TTS
row."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest

from omni_tasks.dataset import Utterance
from omni_tasks.evidence.audio import STORE_RATE
from omni_tasks.harness import CLIENT_032
from omni_tasks.synthesis.client import ClientConfig, ClipResult, synthesize_all
from omni_tasks.synthesis.protocol import prompt_template
from omni_tasks.synthesis.simulator import SimulatorConfig, running_simulator
from tests.conformance.conftest import PATCH, _vllm_audio_module
from tests.conformance.replay import TONE, ScriptedServer
from tests.conformance.upstream import Upstream
from tests.conformance.vllm_facts import standins

VERSION = "0.32.0rc1"  # the first release whose speech client reads the server's format
MODEL = "Qwen/Qwen3-TTS-12Hz-1.7B-Base"
TEXT = "Turn left at the second light."


@pytest.fixture(scope="module")
def upstream() -> Upstream:
    return Upstream(VERSION, standins(VERSION))


def ours(url: str, prompt_wav: Path, text: str = TEXT) -> ClipResult:
    cfg = ClientConfig(
        url,
        prompt_template("seed-tts-default"),
        model=MODEL,
        rules=CLIENT_032,
        endpoint="audio-speech",
        audio_cap_s=900.0,
    )
    (got,) = asyncio.run(synthesize_all([Utterance("u0", "a prompt", prompt_wav, text, 1)], cfg))
    return got


def theirs(u: Upstream, url: str, prompt_wav: Path, text: str = TEXT) -> tuple[bool, Any]:
    """Upstream's request function as the seed-TTS nightly calls it (`seed_tts_row`, the WER
    switch on): (success, the PCM it hands the grader, int16 at 24 kHz, or None)."""
    fn = u.load(PATCH, ["async_request_openai_audio_speech"])["async_request_openai_audio_speech"]
    rfi_cls = u.load("vllm.benchmarks.lib.endpoint_request_func", ["RequestFuncInput"])
    # The row's fields as `SeedTTSDataset.sample` writes them (an inline data URL, Base, the
    # locale's language, --output-len as max_new_tokens).
    extra = {
        "ref_audio": "data:audio/wav;base64," + base64.b64encode(prompt_wav.read_bytes()).decode(),
        "ref_text": "a prompt",
        "task_type": "Base",
        "language": "English",
        "max_new_tokens": 2048,
    }
    rfi = rfi_cls["RequestFuncInput"](
        prompt=text,
        api_url=f"{url}/v1/audio/speech",
        prompt_len=1,
        output_len=2048,
        model=MODEL,
        extra_body=extra,
    )
    rfi.seed_tts_row = True

    async def go() -> Any:
        async with aiohttp.ClientSession() as session:
            return await fn(rfi, session)

    os.environ["SEED_TTS_WER_EVAL"] = "1"
    try:
        with _vllm_audio_module():
            out = asyncio.run(go())
    finally:
        os.environ.pop("SEED_TTS_WER_EVAL")
    raw = getattr(out, "tts_output_pcm_bytes", None)
    return bool(out.success), (np.frombuffer(raw, np.int16) if raw else None)


def pcm16(result: ClipResult) -> np.ndarray:
    assert result.audio is not None
    return np.round(result.audio * 32768).astype(np.int32)


def alike(mine: ClipResult, success: bool, pcm: np.ndarray | None) -> None:
    """The two clients end alike: success (ours: a clip with audio, or no_audio, which the
    harness counts a success without PCM) and the same samples, within one LSB."""
    assert (mine.status in ("ok", "no_audio")) == success, mine.detail
    if not success:
        return
    assert (mine.audio is None) == (pcm is None)
    if pcm is not None:
        assert pcm16(mine).size == pcm.size
        assert np.abs(pcm16(mine) - pcm.astype(np.int32)).max() <= 1


def answer(samples: np.ndarray, channels: int = 1, announced: bool = True) -> bytes:
    """A 200 with raw s16le PCM, the format in the server's headers (or none)."""
    pcm = (np.repeat(samples[:, None], channels, axis=1) * 32767).astype("<i2").tobytes()
    head = "HTTP/1.1 200 OK\r\ncontent-type: audio/pcm\r\nconnection: close\r\n"
    if announced:
        head += f"x-audio-sample-rate: {STORE_RATE}\r\nx-audio-channels: {channels}\r\n"
    return head.encode() + b"\r\n" + pcm


def broken(samples: np.ndarray) -> bytes:
    """A chunked answer whose body stops inside its first chunk: generation failed."""
    pcm = (samples * 32767).astype("<i2").tobytes()
    head = b"HTTP/1.1 200 OK\r\ncontent-type: audio/pcm\r\ntransfer-encoding: chunked\r\n\r\n"
    return head + f"{2 * len(pcm):x}\r\n".encode() + pcm


REFUSED = (
    b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 28\r\n"
    b"connection: close\r\n\r\n" + b'{"error": {"message": "no"}}'
)
EMPTY = b"HTTP/1.1 200 OK\r\ncontent-type: audio/pcm\r\ncontent-length: 0\r\n\r\n"
SCRIPTS = {
    "24 kHz mono, announced": answer(TONE),
    "no format headers (24 kHz mono assumed)": answer(TONE, announced=False),
    "stereo, announced (averaged)": answer(TONE, channels=2),
    "a 400": REFUSED,
    "a stream broken mid-body": broken(TONE),
    "an empty answer": EMPTY,
}


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_scripted_answer_ends_alike(upstream: Upstream, prompt_wav: Path, name: str) -> None:
    with ScriptedServer([SCRIPTS[name]]) as server:
        mine = ours(server.url, prompt_wav)
        success, pcm = theirs(upstream, server.url, prompt_wav)
        assert server.requests == 2  # one each: neither client retries
    alike(mine, success, pcm)
    expected_ok = name not in ("a 400", "a stream broken mid-body")
    assert success == expected_ok


def test_the_simulators_speech_route_is_heard_alike(upstream: Upstream, prompt_wav: Path) -> None:
    with running_simulator(SimulatorConfig("clean")) as url:
        mine = ours(url, prompt_wav)
        success, pcm = theirs(upstream, url, prompt_wav)
    assert mine.status == "ok" and success
    alike(mine, success, pcm)
    assert mine.audio_seconds > 1.0


def test_the_body_is_the_one_upstream_sends(upstream: Upstream, prompt_wav: Path) -> None:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from omni_tasks.synthesis.simulator import serve_in_thread

    bodies: list[Any] = []

    async def speech(request: Request) -> Response:
        bodies.append(await request.json())
        return Response(b"", media_type="audio/pcm")

    app = Starlette(routes=[Route("/v1/audio/speech", speech, methods=["POST"])])
    with serve_in_thread(app) as url:
        ours(url, prompt_wav)
        theirs(upstream, url, prompt_wav)
    assert len(bodies) == 2 and bodies[0] == bodies[1]
    assert list(bodies[0]) == list(bodies[1])  # the same keys in the same order


def test_pcm_at_another_announced_rate_is_resampled_to_24_khz(prompt_wav: Path) -> None:
    """16 kHz stereo as announced: averaged and resampled to the 24 kHz the grader hears (the
    harness resamples with vLLM's resampler, which is not installed here)."""
    quarter = (0.2 * np.sin(np.arange(4000) / 5)).astype(np.float32)  # 0.25 s at 16 kHz
    pcm = (np.repeat(quarter[:, None], 2, axis=1) * 32767).astype("<i2").tobytes()
    head = b"HTTP/1.1 200 OK\r\nx-audio-sample-rate: 16000\r\nx-audio-channels: 2\r\n"
    with ScriptedServer([head + b"connection: close\r\n\r\n" + pcm]) as server:
        mine = ours(server.url, prompt_wav)
    assert mine.status == "ok" and mine.audio is not None
    assert mine.audio_seconds == 0.25 and mine.audio.size == STORE_RATE // 4

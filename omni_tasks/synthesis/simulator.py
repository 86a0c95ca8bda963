"""A local stand-in for a vLLM-Omni server: same protocol, real speech, planted failures.

It speaks with piper (a real neural TTS) and fails the way Qwen3-Omni fails on seed-TTS, at the
rates of a profile (profiles.yaml), deterministically per (profile, seed, text). In transcript
mode it returns what would have been heard instead of audio, for fast statistical and DAG
tests. Every response names it: model `simulator:<profile>` and an `x-omni-simulator` header.

    omni-tasks simulator serve --profile rebase --port 8091 [--transcript-mode]
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import anyio
import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from omni_tasks.contracts import JsonObject
from omni_tasks.evidence.audio import STORE_RATE, wav_bytes
from omni_tasks.synthesis import batching, protocol
from omni_tasks.synthesis.profiles import (
    Behaviour,
    Profile,
    cut_short,
    decide,
    load_profile,
    uniform,
)
from omni_tasks.synthesis.stages import InvalidStageSettings, StageDefaults, effective
from omni_tasks.synthesis.voices import cloned_factor, revoice
from omni_tasks.voice import speak

CHUNK_SECONDS = 1.0
# How a benchmark family's items are answered (ItemSuite.simulate): the text answer to a
# text-out request that is the family's, None when it is not; NotTheFamilysRequest when it is
# but cannot be read (a 400, as the server refuses it).
Answerer = Callable[[JsonObject, Profile, int], str | None]


class UnreadableRequest(ValueError):
    """A family's request the simulator cannot read (missing media, no choices): a 400."""


@dataclass(frozen=True)
class SimulatorConfig:
    profile: str = "main"
    transcript: bool = False  # answer with what would be heard, no audio (fast)
    chunk_seconds: float = CHUNK_SECONDS
    # The deploy it pretends to run: a request's sampling_params_list is applied against these
    # by the server's rule (stages.effective), so a partial list truncates here as it does there.
    stage_defaults: StageDefaults = field(default_factory=StageDefaults.nightly)
    # Each stage's engine settings (enforce_eager, …): a profile's regression may vanish
    # under one (profiles.yaml `vanishes_with`), as a compiled-path bug does under eager mode.
    engine_args: tuple[JsonObject, ...] = ()
    # The families whose text-out items it answers, asked in turn (the simulator never reads a
    # request's shape itself): the item runner passes its family's, `simulator serve` every
    # registered family's (benchmarks.answerers()).
    answerers: tuple[Answerer, ...] = ()

    @property
    def model_name(self) -> str:
        return f"simulator:{self.profile}" + ("+transcript" if self.transcript else "")


# How many tokens each stage spends (Qwen3-Omni: ~1.3 text tokens a word; the talker's codec
# runs at 12.5 frames a second, code2wav decodes those frames): a stage whose effective
# max_tokens is below what the utterance needs stops early, as on the real server.
THINKER_TOKENS_PER_WORD = 1.3
CODEC_FRAMES_PER_SECOND = 12.5


def budgeted(b: Behaviour, stages: list[JsonObject]) -> Behaviour:
    """The behaviour cut where the stages' effective max_tokens run out."""
    think = b.thinker_text.split()
    think_cap = _cap(stages[0], THINKER_TOKENS_PER_WORD)
    frame_cap = min(
        _cap(stages[1], CODEC_FRAMES_PER_SECOND * protocol.SECONDS_PER_WORD),
        _cap(stages[2], CODEC_FRAMES_PER_SECOND * protocol.SECONDS_PER_WORD),
    )
    spoken = b.spoken_text.split()
    kept_text = think[:think_cap]
    # The talker voices the thinker's text: a cut thinker cuts the speech in proportion.
    share = len(kept_text) / len(think) if think else 1.0
    kept_speech = spoken[: min(frame_cap, math.ceil(len(spoken) * share))]
    if len(kept_text) == len(think) and len(kept_speech) == len(spoken):
        return b
    return dataclasses.replace(
        b, thinker_text=" ".join(kept_text), spoken_text=" ".join(kept_speech)
    )


def _cap(stage: JsonObject, tokens_per_word: float) -> int:
    limit = stage.get("max_tokens")
    return int(limit / tokens_per_word) if isinstance(limit, int | float) else 10**9


def _thinker_chunks(text: str) -> list[str]:
    words = text.split(" ")
    step = max(1, len(words) // 3)
    return [" ".join(words[i : i + step]) + " " for i in range(0, len(words), step)]


async def _audio_chunks(
    b: Behaviour, cfg: SimulatorConfig, voice: float
) -> AsyncIterator[np.ndarray]:
    if b.event == "runaway":
        # Loop the sentence's audio rather than synthesizing minutes of speech.
        once = await anyio.to_thread.run_sync(speak, b.thinker_text)
        repeats = max(1, round(len(b.spoken_text.split()) / max(1, len(b.thinker_text.split()))))
        samples = np.tile(once, repeats)
    elif b.spoken_text.strip():
        samples = await anyio.to_thread.run_sync(speak, b.spoken_text)
    else:
        return
    samples = revoice(samples, voice)
    step = int(cfg.chunk_seconds * STORE_RATE)
    for i in range(0, len(samples), step):
        yield samples[i : i + step]
        await asyncio.sleep(0)


async def _content(
    b: Behaviour, cfg: SimulatorConfig, w: protocol.StreamWriter, voice: float
) -> AsyncIterator[bytes]:
    if cfg.transcript:
        words = b.spoken_text.split()
        per_chunk = max(1, int(cfg.chunk_seconds / protocol.SECONDS_PER_WORD))
        for i in range(0, len(words), per_chunk):
            said = words[i : i + per_chunk]
            seconds = len(said) * protocol.SECONDS_PER_WORD
            yield protocol.sse(protocol.transcript_chunk(" ".join(said), seconds, cfg.model_name))
        return
    async for samples in _audio_chunks(b, cfg, voice):
        yield w.audio(wav_bytes(samples, STORE_RATE), STORE_RATE)


def _bad_request(message: str, headers: dict[str, str]) -> JSONResponse:
    """The server's refusal of a request it cannot read, as the OpenAI-style 400 it sends."""
    return JSONResponse(
        {"error": {"message": message, "type": "BadRequestError", "code": 400}},
        status_code=400,
        headers=headers,
    )


def _answer(body: JsonObject, cfg: SimulatorConfig, profile: Profile, seed: int) -> str | None:
    return next((t for a in cfg.answerers if (t := a(body, profile, seed)) is not None), None)


def _answer_response(
    body: JsonObject,
    cfg: SimulatorConfig,
    profile: Profile,
    headers: dict[str, str],
    co_batched: bool,
) -> Response | None:
    """A family's text-out item answered (not streamed unless asked), as vLLM answers text;
    None when no family claims the request. A planted item co-batched under a batch-variant
    profile is answered as at another seed (batching.py)."""
    given = body.get("seed")
    seed = given if isinstance(given, int) else 42
    try:
        text = _answer(body, cfg, profile, seed)
        if text is not None and co_batched and batching.planted(profile, body):
            for k in range(1, batching.RESEED_TRIES + 1):
                other = _answer(body, cfg, profile, seed + k * batching.RESEED_STEP)
                if other is not None and other != text:
                    text = other
                    break
    except UnreadableRequest as exc:
        return _bad_request(str(exc), headers)
    if text is None:
        return None
    head = {
        "id": "chatcmpl-" + uuid.uuid4().hex[:24],
        "created": int(time.time()),
        "model": cfg.model_name,
    }
    message = {"role": "assistant", "content": text}
    if body.get("stream"):  # as vLLM streams text: one delta, its finish, then [DONE]
        choices = [
            {"index": 0, "delta": message},
            {"index": 0, "delta": {}, "finish_reason": "stop"},
        ]
        chunks = [{**head, "object": "chat.completion.chunk", "choices": [c]} for c in choices]
        text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        return Response(text, media_type="text/event-stream", headers=headers)
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return JSONResponse({**head, "object": "chat.completion", "choices": [choice]}, headers=headers)


async def _speech(
    w: protocol.StreamWriter,
    b: Behaviour,
    cfg: SimulatorConfig,
    voice: float,
    *,
    thinker_only: bool,
    broken_off: bool,
) -> AsyncIterator[bytes]:
    """The stream of a speech answer: the thinker's text, then (unless only the thinker ran)
    the talker's audio or its transcript; `broken_off` plants the server's mid-audio fault."""
    yield w.role("text")
    pieces = _thinker_chunks(b.thinker_text)
    for i, piece in enumerate(pieces):
        tokens = round(len(piece.split()) * THINKER_TOKENS_PER_WORD)
        yield w.text(piece, tokens, "stop" if i == len(pieces) - 1 else None)
    if thinker_only:
        yield w.done()
        return
    if not cfg.transcript:
        yield w.role("audio")
    sent = 0
    async for chunk in _content(b, cfg, w, voice):
        if broken_off and sent >= 1:  # the fault: the server's error chunk mid-audio
            yield w.error("EngineCore encountered an issue: stage 1 died")
            yield w.done()
            return
        yield chunk
        sent += 1
    if w.usage:
        yield w.final_usage()
    yield w.done()


async def _pcm(
    b: Behaviour, cfg: SimulatorConfig, voice: float, broken_off: bool
) -> AsyncIterator[bytes]:
    """The speech endpoint's answer: the talker's audio as raw 16-bit PCM; `broken_off`: the
    generation fails after the first chunk, and the server breaks the connection (raw PCM
    has no error chunk: `serving_speech.py` re-raises in its stream generator)."""
    sent = 0
    async for samples in _audio_chunks(b, cfg, voice):
        if broken_off and sent >= 1:
            raise RuntimeError("EngineCore encountered an issue: stage 1 died")
        yield (np.clip(samples, -1.0, 1.0) * 32767).astype("<i2").tobytes()
        sent += 1


def create_app(cfg: SimulatorConfig) -> Starlette:
    profile: Profile = load_profile(cfg.profile).under(cfg.engine_args)
    headers = {"x-omni-simulator": cfg.model_name}

    inflight = batching.InFlight()

    async def chat(request: Request) -> Response:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return JSONResponse({"error": "body is not JSON"}, status_code=400, headers=headers)
        co_batched = await inflight.enter(profile)
        try:
            response = await _chat(body, co_batched)
        except BaseException:
            inflight.leave()
            raise
        if isinstance(response, StreamingResponse):  # in flight until its stream ends
            response.body_iterator = inflight.until_done(response.body_iterator)
        else:
            inflight.leave()
        return response

    async def _chat(body: JsonObject, co_batched: bool) -> Response:
        answered = _answer_response(body, cfg, profile, headers, co_batched)
        if answered is not None:
            return answered
        text = protocol.target_text(body)
        if not text.strip():
            return JSONResponse({"error": "no user text"}, status_code=400, headers=headers)
        try:
            applied = effective(body, cfg.stage_defaults)
        except InvalidStageSettings as exc:  # the server's SamplingParams(**entry) raises too
            return _bad_request(str(exc), headers)
        # The talker's effective seed decides what the audio says (none: a fixed default).
        talker_seed = applied[1].get("seed")
        seed = talker_seed if isinstance(talker_seed, int) else 42
        thinker_only = body.get("modalities") == ["text"]
        if thinker_only:  # no talker runs: the greedy thinker's text, the same at every seed
            seed = 0
        behaviour = budgeted(decide(profile, seed, text, protocol.system_prompt_of(body)), applied)
        if co_batched and batching.planted(profile, body):  # the talker stops early
            behaviour = cut_short(behaviour)
        # It speaks in its reference's voice, or a co-batched request's (a leak).
        voice = cloned_factor(protocol.ref_audio_of(body))
        inflight.heard(voice)
        if co_batched and batching.leaks(profile, body):
            voice = inflight.other_voice(voice)
        broken_off = uniform(seed, text, "stream_error") < profile.stream_error
        options = body.get("stream_options")
        usage = isinstance(options, dict) and bool(options.get("include_usage"))
        w = protocol.StreamWriter(
            cfg.model_name,
            "chatcmpl-" + uuid.uuid4().hex[:24],
            int(time.time()),
            usage=usage,
            prompt_tokens=len(text.split()) * 2,
        )

        chunks = _speech(w, behaviour, cfg, voice, thinker_only=thinker_only, broken_off=broken_off)
        return StreamingResponse(chunks, media_type="text/event-stream", headers=headers)

    async def speech(request: Request) -> Response:
        """`POST /v1/audio/speech` as a TTS model's server answers the seed-TTS client: streamed
        PCM at the rate it announces. What it cannot serve it refuses with the server's 400."""
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return _bad_request("body is not JSON", headers)
        if not isinstance(body, dict):
            return _bad_request("body is not a JSON object", headers)
        text = body.get("input")
        if not isinstance(text, str) or not text.strip():
            return _bad_request("input: the text to speak is required", headers)
        if cfg.transcript:
            return _bad_request("transcript mode answers chat completions only", headers)
        if body.get("response_format") != "pcm" or not body.get("stream"):
            return _bad_request("the simulator streams response_format pcm only", headers)
        seed = 42  # the speech request carries no seed: the server's default sampling
        behaviour = decide(profile, seed, text, None)
        broken_off = uniform(seed, text, "stream_error") < profile.stream_error
        voice = cloned_factor(protocol.ref_audio_of(body))
        pcm = _pcm(behaviour, cfg, voice, broken_off)
        rate = {"X-Audio-Sample-Rate": str(STORE_RATE), "X-Audio-Channels": "1"}
        return StreamingResponse(pcm, media_type="audio/pcm", headers={**headers, **rate})

    async def health(_: Request) -> Response:
        return JSONResponse({"status": "ok", "simulator": cfg.model_name}, headers=headers)

    async def models(_: Request) -> Response:
        return JSONResponse({"data": [{"id": cfg.model_name, "object": "model"}]}, headers=headers)

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/audio/speech", speech, methods=["POST"]),
            Route("/health", health),
            Route("/v1/models", models),
        ]
    )


def loopback_socket(port: int = 0) -> socket.socket:
    """A listening socket on 127.0.0.1 (port 0: a free one); helpers never bind elsewhere."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    return sock


@contextmanager
def serve_in_thread(app: Starlette, port: int = 0) -> Iterator[str]:
    """Serve an ASGI app on loopback in a background thread; yields its base URL."""
    sock = loopback_socket(port)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the local HTTP server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def running_simulator(cfg: SimulatorConfig, port: int = 0) -> Iterator[str]:
    with serve_in_thread(create_app(cfg), port) as url:
        yield url


def serve_forever(cfg: SimulatorConfig, port: int) -> None:
    """Run in the foreground (the CLI and the fake `vllm serve`)."""
    sock = loopback_socket(port)
    print(f"{cfg.model_name} listening on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    app = create_app(cfg)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off")).run(sockets=[sock])

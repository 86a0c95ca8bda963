"""A local stand-in for a vLLM-Omni server: same protocol, real speech, planted failures.

It speaks with piper (a real neural TTS) and fails the way Qwen3-Omni fails on seed-TTS, at the
rates of a profile (profiles.yaml), deterministically per (profile, seed, text). In transcript
mode it returns what would have been heard instead of audio, for fast statistical and DAG
tests. Every response names it: model `simulator:<profile>` and an `x-omni-simulator` header.

    omni-tasks simulator serve --profile rebase --port 8091 [--transcript-mode]
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import anyio
import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from omni_tasks.audio import STORE_RATE, wav_bytes
from omni_tasks.synthesis import protocol
from omni_tasks.synthesis.profiles import RUNAWAY_REPEATS, Behaviour, Profile, decide, load_profile
from omni_tasks.synthesis.voice import speak

CHUNK_SECONDS = 1.0


@dataclass(frozen=True)
class SimulatorConfig:
    profile: str = "main"
    transcript_mode: bool = False
    chunk_seconds: float = CHUNK_SECONDS

    @property
    def model_name(self) -> str:
        return f"simulator:{self.profile}" + ("+transcript" if self.transcript_mode else "")


def _thinker_chunks(text: str) -> list[str]:
    words = text.split(" ")
    step = max(1, len(words) // 3)
    return [" ".join(words[i : i + step]) + " " for i in range(0, len(words), step)]


async def _audio_stream(b: Behaviour, cfg: SimulatorConfig) -> AsyncIterator[bytes]:
    model = cfg.model_name
    if b.event == "runaway":
        # Loop the sentence's audio rather than synthesizing minutes of speech.
        once = await anyio.to_thread.run_sync(speak, b.thinker_text)
        samples = np.tile(once, RUNAWAY_REPEATS)
    else:
        samples = await anyio.to_thread.run_sync(speak, b.spoken_text)
    step = int(cfg.chunk_seconds * STORE_RATE)
    for i in range(0, len(samples), step):
        wav = wav_bytes(samples[i : i + step], STORE_RATE)
        yield protocol.sse(protocol.audio_chunk(wav, model))
        await asyncio.sleep(0)


async def _transcript_stream(b: Behaviour, cfg: SimulatorConfig) -> AsyncIterator[bytes]:
    words = b.spoken_text.split()
    per_chunk = max(1, int(cfg.chunk_seconds / protocol.SECONDS_PER_WORD))
    for i in range(0, len(words), per_chunk):
        part = words[i : i + per_chunk]
        seconds = len(part) * protocol.SECONDS_PER_WORD
        yield protocol.sse(protocol.transcript_chunk(" ".join(part), seconds, cfg.model_name))


def create_app(cfg: SimulatorConfig) -> Starlette:
    profile: Profile = load_profile(cfg.profile)
    headers = {"x-omni-simulator": cfg.model_name}

    async def chat(request: Request) -> Response:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return JSONResponse({"error": "body is not JSON"}, status_code=400, headers=headers)
        text = protocol.target_text(body)
        if not text.strip():
            return JSONResponse({"error": "no user text"}, status_code=400, headers=headers)
        behaviour = decide(profile, protocol.seed_of(body), text, protocol.system_prompt_of(body))

        async def stream() -> AsyncIterator[bytes]:
            for piece in _thinker_chunks(behaviour.thinker_text):
                yield protocol.sse(protocol.text_chunk(piece, cfg.model_name))
            source = _transcript_stream if cfg.transcript_mode else _audio_stream
            async for chunk in source(behaviour, cfg):
                yield chunk
            yield protocol.sse("[DONE]")

        return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)

    async def health(_: Request) -> Response:
        return JSONResponse({"status": "ok", "simulator": cfg.model_name}, headers=headers)

    async def models(_: Request) -> Response:
        return JSONResponse({"data": [{"id": cfg.model_name, "object": "model"}]}, headers=headers)

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
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
    uvicorn.Server(uvicorn.Config(create_app(cfg), log_level="warning", lifespan="off")).run(
        sockets=[sock]
    )

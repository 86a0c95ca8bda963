"""A hostile (or broken) vLLM-Omni server on loopback: each utterance's text names the attack
its response makes; `good` is a normal transcript-mode answer. It calls itself a simulator in
/v1/models (any server can), so a run against it needs no ASR."""

from __future__ import annotations

import base64
import io
import json
import zlib
from collections.abc import Iterator

import numpy as np
import soundfile as sf
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from omni_tasks.contracts import JsonObject
from omni_tasks.synthesis import protocol

MODEL = "simulator:hostile"
BOMB_BYTES = 2 << 30  # what the gzip bombs inflate to (2 GiB)
ATTACKS = (
    "flac",  # a FLAC chunk declaring 50 minutes of 8 channels at 384 kHz (4.6 GiB of float32)
    "gzip_error",  # HTTP 500 whose gzip body inflates to 2 GiB
    "gzip_stream",  # HTTP 200 whose gzip SSE stream inflates to 2 GiB of one event
    "endless_line",  # 96 MiB of SSE without a blank line (the event bound is 64 MiB)
    "null_choice",  # choices: [null]
    "big_int",  # a 5000-digit integer
    "deep_json",  # JSON nested 100,000 levels
    "content_number",  # content: 123 in an audio chunk
    "huge_text",  # 2 MB of thinker text
)


def text_chunk(content: str, model: str) -> JsonObject:
    """A bare text chunk (none of the fields vLLM-Omni adds: our client must not need them)."""
    return {
        "object": "chat.completion.chunk",
        "model": model,
        "modality": "text",
        "choices": [{"index": 0, "delta": {"content": content}}],
    }


def audio_chunk(wav: bytes, model: str) -> JsonObject:
    content = base64.b64encode(wav).decode()
    return {
        "object": "chat.completion.chunk",
        "model": model,
        "modality": "audio",
        "choices": [{"index": 0, "delta": {"content": content}}],
    }


def sse(chunk: object) -> bytes:
    return protocol.sse(chunk if isinstance(chunk, str) else json.dumps(chunk))


def gzip_bomb(size: int = BOMB_BYTES) -> bytes:
    """A gzip stream of `size` zero bytes, built in milliseconds: a full flush makes every
    16 MiB block compress to the same bytes, so one block is repeated (no valid trailer: a
    reader that stops at its cap never gets there)."""
    block = bytes(16 << 20)
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = z.compress(block) + z.flush(zlib.Z_FULL_FLUSH)
    body = z.compress(block) + z.flush(zlib.Z_FULL_FLUSH)
    return head + body * (size // len(block) - 1)


def flac_bomb() -> bytes:
    """A small real FLAC whose STREAMINFO declares 50 minutes at 384 kHz × 8 channels."""
    buf = io.BytesIO()
    sf.write(buf, np.zeros((4096, 8), np.float32), 384_000, format="FLAC")
    raw = bytearray(buf.getvalue())
    # STREAMINFO starts at byte 8; total samples are the low 36 bits of bytes 21..25.
    total = 384_000 * 3000
    packed = int.from_bytes(raw[21:26], "big") & ~((1 << 36) - 1) | total
    raw[21:26] = packed.to_bytes(5, "big")
    return bytes(raw)


def _audio(data: bytes) -> dict[str, object]:
    chunk = audio_chunk(b"", MODEL)
    chunk["choices"] = [{"index": 0, "delta": {"content": base64.b64encode(data).decode()}}]
    return chunk


def hostile_app() -> Starlette:
    bomb = gzip_bomb()

    async def models(_: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

    async def chat(request: Request) -> Response:
        body = await request.json()
        said = json.dumps(body["messages"][-1])
        attack = next((a for a in ATTACKS if f"attack {a}" in said), "good")
        headers = {"content-type": "text/event-stream"}
        if attack == "gzip_error":
            return Response(bomb, status_code=500, headers={"content-encoding": "gzip"})
        if attack == "gzip_stream":
            return Response(bomb, headers={**headers, "content-encoding": "gzip"})
        return StreamingResponse(_stream(attack), headers=headers)

    return Starlette(
        routes=[Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])]
    )


def _stream(attack: str) -> Iterator[bytes]:
    if attack == "good":
        yield sse(protocol.transcript_chunk("good clip one two", 1.2, MODEL))
    elif attack == "flac":
        yield sse(_audio(flac_bomb()))
    elif attack == "endless_line":
        yield b"data: "
        for _ in range(96):
            yield b"A" * (1 << 20)
        return
    elif attack == "null_choice":
        yield b'data: {"choices": [null]}\n\n'
    elif attack == "big_int":
        yield b'data: {"choices": [{"delta": {"content": "x"}}], "n": ' + b"9" * 5000 + b"}\n\n"
    elif attack == "deep_json":
        yield b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n"
    elif attack == "content_number":
        yield b'data: {"modality": "audio", "choices": [{"delta": {"content": 123}}]}\n\n'
    elif attack == "huge_text":
        for _ in range(32):
            yield sse(text_chunk("thinking " * 7000, MODEL))
        yield sse(protocol.transcript_chunk("good", 0.4, MODEL))
    yield b"data: [DONE]\n\n"

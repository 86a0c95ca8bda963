"""Synthesis client overhead: requests/s our streaming client sustains against a local server
that answers instantly with a short text + one tiny WAV chunk, beside a plain httpx loop (same
concurrency, same server, same requests, no parsing or bookkeeping) measured in the same run.

    .venv/bin/python bench/bench_client.py [--requests 400] [--concurrency 10]

Prints requests/s for both and the ratio (ours / plain). Not a timed test.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from omni_tasks.dataset import Utterance
from omni_tasks.evidence.audio import wav_bytes, write_audio
from omni_tasks.synthesis import protocol
from omni_tasks.synthesis.client import ClientConfig, synthesize_all
from omni_tasks.synthesis.simulator import serve_in_thread

_WRITER = protocol.StreamWriter("null", "bench", 0, usage=False)
BODY = (
    _WRITER.text("hello", 1)
    + _WRITER.audio(wav_bytes(np.zeros(240, np.float32), 24_000), 24_000)
    + _WRITER.done()
)


async def chat(request: Request) -> Response:
    await request.body()
    return Response(BODY, media_type="text/event-stream")


async def plain_loop(url: str, bodies: list[dict], concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits) as client:

        async def one(body: dict) -> None:
            async with gate, client.stream("POST", url + "/v1/chat/completions", json=body) as r:
                async for _ in r.aiter_lines():
                    pass

        await asyncio.gather(*(one(b) for b in bodies))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--concurrency", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        prompt = Path(tmp) / "p.wav"
        write_audio(str(prompt), np.zeros(24_000, np.float32), 24_000)
        utts = [
            Utterance(f"u{i}", "prompt", prompt, f"Sentence {i}.", i) for i in range(args.requests)
        ]
        template = protocol.prompt_template("seed-tts-default")
        ref = prompt.read_bytes()
        bodies = [
            protocol.request_body(u.target_text, template, seed=1, ref_audio_wav=ref, ref_text="p")
            for u in utts
        ]
        app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
        with serve_in_thread(app) as url:
            cfg = ClientConfig(url, template, seed=1, concurrency=args.concurrency)
            ours, plain = [], []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                results = asyncio.run(synthesize_all(utts, cfg))
                ours.append(time.perf_counter() - t0)
                assert all(r.status == "ok" for r in results)
                t0 = time.perf_counter()
                asyncio.run(plain_loop(url, bodies, args.concurrency))
                plain.append(time.perf_counter() - t0)
    ours_rps, plain_rps = args.requests / min(ours), args.requests / min(plain)
    print(f"{args.requests} requests, concurrency {args.concurrency}, best of {args.repeat}")
    print(f"omni-tasks client : {ours_rps:8.1f} requests/s")
    print(f"plain httpx loop  : {plain_rps:8.1f} requests/s")
    print(f"ratio (ours/plain): {ours_rps / plain_rps:8.2f}")


if __name__ == "__main__":
    main()

"""Stage isolation: the thinker's text alone (`modalities: ["text"]`, so the server runs no
talker and no code2wav), greedy as the nightly's thinker is. Two stacks' thinker texts on the
same clips show whether a regression starts in the thinker (they differ) or after it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import httpx

from omni_tasks.dataset import Utterance
from omni_tasks.harness import OUR_CLIENT
from omni_tasks.synthesis import protocol
from omni_tasks.synthesis.bounded import ResponseRefused, parse_json, sse_events
from omni_tasks.synthesis.client import Malformed, _Stream
from omni_tasks.synthesis.protocol import PromptTemplate
from omni_tasks.trust.names import printable


async def _one(
    client: httpx.AsyncClient,
    url: str,
    utt: Utterance,
    template: PromptTemplate,
    model: str,
    ref_audio: bytes,
) -> str | None:
    body = protocol.request_body(
        utt.target_text, template, model=model, ref_audio_wav=ref_audio, ref_text=utt.prompt_text
    )
    body["modalities"] = ["text"]  # the thinker only
    s = _Stream(cap_s=0.0, rules=OUR_CLIENT)
    try:
        async with client.stream("POST", url.rstrip("/") + "/v1/chat/completions", json=body) as r:
            if r.status_code != 200:
                return None
            async for data in sse_events(r):
                if data != "[DONE]":
                    s.feed(parse_json(data, "stream chunk"))
    except (httpx.HTTPError, Malformed, ResponseRefused, ValueError):
        return None
    return None if s.error else printable("".join(s.text).strip())


def thinker_texts(
    url: str,
    utterances: Sequence[Utterance],
    template: PromptTemplate,
    *,
    model: str = protocol.DEFAULT_MODEL,
    concurrency: int = 10,
    timeout_s: float = 300.0,
) -> dict[str, str | None]:
    """Each utterance's thinker text (None where the request failed)."""

    async def all_of() -> dict[str, str | None]:
        gate = asyncio.Semaphore(concurrency)
        timeout = httpx.Timeout(timeout_s, connect=min(30.0, timeout_s))
        async with httpx.AsyncClient(timeout=timeout) as client:

            async def run(u: Utterance) -> str | None:
                async with gate:
                    ref = await asyncio.to_thread(u.prompt_wav.read_bytes)
                    return await _one(client, url, u, template, model, ref)

            texts = await asyncio.gather(*(run(u) for u in utterances))
        return {u.utt_id: t for u, t in zip(utterances, texts, strict=True)}

    return asyncio.run(all_of())

"""How the simulator co-batches (the batch-variant profile's fault): a request is co-batched
when another request is in flight at the end of its scheduling step, as a continuous-batching
server puts requests that arrive together into one forward pass. A fixed share of items
(`Profile.batch_flip`, the same items at every seed and level) then come back changed; alone,
nothing does. Deterministic given the overlap, so a concurrency-1 run is always clean."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

from omni_tasks.contracts import JsonObject
from omni_tasks.synthesis.profiles import Profile, uniform

SCHEDULING_STEP_S = 0.1  # how long a request waits for others to join its batch


class InFlight:
    """The requests a server is serving now, streams included (one event loop: no lock)."""

    def __init__(self) -> None:
        self.n = 0
        self.admitted = 0
        self.voices: deque[float] = deque(maxlen=8)  # the newest requests' reference voices

    def heard(self, voice: float) -> None:
        """A request's reference voice, for the others in its batch to leak into."""
        self.voices.append(voice)

    def other_voice(self, own: float) -> float:
        """The newest other reference voice of the batch (its own when all are the same)."""
        return next((v for v in reversed(self.voices) if v != own), own)

    async def enter(self, profile: Profile) -> bool:
        """Admit one request; returns whether it is co-batched: another request was in flight
        when it arrived, or arrived or was still in flight during its scheduling step (only a
        batch-variant profile waits the step: the others never answer differently)."""
        self.n += 1
        self.admitted += 1
        mine, others = self.admitted, self.n > 1
        if profile.batch_flip > 0 or profile.batch_voice_leak > 0:
            await asyncio.sleep(SCHEDULING_STEP_S)
        return others or self.n > 1 or self.admitted != mine

    def leave(self) -> None:
        self.n -= 1

    async def until_done(self, body: AsyncIterable[Any]) -> AsyncIterator[Any]:
        """A streamed response's body, leaving when it ends (or the client goes away)."""
        try:
            async for chunk in body:
                yield chunk
        finally:
            self.leave()


def item_key(body: JsonObject) -> str:
    """What identifies an item across runs: its messages (not the seed, model or settings)."""
    messages = json.dumps(body.get("messages", []), sort_keys=True, default=str)
    return hashlib.sha256(messages.encode()).hexdigest()


def planted(profile: Profile, body: JsonObject) -> bool:
    """Whether this item's output changes when co-batched under `profile`."""
    return profile.batch_flip > 0 and uniform("batch_flip", item_key(body)) < profile.batch_flip


def leaks(profile: Profile, body: JsonObject) -> bool:
    """Whether this item's speech is voiced in another request's voice when co-batched."""
    share = profile.batch_voice_leak
    return share > 0 and uniform("batch_voice_leak", item_key(body)) < share


# A co-batched text answer is sampled as if at another seed, until it reads differently (the
# answer a batch-dependent kernel gives); after this many seeds it is left as it was.
RESEED_TRIES = 32
RESEED_STEP = 7919

"""The TTS-model seed-TTS path: `POST /v1/audio/speech`, asked as upstream's
`vllm bench serve --backend openai-audio-speech --endpoint /v1/audio/speech` asks it
(0.32.0rc1: `benchmarks/patch/patch.py: async_request_openai_audio_speech`, with the fields
`data_modules/seed_tts_dataset.py` merges into the body).

The target text is `input`; the reference voice rides as `ref_audio` (a WAV data URL),
`ref_text`, `task_type: Base` and `language`. The answer is streamed raw PCM, 16-bit signed
little-endian, at the rate and channel count the server announces in `X-Audio-Sample-Rate` and
`X-Audio-Channels` (24 kHz mono when it does not, as upstream's fallback without its env
variables). Channels are averaged, as upstream averages them. Upstream sends each request once:
no retries; any answer but 200, a dropped connection or an error while reading fails it. Raw
PCM has no error chunk: a server whose generation fails mid-stream breaks the connection
(`serving_speech.py` re-raises in its stream generator), which fails the request here too.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping
from dataclasses import dataclass

import httpx
import numpy as np

from omni_tasks.contracts import JsonObject
from omni_tasks.evidence.audio import RATES, STORE_RATE, resample
from omni_tasks.records import SynthStatus
from omni_tasks.synthesis.bounded import (
    MAX_ERROR_BODY,
    MAX_STREAM_BYTES,
    ResponseRefused,
    body_pieces,
    read_body,
)
from omni_tasks.trust.names import printable

PATH = "/v1/audio/speech"
RATE_HEADER, CHANNELS_HEADER = "X-Audio-Sample-Rate", "X-Audio-Channels"
DEFAULT_RATE, DEFAULT_CHANNELS = 24_000, 1  # `defs.stream_pcm_format_from_env` with no env
MAX_CHANNELS = 8
# `--output-len` as the seed-TTS dataset passes it (`SeedTTSDataset.DEFAULT_OUTPUT_LEN`).
MAX_NEW_TOKENS = 2048
LANGUAGES = {"en": "English", "zh": "Chinese"}


def speech_body(
    text: str, *, model: str, ref_audio_wav: bytes, ref_text: str, lang: str
) -> JsonObject:
    """The request body, in upstream's order: its payload, then the row's fields merged in."""
    return {
        "model": model,
        "input": text,
        "stream": True,
        "stream_format": "audio",
        "response_format": "pcm",
        "ref_audio": "data:audio/wav;base64," + base64.b64encode(ref_audio_wav).decode("ascii"),
        "ref_text": ref_text,
        "task_type": "Base",
        "language": LANGUAGES.get(lang, "English"),
        "max_new_tokens": MAX_NEW_TOKENS,
    }


class Pcm:
    """The PCM received so far on one answer, in the format its headers announce."""

    def __init__(self, headers: Mapping[str, str], cap_s: float) -> None:
        self.rate = _announced(headers, RATE_HEADER, DEFAULT_RATE)
        self.channels = _announced(headers, CHANNELS_HEADER, DEFAULT_CHANNELS)
        if not RATES[0] <= self.rate <= RATES[1] or self.channels > MAX_CHANNELS:
            raise ResponseRefused(
                f"PCM announced at {self.rate} Hz × {self.channels} channels, which is not read"
            )
        self.data = bytearray()
        self.cap_bytes = int(cap_s * self.rate) * 2 * self.channels

    def feed(self, piece: bytes) -> bool:
        """Take a piece of the body; False once the audio cap is reached (stop reading)."""
        self.data += piece
        return len(self.data) < self.cap_bytes

    @property
    def seconds(self) -> float:
        return min(len(self.data), self.cap_bytes) // (2 * self.channels) / self.rate

    def audio(self) -> np.ndarray | None:
        """24 kHz mono float32 (a partial last frame left out), None when no frame came."""
        frame = 2 * self.channels
        usable = min(len(self.data), self.cap_bytes) // frame * frame
        if not usable:
            return None
        pcm = np.frombuffer(bytes(self.data[:usable]), "<i2").reshape(-1, self.channels)
        mono = pcm.astype(np.float32).mean(axis=1) / 32768.0
        return resample(mono, self.rate, STORE_RATE).astype(np.float32)


def _announced(headers: Mapping[str, str], name: str, fallback: int) -> int:
    """A format header as upstream reads it: an int, else the fallback; at least 1."""
    try:
        return max(int(headers.get(name) or fallback), 1)
    except ValueError:
        return fallback


@dataclass(frozen=True)
class Spoken:
    """How one request ended: its status, the 24 kHz audio heard, and why it failed."""

    status: SynthStatus
    audio: np.ndarray | None
    seconds: float
    detail: str | None


async def speak(
    client: httpx.AsyncClient, url: str, body: JsonObject, *, timeout_s: float, cap_s: float
) -> Spoken:
    """One request, sent once (upstream's rule on every version)."""
    pcm: Pcm | None = None
    status: SynthStatus = "ok"
    detail = None
    try:
        async with asyncio.timeout(timeout_s):
            async with client.stream("POST", url.rstrip("/") + PATH, json=body) as r:
                if r.status_code != 200:
                    said = await read_body(r, MAX_ERROR_BODY, keep_start=True)
                    detail = f"HTTP {r.status_code}: {said.decode('utf-8', 'replace')[:300]}"
                    status = "request_failed"
                else:
                    pcm = Pcm(r.headers, cap_s)
                    async for piece in body_pieces(r, MAX_STREAM_BYTES):
                        if not pcm.feed(piece):
                            status = "over_long"
                            break
    except TimeoutError:
        status = "timeout_partial" if pcm is not None and pcm.data else "timeout_no_output"
        detail = f"no end of stream within {timeout_s:g} s"
    except httpx.TransportError as exc:
        began = " after output had begun" if pcm is not None and pcm.data else ""
        status, detail = "request_failed", f"connection failed{began}: {type(exc).__name__}: {exc}"
    except ResponseRefused as exc:
        status, detail = "request_failed", str(exc)
    except Exception as exc:  # one clip's surprise is that clip's failure, never the run's
        status, detail = "request_failed", f"client error: {type(exc).__name__}: {exc}"
    audio = None if pcm is None else pcm.audio()
    if status == "ok" and audio is None:
        status = "no_audio"
    seconds = 0.0 if pcm is None else pcm.seconds
    return Spoken(status, audio, seconds, None if detail is None else printable(detail[:500]))

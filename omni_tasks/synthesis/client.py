"""Async streaming client for vLLM-Omni's `/v1/chat/completions` (the seed-TTS protocol).

Bounded concurrency, a per-request deadline, a cap on received audio (runaways become
`over_long` instead of waits), retries by the run's harness version (`harness.RetryRule`: which
dropped connections and which 503s are tried again), SSE parsing of thinker text and WAV
chunks, framed by event as vLLM's benchmark client frames them (`bounded.sse_events`; an event
may hold a whole clip). A harness run reads the bytes as that release's client does
(`harness.Reading`: lenient base64, on past `[DONE]`). Every utterance
ends with exactly one status:

    ok                 audio received, stream finished
    over_long          the audio cap was reached; reading stopped (what came is kept)
    no_audio           the stream finished without a usable audio chunk
    timeout_partial    the deadline passed after output had begun
    timeout_no_output  the deadline passed before any output
    request_failed     HTTP error, the connection failed (after the rule's retries), or the
                       server sent an in-stream error chunk
                       (HTTP 200, `data: {"error": …}`): infra whatever audio came before it,
                       as the 0.30 harness counts it
"""

from __future__ import annotations

import asyncio
import io
import time
import wave
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
import numpy as np
import tenacity

from omni_tasks.contracts import JsonObject
from omni_tasks.dataset import Utterance
from omni_tasks.evidence.audio import STORE_RATE, AudioError, decode_wav, resample
from omni_tasks.harness import OUR_CLIENT, ClientRules
from omni_tasks.records import SynthStatus
from omni_tasks.synthesis import protocol, speech
from omni_tasks.synthesis.bounded import (
    MAX_ERROR_BODY,
    ResponseRefused,
    parse_json,
    read_body,
    sse_events,
)
from omni_tasks.synthesis.protocol import PromptTemplate
from omni_tasks.synthesis.stages import StageDefaults
from omni_tasks.trust.names import printable

Endpoint = Literal["chat", "audio-speech"]
ENDPOINTS: tuple[Endpoint, ...] = ("chat", "audio-speech")


@dataclass(frozen=True)
class ClientConfig:
    url: str
    template: PromptTemplate
    model: str = protocol.DEFAULT_MODEL
    seed: int | None = None
    stages: StageDefaults | None = None  # the server's stage defaults (needed to send a seed)
    concurrency: int = 10
    timeout_s: float = 900.0
    audio_cap_s: float = 60.0
    rules: ClientRules = OUR_CLIENT  # the harness's client rules (harness.client_rules)
    # chat: /v1/chat/completions (the omni model); audio-speech: /v1/audio/speech (a TTS
    # model, synthesis/speech.py), which also sends the dataset's language.
    endpoint: Endpoint = "chat"
    lang: str = "en"


@dataclass
class ClipResult:
    """One utterance's outcome; `audio` is 24 kHz mono float32 when any was received."""

    utt: Utterance
    status: SynthStatus
    thinker_text: str = ""
    audio: np.ndarray | None = None
    audio_seconds: float = 0.0
    heard: str | None = None  # transcript mode (simulator) only
    latency_s: float | None = None
    error_detail: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def detail(self) -> str | None:
        parts = ([self.error_detail] if self.error_detail else []) + self.notes
        return printable("; ".join(parts)[:1000]) or None


# Thinker text is evidence, not payload: a server that streams 200 MB of it is cut (and says so).
MAX_TEXT_CHARS = 64 * 1024


class Malformed(Exception):
    """A stream chunk of a shape the protocol does not have."""


class _Stream:
    """What has arrived so far on one response stream."""

    def __init__(self, cap_s: float, rules: ClientRules) -> None:
        self.cap_s, self.rules = cap_s, rules
        self.visible = False  # output the retry rule counts as seen (ClientRules.any_visible)
        self.wav_params: tuple[int, int, int] | None = None
        self.text: list[str] = []
        self.frames: list[np.ndarray] = []
        self.heard: list[str] = []
        self.seconds = 0.0
        self.rate: int | None = None
        self.dropped = 0
        self.any_output = False
        self.transcript = False
        self.error: str | None = None
        self.unavailable = True  # every error chunk so far was a retryable 503
        self.chars = 0
        self.text_cut = False

    def feed(self, chunk: Any) -> bool:
        """Take one SSE chunk; False once the audio cap is reached (stop reading). A chunk of
        the wrong shape raises Malformed (the clip fails with the reason; the run goes on)."""
        if not isinstance(chunk, dict):
            raise Malformed(f"a chunk that is a JSON {type(chunk).__name__}, not an object")
        if (error := chunk.get("error")) is not None:
            if not self.rules.error_chunks:  # 0.28's client never looked at them
                return True
            message = error.get("message") if isinstance(error, dict) else None
            self.error = str(message or error)[:500]
            self.unavailable &= _retryable_503(error)
            return True
        choices = chunk.get("choices") or [{}]
        if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
            raise Malformed("'choices' is not a list of objects")
        self.visible |= self.rules.any_visible and any(_visible(c) for c in choices)
        delta = choices[0].get("delta") or {}
        audio = (delta.get("audio") or {}) if isinstance(delta, dict) else None
        if not isinstance(delta, dict) or not isinstance(audio, dict):
            raise Malformed("'delta' (or its 'audio') is not an object")
        content, modality = delta.get("content"), chunk.get("modality")
        if not isinstance(content, str | None) or not isinstance(modality, str | None):
            raise Malformed("'content' or 'modality' is not text")
        if modality == "audio":
            data = content or audio.get("data")
            if not isinstance(data, str | None):
                raise Malformed("the audio data is not text")
            if data:
                self.any_output = True
                self.visible |= not self.rules.any_visible
                self._audio(data)
        elif modality == "transcript":
            seconds = chunk.get("audio_seconds", 0.0)
            if isinstance(seconds, bool) or not isinstance(seconds, int | float):
                raise Malformed("'audio_seconds' is not a number")
            self.any_output = self.transcript = True
            self.visible |= not self.rules.any_visible
            self._text(self.heard, content or "")
            self.seconds += min(max(float(seconds), 0.0), self.cap_s)
        elif content:
            self.any_output = True
            self.visible |= not self.rules.any_visible
            self._text(self.text, content)
        return self.seconds < self.cap_s

    def _text(self, into: list[str], text: str) -> None:
        """Thinker text (and a simulator's transcript) up to MAX_TEXT_CHARS; the rest is cut."""
        room = MAX_TEXT_CHARS - self.chars
        if len(text) > room:
            self.text_cut = True
            text = text[: max(room, 0)]
        self.chars += len(text)
        if text:
            into.append(text)

    def _audio(self, data: str) -> None:
        import base64
        import binascii

        lenient = self.rules.reading.lenient_base64
        try:
            raw = base64.b64decode(data, validate=not lenient)
        except binascii.Error as exc:
            # Lenient, as the harness decodes: stray characters skipped, and outside the chunk's
            # try, so a chunk that still does not decode fails the request (never retried).
            if lenient:
                raise Malformed(f"an audio chunk that is not base64 ({exc})") from None
            self.dropped += 1
            return
        try:
            if self.rules.strict_wav:  # read as the harness reads it: Python's wave, PCM only
                with wave.open(io.BytesIO(raw), "rb") as w:
                    params = (w.getnchannels(), w.getsampwidth(), w.getframerate())
                if self.wav_params is None:
                    self.wav_params = params
                elif params != self.wav_params:  # dropped, as the harness drops it
                    self.dropped += 1
                    return
            samples, rate = decode_wav(raw, "audio chunk")
        except (AudioError, ValueError, EOFError, wave.Error):
            self.dropped += 1
            return
        if self.rate is None:
            self.rate = rate
        elif rate != self.rate:  # the harness drops chunks whose format differs from the first
            self.dropped += 1
            return
        self.frames.append(samples)
        self.seconds += len(samples) / rate

    def audio(self) -> np.ndarray | None:
        if not self.frames or self.rate is None:
            return None
        samples = resample(np.concatenate(self.frames), self.rate, STORE_RATE)
        return samples[: int(self.cap_s * STORE_RATE)]


def _finish(utt: Utterance, s: _Stream, status: SynthStatus, started: float) -> ClipResult:
    audio = s.audio()
    if status == "ok" and audio is None and not s.transcript:
        status = "no_audio"
    result = ClipResult(
        utt,
        status,
        thinker_text=printable("".join(s.text).strip()),
        audio=audio,
        audio_seconds=min(s.seconds, s.cap_s),
        heard=printable(" ".join(s.heard).strip()) if s.transcript else None,
        latency_s=time.monotonic() - started,
    )
    if s.dropped:
        result.notes.append(f"dropped {s.dropped} audio chunk(s) that were not WAV like the first")
    if s.text_cut:
        result.notes.append(f"thinker text cut at {MAX_TEXT_CHARS} characters")
    return result


async def synthesize_one(
    client: httpx.AsyncClient, cfg: ClientConfig, utt: Utterance, ref_audio: bytes | None
) -> ClipResult:
    body = protocol.request_body(
        utt.target_text,
        cfg.template,
        model=cfg.model,
        seed=cfg.seed,
        stages=cfg.stages,
        ref_audio_wav=ref_audio,
        ref_text=utt.prompt_text,
    )
    tries, rule = 0, cfg.rules.retry

    async def once() -> ClipResult:
        nonlocal tries
        tries += 1
        started, s = time.monotonic(), _Stream(cfg.audio_cap_s, cfg.rules)

        def failed(status: SynthStatus, detail: str) -> ClipResult:
            result = _finish(utt, s, status, started)
            result.error_detail = detail[:500]
            return result

        try:
            async with asyncio.timeout(cfg.timeout_s):
                status = await _read(client, cfg, body, s)
        except TimeoutError:
            status = "timeout_partial" if s.any_output else "timeout_no_output"
            return failed(status, f"no end of stream within {cfg.timeout_s:g} s")
        except _HTTPError as exc:
            if exc.unavailable and rule.unavailable:
                refused = _tried(tries, str(exc), "refused (503)")
                raise _Retry(lambda: failed("request_failed", refused)) from exc
            return failed("request_failed", str(exc))
        except (ResponseRefused, Malformed) as exc:
            return failed("request_failed", str(exc))
        except httpx.TransportError as exc:
            why = f"{type(exc).__name__}: {exc}"
            if s.visible and not rule.after_output:
                return failed("request_failed", f"connection failed after output had begun: {why}")
            what = "connection failed" + (" after output had begun" if s.any_output else "")
            raise _Retry(lambda: failed("request_failed", _tried(tries, why, what))) from exc
        except Exception as exc:  # one clip's surprise is that clip's failure, never the run's
            return failed("request_failed", f"client error: {type(exc).__name__}: {exc}")
        if s.error is not None:  # HTTP 200 with an error chunk: failed, whatever audio came
            why = f"in-stream error from the server: {s.error}"
            if s.unavailable and rule.unavailable and not s.visible:
                raise _Retry(lambda: failed("request_failed", _tried(tries, why, "refused (503)")))
            return failed("request_failed", why)
        result = _finish(utt, s, status, started)
        if tries > 1:
            result.notes.append(f"scored on attempt {tries} ({rule.name} retries)")
        return result

    wait = (
        tenacity.wait_incrementing(start=rule.delay_s, increment=rule.delay_s)
        if rule.incrementing
        else tenacity.wait_fixed(rule.delay_s)
    )
    retrying = tenacity.AsyncRetrying(
        retry=tenacity.retry_if_exception_type(_Retry),
        stop=tenacity.stop_after_attempt(rule.retries + 1),
        wait=wait,
        reraise=True,
    )
    try:
        result: ClipResult = await retrying(once)
    except _Retry as last:
        result = last.result()
    return result


async def speak_one(
    client: httpx.AsyncClient, cfg: ClientConfig, utt: Utterance, ref_audio: bytes | None
) -> ClipResult:
    """One utterance over a TTS model's `/v1/audio/speech` (synthesis/speech.py)."""
    started = time.monotonic()
    body = speech.speech_body(
        utt.target_text,
        model=cfg.model,
        ref_audio_wav=ref_audio or b"",
        ref_text=utt.prompt_text,
        lang=cfg.lang,
    )
    got = await speech.speak(client, cfg.url, body, timeout_s=cfg.timeout_s, cap_s=cfg.audio_cap_s)
    return ClipResult(
        utt,
        got.status,
        audio=got.audio,
        audio_seconds=got.seconds,
        latency_s=time.monotonic() - started,
        error_detail=got.detail,
    )


def _visible(choice: JsonObject) -> bool:
    """0.32's "visible choice": token ids, text or a message, or any delta key but `role`."""
    delta = choice.get("delta") or {}
    return bool(
        choice.get("token_ids")
        or choice.get("text")
        or choice.get("message")
        or (isinstance(delta, dict) and any(v for k, v in delta.items() if k != "role"))
    )


def _tried(tries: int, why: str, what: str) -> str:
    return f"{what} on all {tries} attempt(s): {why}"


def _retryable_503(error: Any) -> bool:
    """vllm-omni's retryable refusal (an mm-cache miss): `_is_retryable_omni_error`."""
    return (
        isinstance(error, dict)
        and error.get("type") == "ServiceUnavailableError"
        and error.get("code") == 503
    )


class _Retry(Exception):
    """An attempt the retry rule tries again; `result` is the clip's outcome if it was the
    last."""

    def __init__(self, result: Callable[[], ClipResult]) -> None:
        super().__init__("retryable failure")
        self.result = result


class _HTTPError(Exception):
    def __init__(self, message: str, unavailable: bool = False) -> None:
        super().__init__(message)
        self.unavailable = unavailable  # a 503 ServiceUnavailableError (retryable from 0.32)


async def _read(
    client: httpx.AsyncClient, cfg: ClientConfig, body: JsonObject, s: _Stream
) -> SynthStatus:
    async with client.stream("POST", cfg.url.rstrip("/") + "/v1/chat/completions", json=body) as r:
        if r.status_code != 200:
            said = await read_body(r, MAX_ERROR_BODY, keep_start=True)
            unavailable = False
            if r.status_code == 503:
                try:
                    doc = parse_json(said, "error body")
                except ResponseRefused:  # a 503 without a JSON body is not the retryable one
                    doc = None
                unavailable = isinstance(doc, dict) and _retryable_503(doc.get("error"))
            text = said.decode("utf-8", "replace")[:300]
            raise _HTTPError(f"HTTP {r.status_code}: {text}", unavailable)
        async for data in sse_events(r):
            if data == "[DONE]":
                if cfg.rules.reading.past_done:  # the harness skips it and reads to the body's end
                    continue
                return "ok"
            if not s.feed(parse_json(data, "stream chunk")):
                return "over_long"
    return "ok"  # stream closed without [DONE]: what arrived decides (no audio -> no_audio)


async def synthesize_all(
    utterances: Sequence[Utterance],
    cfg: ClientConfig,
    *,
    on_done: Callable[[ClipResult], None] | None = None,
) -> list[ClipResult]:
    """Synthesize every utterance (at most `concurrency` in flight); results in input order."""
    n = cfg.concurrency
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    timeout = httpx.Timeout(cfg.timeout_s, connect=min(30.0, cfg.timeout_s))
    gate = asyncio.Semaphore(cfg.concurrency)
    prompts: dict[str, bytes] = {}
    one = speak_one if cfg.endpoint == "audio-speech" else synthesize_one

    async def run(client: httpx.AsyncClient, utt: Utterance) -> ClipResult:
        async with gate:
            key = str(utt.prompt_wav)
            if key not in prompts:
                prompts[key] = await asyncio.to_thread(utt.prompt_wav.read_bytes)
            result = await one(client, cfg, utt, prompts[key])
        if on_done:
            on_done(result)
        return result

    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        return list(await asyncio.gather(*(run(client, u) for u in utterances)))

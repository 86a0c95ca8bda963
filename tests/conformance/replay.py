"""Replay cases: scripted server answers that each exercise one of the client's rules
(`omni_tasks.harness.ClientRules`), played to upstream's released request function and to
ours under a harness row; the two must end alike (same success, same number of requests,
same text and samples).

A case is data, so the same table drives the per-version suite (`test_client_rules.py`), the
mutation check (`test_mutants.py`: an upstream client with one rule edited must disagree on
some case) and `make conformance-latest`'s verdict on a release that has no harness row yet
(`verdict`: the cases run against the nearest row).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import io
import json
import socket
import threading
import wave
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from omni_tasks.dataset import Utterance
from omni_tasks.evidence.audio import STORE_RATE, wav_bytes, write_audio
from omni_tasks.harness import LONGEST_CLIP_S, ClientRules
from omni_tasks.synthesis import protocol
from omni_tasks.synthesis.client import ClientConfig, ClipResult, synthesize_all
from tests.conformance.conftest import harness_request, nearest_row
from tests.conformance.upstream import Upstream

MODEL = "Qwen/Qwen3-Omni-30B-A3B-Instruct"
TEXT = "Turn left at the second light."
OK_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
TONE = (0.2 * np.sin(np.arange(STORE_RATE // 4) / 7)).astype(np.float32)  # 0.25 s


# The server ----------------------------------------------------------------------------------
class ScriptedServer:
    """A plain TCP server: request i gets `answers[i]` (the last one repeats), a whole raw
    HTTP/1.1 answer written at once or `piece` bytes at a time (each its own TCP segment),
    then the connection closes. `requests` counts what it was asked."""

    def __init__(self, answers: Sequence[bytes], piece: int | None = None) -> None:
        self.answers, self.piece = list(answers), piece
        self.requests = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            conn, _ = self._sock.accept()
            with conn:
                if self._stop.is_set():
                    return
                if not _read_request(conn):
                    continue
                answer = self.answers[min(self.requests, len(self.answers) - 1)]
                self.requests += 1
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                step = self.piece or len(answer)
                try:
                    for i in range(0, len(answer), step):
                        conn.sendall(answer[i : i + step])
                except OSError:  # the client gave up reading (a bound, a failed chunk)
                    continue

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        socket.create_connection(self._sock.getsockname()).close()  # wakes accept()
        self._thread.join(5)
        self._sock.close()


def _read_request(conn: socket.socket) -> bool:
    """Reads one request (headers and its Content-Length body); False if none came."""
    data = b""
    while b"\r\n\r\n" not in data:
        got = conn.recv(65536)
        if not got:
            return False
        data += got
    head, rest = data.split(b"\r\n\r\n", 1)
    length = next(
        (
            int(h.split(b":")[1])
            for h in head.split(b"\r\n")
            if h.lower().startswith(b"content-length")
        ),
        0,
    )
    while len(rest) < length:
        rest += conn.recv(65536)
    return True


# The two clients -----------------------------------------------------------------------------
def body(prompt_wav: Path, text: str = TEXT) -> dict[str, Any]:
    return protocol.request_body(
        text,
        protocol.prompt_template("seed-tts-default"),
        ref_audio_wav=prompt_wav.read_bytes(),
        ref_text="a prompt",
    )


def our_client(
    url: str, prompt_wav: Path, rules: ClientRules, text: str = TEXT, audio_cap_s: float = 60.0
) -> ClipResult:
    cfg = ClientConfig(
        url, protocol.prompt_template("seed-tts-default"), rules=rules, audio_cap_s=audio_cap_s
    )
    (result,) = asyncio.run(synthesize_all([Utterance("u0", "a prompt", prompt_wav, text, 1)], cfg))
    return result


def pcm16(result: ClipResult) -> np.ndarray:
    assert result.audio is not None
    return np.round(result.audio * 32768).astype(np.int32)


def same_audio(ours: ClipResult, theirs: np.ndarray | None) -> None:
    assert theirs is not None
    mine = pcm16(ours)
    assert mine.size == theirs.size
    assert np.abs(mine - theirs.astype(np.int32)).max() <= 1  # float round trips, one LSB


@dataclass
class Outcome:
    """How one client ended a case: what the grader would be handed."""

    success: bool
    requests: int
    text: str
    pcm: np.ndarray | None  # int32 on the int16 scale, 24 kHz
    detail: str

    @property
    def audio_s(self) -> float | None:
        return None if self.pcm is None else self.pcm.size / STORE_RATE


def ours(case: Case, rules: ClientRules, prompt_wav: Path) -> Outcome:
    """Our client under `rules`, hearing as much audio as a harness run does."""
    with ScriptedServer(case.answers(), case.piece) as server:
        got = our_client(server.url, prompt_wav, rules, audio_cap_s=LONGEST_CLIP_S)
    return Outcome(
        # A stream without usable audio is the harness's success without PCM.
        got.status in ("ok", "no_audio"),
        server.requests,
        got.thinker_text,
        None if got.audio is None else pcm16(got),
        f"{got.status}: {got.detail}",
    )


def theirs(case: Case, upstream: Upstream, prompt_wav: Path) -> Outcome:
    """Upstream's own request function, set up as the seed-TTS nightly sets it."""
    with ScriptedServer(case.answers(), case.piece) as server:
        got = harness_request(upstream, server.url, body(prompt_wav))
    return Outcome(
        got.success,
        server.requests,
        got.text.strip(),
        None if got.pcm is None else got.pcm.astype(np.int32),
        got.error.strip().splitlines()[-1][:300] if got.error.strip() else "",
    )


def differences(mine: Outcome, their: Outcome) -> list[str]:
    """Where our outcome is not upstream's; empty when they agree."""
    out = []
    if mine.requests != their.requests:
        out.append(f"requests: ours {mine.requests}, upstream's {their.requests}")
    if mine.success != their.success:
        out.append(f"success: ours {mine.success} ({mine.detail}), upstream's {their.success}")
        out[-1] += f" ({their.detail})" if their.detail else ""
    elif mine.success:
        if mine.text != their.text:
            out.append(f"text: ours {mine.text!r}, upstream's {their.text!r}")
        if mine.audio_s != their.audio_s:
            out.append(f"audio seconds: ours {mine.audio_s}, upstream's {their.audio_s}")
        elif (
            mine.pcm is not None
            and their.pcm is not None
            and np.abs(mine.pcm - their.pcm).max() > 1  # float round trips: one LSB
        ):
            out.append("samples differ")
    return out


class Replay:
    """The cases against one harness row's rules: our outcomes are computed once (they do not
    depend on which upstream client they are compared with)."""

    def __init__(self, rules: ClientRules, prompt_wav: Path, cases: Sequence[Case]) -> None:
        self.rules, self.prompt_wav, self.cases = rules, prompt_wav, cases
        self._ours: dict[str, Outcome] = {}

    def disagreeing(self, upstream: Upstream, first_only: bool = False) -> list[str]:
        """The names of the cases `upstream`'s client ends otherwise than ours; with
        `first_only`, stops at the first."""
        out = []
        for case in self.cases:
            if case.name not in self._ours:
                self._ours[case.name] = ours(case, self.rules, self.prompt_wav)
            if differences(self._ours[case.name], theirs(case, upstream, self.prompt_wav)):
                out.append(case.name)
                if first_only:
                    break
        return out


def verdict(version: str, disagreeing: Sequence[str]) -> str:
    """What a replay of every case says about `version`, in the terms a maintainer acts on:
    a missing row is not a changed rule."""
    row = nearest_row(version)
    except_ = f" except: {', '.join(disagreeing)}" if disagreeing else ""
    if row != version:
        return f"no harness row for {version}; the replayed rules agree with {row}{except_}"
    if disagreeing:
        return (
            f"{version}: the replayed rules disagree with its harness row: {', '.join(disagreeing)}"
        )
    return f"{version}: the replayed rules agree with its harness row"


# The cases -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """Scripted answers and the `ClientRules` field they exercise. `expect`: how our client
    ends it under 0.32.0rc1's rules — (success, requests, seconds of audio when it succeeds)
    — written out, so a case that exercises nothing (both clients failing alike on a broken
    script) is caught."""

    name: str
    rule: str
    answers: Callable[[], tuple[bytes, ...]]
    expect: tuple[bool, int, float | None]
    piece: int | None = None
    slow: bool = False  # a large stream (seconds, not milliseconds, per client)


def _writer() -> protocol.StreamWriter:
    return protocol.StreamWriter(MODEL, "chatcmpl-r", 1764547200, usage=True, prompt_tokens=57)


def server_stream(error_mid_audio: bool = False) -> bytes:
    """One response as serving_chat.py writes it (0.30.0, chat_completion_stream_generator):
    thinker text, then two 0.25 s WAV chunks (or one and an error chunk)."""
    w = _writer()
    chunks = [
        w.role("text"),
        w.text("Turn left ", 3),
        w.text("at the light.", 4, "stop"),
        w.role("audio"),
        w.audio(wav_bytes(TONE, STORE_RATE), STORE_RATE),
    ]
    if error_mid_audio:
        chunks.append(w.error("EngineCore encountered an issue"))
    else:
        chunks.append(w.audio(wav_bytes(TONE[::-1].copy(), STORE_RATE), STORE_RATE, "stop"))
        chunks.append(w.final_usage())
    chunks.append(w.done())
    return b"".join(chunks)


def _chunk(modality: str | None, choices: list[Any]) -> bytes:
    doc: dict[str, Any] = {"id": "chatcmpl-r", "object": "chat.completion.chunk", "model": MODEL}
    if modality is not None:
        doc["modality"] = modality
    return protocol.sse({**doc, "choices": choices})


def _dropped(part: bytes) -> bytes:
    """A chunked body that closes mid-body after `part`: a dropped connection."""
    return (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        + f"{len(part) + 100:x}\r\n".encode()
        + part
    )


def _http(status: str, doc: Any) -> bytes:
    raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n".encode()
        + f"content-length: {len(raw)}\r\nconnection: close\r\n\r\n".encode()
        + raw
    )


UNAVAILABLE = {"message": "mm cache miss", "type": "ServiceUnavailableError", "code": 503}
RATE_LIMITED = {"message": "too many requests", "type": "RateLimitError", "code": 429}
ENGINE_DEAD = {"message": "EngineCore died", "type": "InternalServerError", "code": 500}
HTTP_503 = _http("503 Service Unavailable", {"error": UNAVAILABLE})
STREAM = OK_HEAD + server_stream()


def _then_stream(*first: bytes) -> Callable[[], tuple[bytes, ...]]:
    return lambda: (*first, STREAM)


def _reasoning() -> bytes:
    """A reasoning delta: visible to 0.32, neither text nor audio."""
    delta = {"reasoning_content": "Let me think."}
    return _writer().role("text") + _chunk("text", [{"index": 0, "delta": delta}])


def _second_choice() -> bytes:
    """Text on a second choice (n > 1) only."""
    return _chunk(
        "text",
        [{"index": 0, "delta": {"role": "assistant"}}, {"index": 1, "delta": {"content": "Turn"}}],
    )


def _audio_stream(encoded: list[str], after_done: bytes = b"") -> bytes:
    """Thinker text, then audio chunks carrying `encoded` (base64 as the server sent it)."""
    w = _writer()
    audio = [
        _chunk("audio", [{"index": 0, "delta": {"role": "assistant", "content": data}}])
        for data in encoded
    ]
    head = [w.role("text"), w.text("Turn left at the light.", 4, "stop"), w.role("audio")]
    return OK_HEAD + b"".join([*head, *audio, w.done(), after_done])


def _b64(wav: bytes) -> str:
    return base64.b64encode(wav).decode()


def _wav_of(samples: np.ndarray, rate: int, channels: int = 1, width: int = 2) -> bytes:
    """A WAV chunk in the given PCM layout (width 2: int16, width 4: int32)."""
    data = np.repeat(samples[:, None], channels, axis=1)
    pcm = (data * (32767 if width == 2 else 2**31 - 1)).astype("<i2" if width == 2 else "<i4")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())
    return buf.getvalue()


def _float_wav(samples: np.ndarray, rate: int) -> bytes:
    """An IEEE-float WAV chunk (format 3), as soundfile writes it."""
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, samples, rate, format="WAV", subtype="FLOAT")
    return buf.getvalue()


def _layout(*wavs: bytes) -> Callable[[], tuple[bytes, ...]]:
    return lambda: (_audio_stream([_b64(w) for w in wavs]),)


def _wrapped() -> tuple[bytes, ...]:
    """Base64 as MIME writes it (a newline every 76 characters): a lenient decoder skips the
    newlines, a strict one refuses the chunk."""
    one, two = _b64(wav_bytes(TONE, STORE_RATE)), _b64(wav_bytes(TONE[::-1].copy(), STORE_RATE))
    wrapped = "\n".join(two[i : i + 76] for i in range(0, len(two), 76))
    return (_audio_stream([one, wrapped]),)


def _cut_short() -> tuple[bytes, ...]:
    """An audio chunk whose base64 lost its last character: no decoder reads it."""
    one, two = _b64(wav_bytes(TONE, STORE_RATE)), _b64(wav_bytes(TONE[::-1].copy(), STORE_RATE))
    return (_audio_stream([one, two[:-1]]),)


def _past_done() -> tuple[bytes, ...]:
    """Text and a second audio chunk after `[DONE]` (then the body ends)."""
    w = _writer()
    after = w.text(" Then stop.", 3) + w.audio(wav_bytes(TONE[::-1].copy(), STORE_RATE), STORE_RATE)
    return (_audio_stream([_b64(wav_bytes(TONE, STORE_RATE))], after + w.done()),)


LONG_CLIP_S = 300.0


@functools.cache
def one_long_chunk() -> tuple[bytes, ...]:
    """A 300 s clip in one audio chunk, as a server with `async_chunk: false` sends it (a
    19 MB event: above the 16 MiB line bound our client once had)."""
    n = int(LONG_CLIP_S * STORE_RATE)
    clip = np.resize(TONE, n)
    return (_audio_stream([_b64(wav_bytes(clip, STORE_RATE))]),)


def _visible_then_drop(name: str, part: bytes) -> Case:
    return Case(
        f"{name}, then a drop", "any_visible", _then_stream(_dropped(part)), (False, 1, None)
    )


_TOOL_CALL = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "say"}}
_ERROR_MID_AUDIO = OK_HEAD + server_stream(error_mid_audio=True)
_IN_STREAM_503 = OK_HEAD + _writer().role("text") + protocol.sse({"error": UNAVAILABLE})
_IN_STREAM_503 += protocol.sse("[DONE]")
_STREAM_PARTS = server_stream().split(b"\n\n")
_MID_AUDIO = b"\n\n".join(_STREAM_PARTS[:5]) + b"\n\n" + _STREAM_PARTS[5][:40]


def _framed(edit: Callable[[bytes], bytes]) -> Callable[[], tuple[bytes, ...]]:
    """The whole stream, its SSE bytes edited (the HTTP head kept)."""
    return lambda: (OK_HEAD + edit(server_stream()),)


_FIRST_EVENT = len(_writer().role("text"))
FRAMING: tuple[tuple[str, Callable[[bytes], bytes], tuple[bool, int, float | None]], ...] = (
    # A keep-alive comment between events is skipped.
    (
        "a comment between events",
        lambda b: b[:_FIRST_EVENT] + b": ping\n\n" + b[_FIRST_EVENT:],
        (True, 1, 0.5),
    ),
    # The last audio event without its blank line (and no [DONE]): taken, being whole JSON.
    (
        "the last event without its blank line",
        lambda b: b"\n\n".join(_STREAM_PARTS[:6]),
        (True, 1, 0.5),
    ),
    # The body ends mid-event: the partial event is dropped, what came before is scored.
    ("the body ends mid-event", lambda b: _MID_AUDIO, (True, 1, 0.25)),
    # CRLF ends no event: nothing is framed, the stream is a success without output.
    ("events ended by CRLF", lambda b: b.replace(b"\n", b"\r\n"), (True, 1, None)),
    # `data:` without its space, two data lines, an `event:` line: payloads that are not JSON.
    ("data: without its space", lambda b: b.replace(b"data: ", b"data:"), (False, 1, None)),
    (
        "an event of two data lines",
        lambda b: b.replace(b"\n\ndata: ", b"\ndata: ", 1),
        (False, 1, None),
    ),
    (
        "an event: line before data",
        lambda b: b.replace(b"data: ", b"event: chunk\ndata: ", 1),
        (False, 1, None),
    ),
)


CASES: tuple[Case, ...] = (
    # What counts as output already seen (0.32: any choice's token_ids, text or message, or a
    # delta key but `role`): seen output is never replayed; a role alone is not output.
    _visible_then_drop(
        "token_ids", _chunk("text", [{"index": 0, "delta": {}, "token_ids": [9906]}])
    ),
    _visible_then_drop("a choice's text", _chunk(None, [{"index": 0, "text": "Turn"}])),
    _visible_then_drop(
        "a choice's message",
        _chunk(None, [{"index": 0, "message": {"role": "assistant", "content": "Turn"}}]),
    ),
    _visible_then_drop(
        "a tool call", _chunk("text", [{"index": 0, "delta": {"tool_calls": [_TOOL_CALL]}}])
    ),
    _visible_then_drop("a reasoning delta", _reasoning()),
    _visible_then_drop("a second choice's text", _second_choice()),
    _visible_then_drop("text and audio", _MID_AUDIO),
    Case(
        "a role-only delta, then a drop",
        "any_visible",
        _then_stream(_dropped(_writer().role("text"))),
        (True, 2, 0.5),
    ),
    Case(
        "a reasoning delta, then a 503 in-stream",
        "any_visible",
        _then_stream(OK_HEAD + _reasoning() + protocol.sse({"error": UNAVAILABLE})),
        (False, 1, None),
    ),
    Case(
        "a second choice's text, then a 503 in-stream",
        "any_visible",
        _then_stream(OK_HEAD + _second_choice() + protocol.sse({"error": UNAVAILABLE})),
        (False, 1, None),
    ),
    # How often: 3 retries (4 attempts), for a refusal and for a drop before output.
    Case("503 twice", "retry.retries", _then_stream(HTTP_503, HTTP_503), (True, 3, 0.5)),
    Case("503 four times", "retry.retries", _then_stream(*[HTTP_503] * 4), (False, 4, None)),
    Case(
        "a drop before output twice",
        "retry.retries",
        _then_stream(_dropped(b""), _dropped(b"")),
        (True, 3, 0.5),
    ),
    Case(
        "a drop before output four times",
        "retry.retries",
        _then_stream(*[_dropped(b"")] * 4),
        (False, 4, None),
    ),
    # Which refusals: only the server's retryable 503 (ServiceUnavailableError, code 503).
    Case(
        "a 503 ServiceUnavailableError", "retry.unavailable", _then_stream(HTTP_503), (True, 2, 0.5)
    ),
    Case("a 503 in-stream", "retry.unavailable", _then_stream(_IN_STREAM_503), (True, 2, 0.5)),
    Case(
        "a 429",
        "retry.unavailable",
        _then_stream(_http("429 Too Many Requests", {"error": RATE_LIMITED})),
        (False, 1, None),
    ),
    Case(
        "a 500",
        "retry.unavailable",
        _then_stream(_http("500 Internal Server Error", {"error": ENGINE_DEAD})),
        (False, 1, None),
    ),
    Case(
        "a 503 of another type",
        "retry.unavailable",
        _then_stream(
            _http("503 Service Unavailable", {"error": {**UNAVAILABLE, "type": "Overloaded"}})
        ),
        (False, 1, None),
    ),
    Case(
        "a 503 without a JSON body",
        "retry.unavailable",
        _then_stream(_http("503 Service Unavailable", b"upstream connect error")),
        (False, 1, None),
    ),
    # An error chunk fails the request, whatever audio came (0.30 on).
    Case("an error chunk mid-audio", "error_chunks", lambda: (_ERROR_MID_AUDIO,), (False, 1, None)),
    Case(
        "an error chunk mid-audio, in 13-byte pieces",
        "error_chunks",
        lambda: (_ERROR_MID_AUDIO,),
        (False, 1, None),
        piece=13,
    ),
    # Which audio chunks are kept: PCM WAV like the first.
    Case(
        "a float WAV chunk between PCM ones",
        "strict_wav",
        _layout(
            _wav_of(TONE, STORE_RATE),
            _float_wav(TONE[::-1].copy(), STORE_RATE),
            _wav_of(TONE, STORE_RATE),
        ),
        (True, 1, 0.5),
    ),
    Case(
        "a stereo chunk between mono ones",
        "strict_wav",
        _layout(
            _wav_of(TONE, STORE_RATE),
            _wav_of(TONE, STORE_RATE, channels=2),
            _wav_of(TONE[::-1].copy(), STORE_RATE),
        ),
        (True, 1, 0.5),
    ),
    Case(
        "a 32-bit chunk between 16-bit ones",
        "strict_wav",
        _layout(
            _wav_of(TONE, STORE_RATE),
            _wav_of(TONE, STORE_RATE, width=4),
            _wav_of(TONE[::-1].copy(), STORE_RATE),
        ),
        (True, 1, 0.5),
    ),
    # How the bytes are read.
    Case("base64 wrapped at 76 characters", "reading.lenient_base64", _wrapped, (True, 1, 0.5)),
    Case("base64 one character short", "reading.lenient_base64", _cut_short, (False, 1, None)),
    Case("[DONE], then more text and audio", "reading.past_done", _past_done, (True, 1, 0.5)),
    # How events are framed (vLLM's StreamedResponseHandler).
    *(Case(name, "framing", _framed(edit), expect) for name, edit, expect in FRAMING),
    # How large an event may be: a whole clip.
    Case(
        f"a {LONG_CLIP_S:g} s clip in one chunk",
        "bounds",
        one_long_chunk,
        (True, 1, LONG_CLIP_S),
        slow=True,
    ),
)


def write_prompt(directory: Path) -> Path:
    """A reference-voice WAV for the request body."""
    path = directory / "prompt.wav"
    write_audio(str(path), np.full(2400, 0.05, np.float32), 24_000)
    return path

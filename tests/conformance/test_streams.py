"""(b) Upstream's own benchmark request function against our simulator gets the text and audio
our client gets. (c) Streams shaped as upstream's server emits them (role chunks, continuous
usage, audio metadata, finish_reason, a final usage chunk, an error chunk mid-audio), replayed
whole and in small TCP pieces, are read identically by our client and by upstream's."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from omni_tasks.dataset import Utterance
from omni_tasks.evidence.audio import STORE_RATE, wav_bytes
from omni_tasks.harness import ClientRules, RetryRule, client_rules
from omni_tasks.synthesis import protocol
from omni_tasks.synthesis.client import ClientConfig, ClipResult, synthesize_all
from omni_tasks.synthesis.simulator import SimulatorConfig, running_simulator
from tests.conformance.conftest import HarnessResult, harness_request
from tests.conformance.upstream import Upstream

TEXT = "Turn left at the second light."


NO_RETRY = ClientRules(RetryRule("none", retries=0, delay_s=0.0))


def our_client(
    url: str, prompt_wav: Path, text: str = TEXT, rules: ClientRules = NO_RETRY
) -> ClipResult:
    cfg = ClientConfig(url, protocol.prompt_template("seed-tts-default"), rules=rules)
    (result,) = asyncio.run(synthesize_all([Utterance("u0", "a prompt", prompt_wav, text, 1)], cfg))
    return result


def body(prompt_wav: Path, text: str = TEXT) -> dict:  # type: ignore[type-arg]
    return protocol.request_body(
        text,
        protocol.prompt_template("seed-tts-default"),
        ref_audio_wav=prompt_wav.read_bytes(),
        ref_text="a prompt",
    )


def pcm16(result: ClipResult) -> np.ndarray:
    assert result.audio is not None
    return np.round(result.audio * 32768).astype(np.int32)


def same_audio(ours: ClipResult, theirs: np.ndarray | None) -> None:
    assert theirs is not None
    mine = pcm16(ours)
    assert mine.size == theirs.size
    assert np.abs(mine - theirs.astype(np.int32)).max() <= 1  # float round trips, one LSB


# (b) ------------------------------------------------------------------------------------------
def test_b_upstreams_request_function_hears_what_our_client_hears(
    upstream: Upstream, prompt_wav: Path
) -> None:
    with running_simulator(SimulatorConfig("clean")) as url:
        ours = our_client(url, prompt_wav)
        theirs = harness_request(upstream, url, body(prompt_wav))
    assert ours.status == "ok" and theirs.success, theirs.error
    assert theirs.text.strip() == ours.thinker_text == TEXT
    same_audio(ours, theirs.pcm)


def test_b_stream_errors_count_alike(upstream: Upstream, prompt_wav: Path) -> None:
    """With the stream-errors profile some streams end in the server's error chunk: ours under
    the version's client rules fails exactly the clips upstream's client of that version fails
    (0.30 on: each such stream; 0.28, which read no error chunks: none, and it scores what
    arrived, as ours then does)."""
    rules = client_rules(upstream.version)
    failed_ours = failed_theirs = errored = 0
    with running_simulator(SimulatorConfig("stream-errors")) as url:
        for i in range(8):
            text = f"Sentence number {i} is read aloud now."
            ours = our_client(url, prompt_wav, text, rules)
            theirs = harness_request(upstream, url, body(prompt_wav, text))
            strict = our_client(url, prompt_wav, text)  # error chunks read: how many erred
            errored += strict.status == "request_failed"
            failed_ours += ours.status == "request_failed"
            failed_theirs += not theirs.success
            assert (ours.status == "request_failed") == (not theirs.success), (i, theirs.error)
            if theirs.success and theirs.pcm is not None:
                same_audio(ours, theirs.pcm)
    assert errored > 0
    assert failed_theirs == failed_ours == (errored if upstream.version >= "0.30.0" else 0)


# (c) ------------------------------------------------------------------------------------------
def server_stream(error_mid_audio: bool) -> bytes:
    """One response as serving_chat.py writes it (0.30.0, chat_completion_stream_generator)."""
    w = protocol.StreamWriter(
        "Qwen/Qwen3-Omni-30B-A3B-Instruct", "chatcmpl-abc", 1764547200, usage=True, prompt_tokens=57
    )
    tone = (0.2 * np.sin(np.arange(STORE_RATE // 4) / 7)).astype(np.float32)
    chunks = [
        w.role("text"),
        w.text("Turn left ", 3),
        w.text("at the light.", 4, "stop"),
        w.role("audio"),
        w.audio(wav_bytes(tone, STORE_RATE), STORE_RATE),
    ]
    if error_mid_audio:
        chunks.append(w.error("EngineCore encountered an issue"))
    else:
        chunks.append(w.audio(wav_bytes(tone[::-1].copy(), STORE_RATE), STORE_RATE, "stop"))
        chunks.append(w.final_usage())
    chunks.append(w.done())
    return b"".join(chunks)


OK_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"


@contextmanager
def raw_server(
    payload: bytes, piece: int | None, first: bytes | None = None, seen: list[int] | None = None
) -> Iterator[str]:
    """A plain TCP server answering every request with `payload` as an HTTP/1.1 event stream,
    written whole or `piece` bytes at a time (each piece its own TCP segment). `first`, when
    given, is the whole raw answer to the first request (then the connection closes); `seen`
    counts the requests."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    stop = threading.Event()

    def serve() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, rest = data.split(b"\r\n\r\n", 1)
                length = int(
                    next(
                        h.split(b":")[1]
                        for h in head.split(b"\r\n")
                        if h.lower().startswith(b"content-length")
                    )
                )
                while len(rest) < length:
                    rest += conn.recv(65536)
                if seen is not None:
                    seen.append(1)
                if first is not None and (seen is None or len(seen) == 1):
                    conn.sendall(first)
                    continue
                conn.sendall(OK_HEAD)
                step = piece or len(payload)
                for i in range(0, len(payload), step):
                    conn.sendall(payload[i : i + step])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        sock.close()


def test_c_server_shaped_streams_read_the_same_whole_and_in_pieces(
    upstream: Upstream, prompt_wav: Path
) -> None:
    payload = server_stream(error_mid_audio=False)
    results = []
    for piece in (None, 1009, 7):
        with raw_server(payload, piece) as url:
            ours = our_client(url, prompt_wav)
            theirs = harness_request(upstream, url, body(prompt_wav))
        assert ours.status == "ok" and theirs.success, theirs.error
        assert ours.thinker_text == "Turn left at the light." == theirs.text.strip()
        same_audio(ours, theirs.pcm)
        results.append(pcm16(ours))
    assert all(np.array_equal(results[0], r) for r in results[1:])
    assert results[0].size == 2 * (STORE_RATE // 4)


def test_c_an_error_chunk_mid_audio_fails_the_request(upstream: Upstream, prompt_wav: Path) -> None:
    """0.30 on fails the request; 0.28's client did not look at error chunks and scored the
    audio before it: ours under each version's rules does what that client does."""
    payload = server_stream(error_mid_audio=True)
    for piece in (None, 13):
        with raw_server(payload, piece) as url:
            ours = our_client(url, prompt_wav, rules=client_rules(upstream.version))
            theirs = harness_request(upstream, url, body(prompt_wav))
        assert ours.audio is not None  # what arrived is kept (nothing lost)
        assert theirs.success == (upstream.version < "0.30.0") == (ours.status == "ok")
        if theirs.success:
            same_audio(ours, theirs.pcm)
        else:
            assert "EngineCore encountered an issue" in (ours.detail or "")
            assert "EngineCore encountered an issue" in theirs.error


# (d) retries by harness version ---------------------------------------------------------------
UNAVAILABLE = {"message": "mm cache miss", "type": "ServiceUnavailableError", "code": 503}


def _first_answers() -> dict[str, bytes]:
    """First answers that break off or refuse; the retry (if any) gets the normal stream."""
    events = server_stream(error_mid_audio=False).split(b"\n\n")
    # The thinker's text, the first audio chunk and part of the second in a chunked body, then
    # the connection closes mid-body: a drop (without chunking, the close would end the body).
    part = b"\n\n".join(events[:5]) + b"\n\n" + events[5][:40]
    drop = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        + f"{len(part) + 100:x}\r\n".encode()
        + part
    )
    body = json.dumps({"error": UNAVAILABLE}).encode()
    http_503 = (
        b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
        + f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode()
        + body
    )
    w = protocol.StreamWriter("Qwen/Qwen3-Omni-30B-A3B-Instruct", "chatcmpl-r", 1764547200)
    in_stream = OK_HEAD + w.role("text") + protocol.sse({"error": UNAVAILABLE}) + w.done()
    return {"drop-mid-audio": drop, "503-http": http_503, "503-in-stream": in_stream}


def replay(
    upstream: Upstream, prompt_wav: Path, first: bytes
) -> tuple[ClipResult, HarnessResult, list[int], list[int]]:
    """One request through ours (under the version's client rules) and through upstream's
    client, each against a server whose first answer is `first` and whose later answers are
    the whole stream; with the requests each server saw."""
    payload = server_stream(error_mid_audio=False)
    ours_seen: list[int] = []
    theirs_seen: list[int] = []
    with raw_server(payload, None, first, ours_seen) as url:
        ours = our_client(url, prompt_wav, rules=client_rules(upstream.version))
    with raw_server(payload, None, first, theirs_seen) as url:
        theirs = harness_request(upstream, url, body(prompt_wav))
    return ours, theirs, ours_seen, theirs_seen


@pytest.mark.parametrize("scenario", ["drop-mid-audio", "503-http", "503-in-stream"])
def test_d_retries_follow_the_harness_version(
    upstream: Upstream, prompt_wav: Path, scenario: str
) -> None:
    """A first attempt that drops mid-audio or meets a 503 before any output: upstream's
    client of this version and ours under its harness row (`harness.client_rules`) either both
    retry and score the full stream, or both fail the clip."""
    ours, theirs, ours_seen, theirs_seen = replay(upstream, prompt_wav, _first_answers()[scenario])
    assert len(ours_seen) == len(theirs_seen)
    if scenario == "503-in-stream" and upstream.version < "0.30.0":
        # 0.28's client reads no error chunks: a "success" with no audio at all, which its
        # summary counts as no PCM; ours, under its rules, is a clip without audio.
        assert theirs.success and theirs.pcm is None and ours.status == "no_audio"
        assert len(ours_seen) == len(theirs_seen) == 1
        return
    assert (ours.status == "ok") == theirs.success, (ours.status, ours.detail, theirs.error)
    if theirs.success:
        assert len(theirs_seen) == 2  # retried once, then the whole stream
        assert ours.thinker_text == theirs.text.strip() == "Turn left at the light."
        same_audio(ours, theirs.pcm)
        assert pcm16(ours).size == 2 * (STORE_RATE // 4)
    else:
        assert len(theirs_seen) == 1


# (e) the rules that differ between releases, replayed row by row ------------------------------
def _stream(*chunks: bytes) -> bytes:
    return OK_HEAD + b"".join(chunks)


def _reasoning_then(after: bytes) -> bytes:
    """A reasoning delta (visible to 0.32, not text or audio), then `after`."""
    w = protocol.StreamWriter("Qwen/Qwen3-Omni-30B-A3B-Instruct", "chatcmpl-v", 1764547200)
    reasoning = protocol.sse(
        {
            "id": "chatcmpl-v",
            "object": "chat.completion.chunk",
            "model": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
            "modality": "text",
            "choices": [{"index": 0, "delta": {"reasoning_content": "Let me think."}}],
        }
    )
    return w.role("text") + reasoning + after


def _second_choice_then(after: bytes) -> bytes:
    """Text on a second choice (n > 1) only, then `after`."""
    chunk = protocol.sse(
        {
            "object": "chat.completion.chunk",
            "model": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
            "modality": "text",
            "choices": [
                {"index": 0, "delta": {"role": "assistant"}},
                {"index": 1, "delta": {"content": "Turn"}},
            ],
        }
    )
    return chunk + after


def _dropped(part: bytes) -> bytes:
    """A chunked body that closes mid-body after `part`: a dropped connection."""
    return (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        + f"{len(part) + 100:x}\r\n".encode()
        + part
    )


UNAVAILABLE_CHUNK = protocol.sse({"error": UNAVAILABLE})
DONE = protocol.sse("[DONE]")
FIRST_ANSWERS = {
    "reasoning, then 503 in-stream": _stream(_reasoning_then(UNAVAILABLE_CHUNK + DONE)),
    "reasoning, then a drop": _dropped(_reasoning_then(b"")),
    "second choice's text, then 503 in-stream": _stream(
        _second_choice_then(UNAVAILABLE_CHUNK + DONE)
    ),
    "second choice's text, then a drop": _dropped(_second_choice_then(b"")),
}


@pytest.mark.parametrize("scenario", sorted(FIRST_ANSWERS))
def test_e_what_counts_as_output_seen_follows_the_version(
    upstream: Upstream, prompt_wav: Path, scenario: str
) -> None:
    """Output that is not the first choice's text or audio (a reasoning delta, another
    choice's text), then a retryable refusal or a drop: 0.32's client counts it as seen and
    never replays; earlier clients replay a drop whatever came. Ours under each version's
    rules retries exactly when upstream's does, and ends the same way."""
    ours, theirs, ours_seen, theirs_seen = replay(upstream, prompt_wav, FIRST_ANSWERS[scenario])
    assert len(ours_seen) == len(theirs_seen), (ours.status, ours.detail, theirs.error)
    # Upstream's "success" without PCM (0.28 skipped the error chunk) is our clip without
    # audio: both score it as no audio.
    succeeded = ours.status in ("ok", "no_audio")
    assert succeeded == theirs.success, (ours.status, ours.detail, theirs.error)
    assert (ours.audio is None) == (theirs.pcm is None)
    if theirs.pcm is not None:
        same_audio(ours, theirs.pcm)


def _wav_of(samples: np.ndarray, rate: int, channels: int = 1, width: int = 2) -> bytes:
    """A WAV chunk in the given PCM layout (width 2: int16, width 4: int32)."""
    import io
    import wave

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
    import io

    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, samples, rate, format="WAV", subtype="FLOAT")
    return buf.getvalue()


def _audio_stream(chunks: list[bytes]) -> bytes:
    w = protocol.StreamWriter("Qwen/Qwen3-Omni-30B-A3B-Instruct", "chatcmpl-f", 1764547200)
    return b"".join(
        [w.role("text"), w.text("Turn left at the light.", 4, "stop"), w.role("audio")]
        + [w.audio(c, STORE_RATE) for c in chunks]
        + [w.done()]
    )


TONE = (0.2 * np.sin(np.arange(STORE_RATE // 4) / 7)).astype(np.float32)
CHUNK_LAYOUTS = {
    "a float WAV chunk between PCM ones": [
        _wav_of(TONE, STORE_RATE),
        _float_wav(TONE[::-1].copy(), STORE_RATE),
        _wav_of(TONE, STORE_RATE),
    ],
    "a stereo chunk between mono ones": [
        _wav_of(TONE, STORE_RATE),
        _wav_of(TONE, STORE_RATE, channels=2),
        _wav_of(TONE[::-1].copy(), STORE_RATE),
    ],
    "a 32-bit chunk between 16-bit ones": [
        _wav_of(TONE, STORE_RATE),
        _wav_of(TONE, STORE_RATE, width=4),
        _wav_of(TONE[::-1].copy(), STORE_RATE),
    ],
}


@pytest.mark.parametrize("layout", sorted(CHUNK_LAYOUTS))
def test_e_audio_chunks_the_harness_drops_we_drop(
    upstream: Upstream, prompt_wav: Path, layout: str
) -> None:
    """A chunk the harness cannot read (IEEE-float WAV: Python's wave reads PCM only) or whose
    (channels, sample width, rate) differ from the first is dropped by upstream's client; ours
    under its rules hands the grader the same samples."""
    with raw_server(_audio_stream(CHUNK_LAYOUTS[layout]), None) as url:
        ours = our_client(url, prompt_wav, rules=client_rules(upstream.version))
        theirs = harness_request(upstream, url, body(prompt_wav))
    assert ours.status == "ok" and theirs.success, (ours.detail, theirs.error)
    same_audio(ours, theirs.pcm)
    assert pcm16(ours).size == 2 * (STORE_RATE // 4)  # the odd chunk dropped
    assert "dropped 1 audio chunk" in (ours.detail or "")


def test_e_the_request_deadline_is_the_versions(upstream: Upstream) -> None:
    """The client's whole-request deadline, read from the release's own code: 0.30 on,
    `_omni_request_timeout_s()` with no CLI override; 0.28, the `ClientTimeout(total=…)` its
    session is built with."""
    import ast

    source = upstream.source("vllm_omni.benchmarks.patch.patch")
    if upstream.version >= "0.30.0":
        fn = upstream.load("vllm_omni.benchmarks.patch.patch", ["_omni_request_timeout_s"])
        theirs = fn["_omni_request_timeout_s"]()
    else:
        (call,) = [
            n
            for n in ast.walk(ast.parse(source.read_text()))
            if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "ClientTimeout"
        ]
        (total,) = [k.value for k in call.keywords if k.arg == "total"]
        theirs = eval(compile(ast.Expression(total), "total", "eval"))  # a constant expression
    assert client_rules(upstream.version).timeout_s == theirs

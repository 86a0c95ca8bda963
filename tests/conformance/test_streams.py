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

from omni_tasks.audio import STORE_RATE, wav_bytes
from omni_tasks.dataset import Utterance
from omni_tasks.harness import RetryRule, retry_rule
from omni_tasks.synthesis import protocol
from omni_tasks.synthesis.client import ClientConfig, ClipResult, synthesize_all
from omni_tasks.synthesis.simulator import SimulatorConfig, running_simulator
from tests.conformance.conftest import harness_request
from tests.conformance.upstream import Upstream

TEXT = "Turn left at the second light."


NO_RETRY = RetryRule("none", retries=0, delay_s=0.0)


def our_client(
    url: str, prompt_wav: Path, text: str = TEXT, retry: RetryRule = NO_RETRY
) -> ClipResult:
    cfg = ClientConfig(url, protocol.prompt_template("seed-tts-default"), retry=retry)
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
    """With the stream-errors profile some streams end in the server's error chunk: the 0.30
    client counts them failed, as ours does (request_failed); 0.28 ignored them."""
    failed_ours = failed_theirs = 0
    with running_simulator(SimulatorConfig("stream-errors")) as url:
        for i in range(8):
            text = f"Sentence number {i} is read aloud now."
            ours = our_client(url, prompt_wav, text)
            theirs = harness_request(upstream, url, body(prompt_wav, text))
            failed_ours += ours.status == "request_failed"
            failed_theirs += not theirs.success
            if ours.status == "request_failed":
                assert "in-stream error" in (ours.detail or "")
                assert upstream.version < "0.30.0" or "EngineCore" in theirs.error
    assert failed_ours > 0
    assert failed_theirs == (failed_ours if upstream.version >= "0.30.0" else 0)


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
    payload = server_stream(error_mid_audio=True)
    for piece in (None, 13):
        with raw_server(payload, piece) as url:
            ours = our_client(url, prompt_wav)
            theirs = harness_request(upstream, url, body(prompt_wav))
        assert ours.status == "request_failed"
        assert "EngineCore encountered an issue" in (ours.detail or "")
        assert ours.audio is not None  # what arrived is kept (nothing lost), but not graded
        # 0.30.0 counts it failed like ours; 0.28.0's client did not look at error chunks.
        assert theirs.success == (upstream.version < "0.30.0")


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


@pytest.mark.parametrize("scenario", ["drop-mid-audio", "503-http", "503-in-stream"])
def test_d_retries_follow_the_harness_version(
    upstream: Upstream, prompt_wav: Path, scenario: str
) -> None:
    """A first attempt that drops mid-audio or meets a 503 before any output: upstream's
    client of this version and ours under its harness row (`harness.retry_rule`) either both
    retry and score the full stream, or both fail the clip."""
    payload, first = server_stream(error_mid_audio=False), _first_answers()[scenario]
    ours_seen: list[int] = []
    theirs_seen: list[int] = []
    with raw_server(payload, None, first, ours_seen) as url:
        ours = our_client(url, prompt_wav, retry=retry_rule(upstream.version))
    with raw_server(payload, None, first, theirs_seen) as url:
        theirs = harness_request(upstream, url, body(prompt_wav))
    assert len(ours_seen) == len(theirs_seen)
    if scenario == "503-in-stream" and upstream.version < "0.30.0":
        # 0.28's client reads no error chunks (check b): a "success" with no audio at all,
        # which its summary counts as no PCM; ours fails the request, as 0.30 does.
        assert theirs.success and theirs.pcm is None and ours.status == "request_failed"
        return
    assert (ours.status == "ok") == theirs.success, (ours.status, ours.detail, theirs.error)
    if theirs.success:
        assert len(theirs_seen) == 2  # retried once, then the whole stream
        assert ours.thinker_text == theirs.text.strip() == "Turn left at the light."
        same_audio(ours, theirs.pcm)
        assert pcm16(ours).size == 2 * (STORE_RATE // 4)
    else:
        assert len(theirs_seen) == 1

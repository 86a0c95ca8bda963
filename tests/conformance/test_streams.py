"""(b) Upstream's own benchmark request function against our simulator gets the text and audio
our client gets. (c) Streams shaped as upstream's server emits them (role chunks, continuous
usage, audio metadata, finish_reason, a final usage chunk, an error chunk mid-audio), replayed
whole and in small TCP pieces, are read identically by our client and by upstream's."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from omni_tasks.audio import STORE_RATE, wav_bytes
from omni_tasks.dataset import Utterance
from omni_tasks.synthesis import protocol
from omni_tasks.synthesis.client import ClientConfig, ClipResult, synthesize_all
from omni_tasks.synthesis.simulator import SimulatorConfig, running_simulator
from tests.conformance.conftest import harness_request
from tests.conformance.upstream import Upstream

TEXT = "Turn left at the second light."


def our_client(url: str, prompt_wav: Path, text: str = TEXT) -> ClipResult:
    cfg = ClientConfig(url, protocol.prompt_template("seed-tts-default"), retries=0)
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


@contextmanager
def raw_server(payload: bytes, piece: int | None) -> Iterator[str]:
    """A plain TCP server answering every request with `payload` as an HTTP/1.1 event stream,
    written whole or `piece` bytes at a time (each piece its own TCP segment)."""
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
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"connection: close\r\n\r\n"
                )
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

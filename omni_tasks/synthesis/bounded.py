"""Reading what a server sends within bounds: a server is untrusted, so a few megabytes from it
must never cost gigabytes here.

Bodies are read raw and decompressed here, with the decompressed size counted against the cap
(a 4 MB gzip body that inflates to 4 GiB stops at the cap); an SSE event has a length cap (one
without its blank line cannot grow until the process dies); JSON is parsed with its failures (a
5000-digit integer, 100k levels of nesting) turned into one error type the caller handles per
clip.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

MAX_ERROR_BODY = 64 * 1024  # what an error response may say (the start is kept)
MAX_JSON_BODY = 16 * 1024 * 1024  # a non-streamed answer
# One SSE event may carry a whole clip: a server with `async_chunk: false` sends it in one audio
# chunk. The longest clip a harness run keeps (`harness.LONGEST_CLIP_S`, 900 s) of 24 kHz 16-bit
# mono WAV is 43.2 MB, 57.6 MB in base64; upstream's client bounds no event.
MAX_EVENT = 64 * 1024 * 1024
# A whole SSE response, decompressed: the audio up to the cap, one event past it, and the rest.
MAX_STREAM_BYTES = 2 * MAX_EVENT + 32 * 1024 * 1024


class ResponseRefused(Exception):
    """A response past a bound, in an encoding we do not read, or not the JSON promised; the
    message says which (it becomes the clip's error detail)."""


class _Decoder:
    """Content-Encoding decoding that never returns more than it is allowed to."""

    def __init__(self, encoding: str | None) -> None:
        enc = (encoding or "identity").strip().lower()
        if enc in ("identity", ""):
            self._z = None
        elif enc in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            self._z = zlib.decompressobj()
        else:
            raise ResponseRefused(f"response in Content-Encoding {enc[:40]!r}, which is not read")

    def feed(self, raw: bytes, room: int) -> bytes:
        """At most room + 1 bytes of decoded data (one more than fits tells the caller)."""
        if self._z is None:
            return raw[: room + 1]
        try:
            return self._z.decompress(raw, max(room, 0) + 1)
        except zlib.error as exc:
            raise ResponseRefused(f"corrupt compressed response ({exc})") from None


class _Body:
    """A body being collected: decoded chunk by chunk, at most `cap` bytes (plus one, which
    says it did not fit)."""

    def __init__(self, r: httpx.Response, cap: int) -> None:
        self.decoder = _Decoder(r.headers.get("content-encoding"))
        self.cap, self.data = cap, bytearray()

    def over(self, raw: bytes) -> bool:
        self.data += self.decoder.feed(raw, self.cap - len(self.data))
        return len(self.data) > self.cap


async def read_body(r: httpx.Response, cap: int, *, keep_start: bool = False) -> bytes:
    """The decoded body, at most `cap` bytes: past it, the start (`keep_start`, for error
    texts) or ResponseRefused."""
    body = _Body(r, cap)
    async for raw in r.aiter_raw():
        if body.over(raw):
            if keep_start:
                return bytes(body.data[:cap])
            raise ResponseRefused(f"response body over {cap} bytes")
    return bytes(body.data)


def read_body_sync(r: httpx.Response, cap: int, deadline_s: float | None = None) -> bytes:
    """read_body for a synchronous response (a probe such as /v1/models, Buildkite); with
    `deadline_s`, a body still arriving after that long is refused (a one-byte drip never hits
    the read timeout)."""
    body = _Body(r, cap)
    until = None if deadline_s is None else time.monotonic() + deadline_s
    for raw in r.iter_raw():
        if body.over(raw):
            raise ResponseRefused(f"response body over {cap} bytes")
        if until is not None and time.monotonic() > until:
            raise ResponseRefused(f"response body still arriving after {deadline_s:g} s")
    return bytes(body.data)


async def body_pieces(r: httpx.Response, max_bytes: int) -> AsyncIterator[bytes]:
    """The response's body as it arrives, decoded, at most `max_bytes` in all (past it,
    ResponseRefused)."""
    dec = _Decoder(r.headers.get("content-encoding"))
    total = 0
    async for raw in r.aiter_raw():
        data = dec.feed(raw, max_bytes - total)
        total += len(data)
        if total > max_bytes:
            raise ResponseRefused(f"response stream over {max_bytes} bytes")
        yield data


async def sse_events(r: httpx.Response) -> AsyncIterator[str]:
    """The response's SSE payloads, framed as vLLM's benchmark client frames them
    (`vllm/benchmarks/lib/endpoint_request_func.py: StreamedResponseHandler`, the same in every
    pinned release, and the omni request function's loop over it): an event ends at a blank
    line (`\\n\\n`; CRLF does not end one), is stripped, a comment (`:`…) is skipped, and one
    `data: ` prefix is removed; the rest is the payload, whole (two `data:` lines make one
    payload that is no JSON). At the body's end a remainder counts only as the handler's own
    buffer check takes it: `data: ` and then JSON or `[DONE]`; else it is dropped. Text must be
    UTF-8 (the handler's decoder is strict). An event is at most MAX_EVENT bytes, the whole
    at most MAX_STREAM_BYTES decoded; past either bound, or not UTF-8, ResponseRefused."""
    buf = bytearray()
    scanned = 0
    async for data in body_pieces(r, MAX_STREAM_BYTES):
        buf += data
        start = 0
        while (end := buf.find(b"\n\n", scanned)) >= 0:
            if (payload := _payload(buf[start:end])) is not None:
                yield payload
            start = scanned = end + 2
        del buf[:start]
        scanned = max(len(buf) - 1, 0)  # a separator may straddle the next piece
        if len(buf) > MAX_EVENT:
            raise ResponseRefused(f"an SSE event over {MAX_EVENT} bytes")
    tail = _payload(buf)
    if tail is not None and buf.startswith(b"data: ") and (tail == "[DONE]" or _is_json(tail)):
        yield tail


def _payload(event: bytes | bytearray) -> str | None:
    """One event's payload (None: blank, or a comment)."""
    try:
        text = event.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise ResponseRefused("an SSE event that is not UTF-8") from None
    if not text or text.startswith(":"):
        return None
    return text.removeprefix("data: ")


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def parse_json(text: str | bytes, what: str) -> Any:
    """JSON from a server; any way it fails to parse is ResponseRefused naming `what`."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ResponseRefused(f"{what}: JSON nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, and ints past Python's digit limit
        raise ResponseRefused(f"{what}: not valid JSON ({str(exc)[:120]})") from None


class BoundedTransport(httpx.HTTPTransport):
    """An httpx transport that reads every answer within `cap` decoded bytes before handing it
    on (a library client, e.g. githubkit, would otherwise inflate a gzip bomb whole)."""

    def __init__(self, cap: int, **kw: Any) -> None:
        super().__init__(**kw)
        self.cap = cap

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        try:
            body = read_body_sync(response, self.cap)
        except ResponseRefused as exc:
            raise httpx.DecodingError(f"{request.url.host}: {exc}", request=request) from None
        finally:
            response.close()
        dropped = (b"content-encoding", b"content-length", b"transfer-encoding")
        headers = [(k, v) for k, v in response.headers.raw if k.lower() not in dropped]
        return httpx.Response(
            response.status_code,
            headers=headers,
            content=body,
            request=request,
            extensions=response.extensions,
        )

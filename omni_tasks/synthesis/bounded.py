"""Reading what a server sends within bounds: a server is untrusted, so a few megabytes from it
must never cost gigabytes here.

Bodies are read raw and decompressed here, with the decompressed size counted against the cap
(a 4 MB gzip body that inflates to 4 GiB stops at the cap); SSE lines have a length cap (a line
without a newline cannot grow until the process dies); JSON is parsed with its failures (a
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
MAX_STREAM_BYTES = 128 * 1024 * 1024  # a whole SSE response, decompressed (60 s of audio: 4 MB)
MAX_LINE = 16 * 1024 * 1024  # one SSE line: a 60 s WAV chunk in base64 is about 4 MB


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
        self.decoder, self.cap, self.data = (
            _Decoder(r.headers.get("content-encoding")),
            cap,
            bytearray(),
        )

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


async def sse_lines(
    r: httpx.Response, *, max_line: int = MAX_LINE, max_bytes: int = MAX_STREAM_BYTES
) -> AsyncIterator[str]:
    """The response's lines (LF or CRLF ended), each at most `max_line` bytes, the whole at
    most `max_bytes` decoded bytes; past either bound, ResponseRefused."""
    dec = _Decoder(r.headers.get("content-encoding"))
    buf = bytearray()
    total = 0
    async for raw in r.aiter_raw():
        data = dec.feed(raw, max_bytes - total)
        total += len(data)
        if total > max_bytes:
            raise ResponseRefused(f"response stream over {max_bytes} bytes")
        buf += data
        start = 0
        while (end := buf.find(b"\n", start)) >= 0:
            yield buf[start:end].rstrip(b"\r").decode("utf-8", "replace")
            start = end + 1
        del buf[:start]
        if len(buf) > max_line:
            raise ResponseRefused(f"an SSE line over {max_line} bytes")
    if buf:
        yield buf.rstrip(b"\r").decode("utf-8", "replace")


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

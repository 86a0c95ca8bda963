"""Request bodies from outside (Slack, GitHub) read with a size limit: a sender cannot make an
endpoint hold more than `limit` bytes before its signature is checked; and read into with
`dig`, whatever their shape."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request


async def bounded_body(request: Request, limit: int) -> bytes | None:
    """The body, or None as soon as it passes `limit` bytes (the caller answers 413)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return body


def dig(value: Any, *keys: str) -> Any:
    """value[k1][k2]… where each level is a mapping, else None (a signed payload can still
    have any shape)."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value

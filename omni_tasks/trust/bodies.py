"""Request bodies from outside (Slack, GitHub) read with a size limit: a sender cannot make an
endpoint hold more than `limit` bytes before its signature is checked."""

from __future__ import annotations

from starlette.requests import Request


async def bounded_body(request: Request, limit: int) -> bytes | None:
    """The body, or None as soon as it passes `limit` bytes (the caller answers 413)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return body

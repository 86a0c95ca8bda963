"""A local Slack Web API with the methods omni-tasks uses, for slack-sdk's real WebClient.

It keeps messages per channel (with metadata and threads), updates and uploads, and can be told
to fail a method's next calls with a status (429 with Retry-After, 500).
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


@dataclass
class SlackState:
    messages: list[dict[str, Any]] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    uploads: list[dict[str, Any]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    fail_next: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    # Answer every call with this API error (e.g. "missing_scope"), as Slack does: HTTP 200.
    refuse_with: str | None = None
    # Seconds to wait before answering (the message is posted first, like a slow Slack).
    delay_next: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    tokens: set[str] = field(default_factory=set)
    _ts: itertools.count = field(default_factory=lambda: itertools.count(1))

    def top_level(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("thread_ts") is None]

    def replies(self, ts: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("thread_ts") == ts]


async def _args(request: Request) -> dict[str, Any]:
    args: dict[str, Any] = dict(request.query_params)
    body = await request.body()
    if body:
        if request.headers.get("content-type", "").startswith("application/json"):
            args.update(json.loads(body))
        else:
            args.update(dict(await request.form()))
    for k in ("blocks", "metadata", "files"):
        if isinstance(args.get(k), str):
            args[k] = json.loads(args[k])
    return args


def slack_app(state: SlackState) -> Starlette:
    async def method(request: Request) -> Response:
        name = request.path_params["name"]
        state.calls.append(name)
        state.tokens.add(request.headers.get("authorization", ""))
        if state.refuse_with is not None:
            needed = {"needed": "chat:write"} if state.refuse_with == "missing_scope" else {}
            return JSONResponse({"ok": False, "error": state.refuse_with, **needed})
        if state.fail_next[name]:
            status = state.fail_next[name].pop(0)
            headers = {"Retry-After": "1"} if status == 429 else {}
            return JSONResponse(
                {"ok": False, "error": "ratelimited" if status == 429 else "fatal"},
                status_code=status,
                headers=headers,
            )
        a = await _args(request)
        if name == "chat.postMessage":
            ts = f"1700000000.{next(state._ts):06d}"
            state.messages.append(
                {
                    "ts": ts,
                    "channel": a["channel"],
                    "text": a.get("text"),
                    "blocks": a.get("blocks"),
                    "thread_ts": a.get("thread_ts"),
                    "metadata": a.get("metadata"),
                }
            )
            if state.delay_next[name]:
                import asyncio

                await asyncio.sleep(state.delay_next[name].pop(0))
            return JSONResponse({"ok": True, "channel": a["channel"], "ts": ts})
        if name == "chat.update":
            state.updates.append({"ts": a["ts"], "text": a.get("text"), "blocks": a.get("blocks")})
            return JSONResponse({"ok": True, "ts": a["ts"]})
        if name == "conversations.history":
            msgs = [m for m in state.top_level() if m["channel"] == a["channel"]]
            return JSONResponse({"ok": True, "messages": list(reversed(msgs))})
        if name == "conversations.replies":
            parent = [m for m in state.messages if m["ts"] == a["ts"]]
            return JSONResponse({"ok": True, "messages": parent + state.replies(a["ts"])})
        if name == "files.getUploadURLExternal":
            fid = f"F{len(state.uploads) + 1}"
            state.uploads.append({"id": fid, "filename": a.get("filename"), "bytes": 0})
            url = f"{request.base_url}upload/{fid}"
            return JSONResponse({"ok": True, "upload_url": url, "file_id": fid})
        if name == "files.completeUploadExternal":
            for f in a["files"]:
                for u in state.uploads:
                    if u["id"] == f["id"]:
                        u.update(
                            title=f.get("title"),
                            thread_ts=a.get("thread_ts"),
                            channel=a.get("channel_id"),
                            done=True,
                        )
            return JSONResponse({"ok": True, "files": [{"id": f["id"]} for f in a["files"]]})
        return JSONResponse({"ok": False, "error": "unknown_method"}, status_code=404)

    async def upload(request: Request) -> Response:
        data = await request.body()
        for u in state.uploads:
            if u["id"] == request.path_params["fid"]:
                u["bytes"] = len(data)
        return Response("OK - uploaded")

    return Starlette(
        routes=[
            Route("/api/{name}", method, methods=["GET", "POST"]),
            Route("/upload/{fid}", upload, methods=["POST"]),
        ]
    )

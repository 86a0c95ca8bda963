"""A local Buildkite REST API (builds with Link pagination, artifacts, redirecting downloads)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

# The fake's downloads redirect to storage on another origin (localhost), like Buildkite's to
# its S3 storage: the import must be told that host is the artifact store.
STORAGE_HOSTS = ("localhost",)


@dataclass
class BuildkiteState:
    builds: list[dict[str, Any]] = field(default_factory=list)  # newest first, like the API
    artifacts: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    # More pipelines than `vllm-omni` (whose builds are `builds`): slug -> builds, and
    # (slug, build number) -> artifacts.
    pipelines: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    pipeline_artifacts: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    fail_next: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    downloads: int = 0
    calls: int = 0
    token: str = "bk-token"
    # Hostile storage: artifact ids whose download is gone (404), or drips a byte at a time.
    gone: set[str] = field(default_factory=set)
    drip: set[str] = field(default_factory=set)


def buildkite_app(state: BuildkiteState, page_size: int = 2) -> Starlette:
    def guard(request: Request) -> Response | None:
        state.calls += 1
        if state.fail_next:
            status, headers = state.fail_next.pop(0)
            return JSONResponse({"message": "nope"}, status_code=status, headers=headers)
        if request.headers.get("authorization") != f"Bearer {state.token}":
            return JSONResponse({"message": "Authentication required"}, status_code=401)
        return None

    async def builds(request: Request) -> Response:
        if (bad := guard(request)) is not None:
            return bad
        pipeline = request.path_params["pipeline"]
        if pipeline != "vllm-omni" and pipeline not in state.pipelines:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        every = state.pipelines.get(pipeline, state.builds)
        rows = [b for b in every if request.query_params.get("branch") in (None, b.get("branch"))]
        page = int(request.query_params.get("page", "1"))
        chunk = rows[(page - 1) * page_size : page * page_size]
        headers = {}
        if page * page_size < len(rows):
            nxt = request.url.include_query_params(page=page + 1)
            headers["Link"] = f'<{nxt}>; rel="next"'
        return Response(json.dumps(chunk), media_type="application/json", headers=headers)

    async def artifacts(request: Request) -> Response:
        if (bad := guard(request)) is not None:
            return bad
        number = int(request.path_params["number"])
        pipeline = request.path_params["pipeline"]
        if (pipeline, number) in state.pipeline_artifacts:
            return JSONResponse(state.pipeline_artifacts[(pipeline, number)])
        return JSONResponse(state.artifacts.get(number, []))

    async def download(request: Request) -> Response:
        if (bad := guard(request)) is not None:
            return bad
        # Like Buildkite: a redirect to storage on another origin (localhost vs 127.0.0.1).
        port = request.url.port
        return RedirectResponse(
            f"http://localhost:{port}/storage/{request.path_params['aid']}", 302
        )

    async def storage(request: Request) -> Response:
        state.downloads += 1
        assert "authorization" not in request.headers  # the token never leaves Buildkite
        aid = request.path_params["aid"]
        if aid in state.gone:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        if aid in state.drip:

            async def one_byte_at_a_time() -> AsyncIterator[bytes]:
                for byte in state.blobs[aid]:
                    await asyncio.sleep(0.05)
                    yield bytes([byte])

            return StreamingResponse(one_byte_at_a_time(), media_type="application/json")
        return Response(state.blobs[aid], media_type="application/json")

    base = "/v2/organizations/{org}/pipelines/{pipeline}/builds"
    return Starlette(
        routes=[
            Route(base, builds),
            Route(base + "/{number}/artifacts", artifacts),
            Route(base + "/{number}/artifacts/{aid}/download", download),
            Route("/storage/{aid}", storage),
        ]
    )

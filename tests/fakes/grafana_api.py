"""A local Grafana HTTP API with the endpoints omni-tasks uses (dashboards by uid, upsert,
annotations), for grafana-client's real GrafanaApi."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


@dataclass
class GrafanaState:
    dashboards: dict[str, dict[str, Any]] = field(default_factory=dict)
    annotations: list[dict[str, Any]] = field(default_factory=list)
    writes: int = 0
    auth: set[str] = field(default_factory=set)


def grafana_app(state: GrafanaState) -> Starlette:
    async def get_dashboard(request: Request) -> Response:
        state.auth.add(request.headers.get("authorization", ""))
        d = state.dashboards.get(request.path_params["uid"])
        if d is None:
            return JSONResponse({"message": "Dashboard not found"}, status_code=404)
        return JSONResponse({"dashboard": d, "meta": {"folderUid": "omni-tasks"}})

    async def save_dashboard(request: Request) -> Response:
        body = await request.json()
        d = dict(body["dashboard"])
        old = state.dashboards.get(d["uid"], {})
        d["id"] = old.get("id", len(state.dashboards) + 1)
        d["version"] = old.get("version", 0) + 1
        state.dashboards[d["uid"]] = d
        state.writes += 1
        return JSONResponse({"status": "success", "uid": d["uid"], "version": d["version"]})

    async def add_annotation(request: Request) -> Response:
        body = await request.json()
        body["id"] = len(state.annotations) + 1
        state.annotations.append(body)
        return JSONResponse({"message": "Annotation added", "id": body["id"]})

    return Starlette(routes=[
        Route("/api/dashboards/uid/{uid}", get_dashboard),
        Route("/api/dashboards/db", save_dashboard, methods=["POST"]),
        Route("/api/annotations", add_annotation, methods=["POST"]),
    ])  # fmt: skip

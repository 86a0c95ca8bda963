"""A local Grafana HTTP API with the endpoints omni-tasks uses (dashboards by uid, upsert,
annotations), for grafana-client's real GrafanaApi; and the queries a dashboard runs, with
Grafana's macros and variables expanded as its Postgres datasource does."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from omni_tasks.contracts import JsonObject, json_objects


@dataclass
class GrafanaState:
    dashboards: dict[str, dict[str, Any]] = field(default_factory=dict)
    annotations: list[dict[str, Any]] = field(default_factory=list)
    writes: int = 0
    auth: set[str] = field(default_factory=set)
    # File-provisioned dashboards, as Grafana keeps them: readable, never saved through the API.
    provisioned: set[str] = field(default_factory=set)
    folders: dict[str, str] = field(default_factory=dict)  # uid -> title
    token: str | None = None  # when set, any other bearer token gets a 401


def grafana_app(state: GrafanaState) -> Starlette:
    def refused(request: Request) -> Response | None:
        state.auth.add(request.headers.get("authorization", ""))
        if (
            state.token is not None
            and request.headers.get("authorization") != f"Bearer {state.token}"
        ):
            return JSONResponse({"message": "invalid API key"}, status_code=401)
        return None

    async def get_dashboard(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        uid = request.path_params["uid"]
        d = state.dashboards.get(uid)
        if d is None:
            return JSONResponse({"message": "Dashboard not found"}, status_code=404)
        meta = {"folderUid": "omni-tasks", "provisioned": uid in state.provisioned}
        return JSONResponse({"dashboard": d, "meta": meta})

    async def save_dashboard(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        body = await request.json()
        d = dict(body["dashboard"])
        if d["uid"] in state.provisioned:  # Grafana's rule for file-provisioned dashboards
            return JSONResponse({"message": "Cannot save provisioned dashboard"}, status_code=400)
        if body.get("folderUid") and body["folderUid"] not in state.folders:
            return JSONResponse({"message": "folder not found"}, status_code=400)
        old = state.dashboards.get(d["uid"], {})
        d["id"] = old.get("id", len(state.dashboards) + 1)
        d["version"] = old.get("version", 0) + 1
        state.dashboards[d["uid"]] = d
        state.writes += 1
        return JSONResponse({"status": "success", "uid": d["uid"], "version": d["version"]})

    async def get_folder(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        uid = request.path_params["uid"]
        if uid not in state.folders:
            return JSONResponse({"message": "folder not found"}, status_code=404)
        return JSONResponse({"uid": uid, "title": state.folders[uid]})

    async def create_folder(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        body = await request.json()
        state.folders[body["uid"]] = body["title"]
        return JSONResponse({"uid": body["uid"], "title": body["title"]})

    async def add_annotation(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        body = await request.json()
        body["id"] = len(state.annotations) + 1
        state.annotations.append(body)
        return JSONResponse({"message": "Annotation added", "id": body["id"]})

    return Starlette(
        routes=[
            Route("/api/dashboards/uid/{uid}", get_dashboard),
            Route("/api/dashboards/db", save_dashboard, methods=["POST"]),
            Route("/api/annotations", add_annotation, methods=["POST"]),
            Route("/api/folders/{uid}", get_folder),
            Route("/api/folders", create_folder, methods=["POST"]),
        ]
    )


def panel_queries(d: JsonObject) -> dict[str, str]:
    """Every SQL a dashboard runs, by 'panel title/refId' (variables and annotations too)."""
    out = {
        f"{p['title']}/{t['refId']}": str(t["rawSql"])
        for p in _objects(d, "panels")
        for t in _objects(p, "targets")
    }
    for v in _objects(d.get("templating"), "list"):
        if v["type"] == "query":
            out[f"variable {v['name']}"] = str(v["query"])
    for a in _objects(d.get("annotations"), "list"):
        query = a["target"]
        if isinstance(query, dict):
            out[f"annotation {a['name']}"] = str(query["rawSql"])
    return out


def _objects(doc: JsonValue, key: str) -> list[JsonObject]:
    """The JSON objects listed under `key` of `doc` (none when it lists none)."""
    return json_objects(doc.get(key)) if isinstance(doc, dict) else []


def expand(sql: str, variables: dict[str, str | list[str]], time_from: str, time_to: str) -> str:
    """Expand Grafana's macros and variables the way its Postgres datasource does."""
    sql = re.sub(
        r"\$__timeFilter\((\w+)\)",
        lambda m: f"{m.group(1)} BETWEEN '{time_from}' AND '{time_to}'",
        sql,
    )
    sql = sql.replace("$__timeFrom()", f"'{time_from}'").replace("$__timeTo()", f"'{time_to}'")
    for name in sorted(variables, key=len, reverse=True):
        value = variables[name]
        rendered = ",".join(f"'{v}'" for v in value) if isinstance(value, list) else str(value)
        sql = sql.replace("${" + name + "}", rendered).replace("$" + name, rendered)
    return sql

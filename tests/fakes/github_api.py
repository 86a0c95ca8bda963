"""A local GitHub REST API with the check-run and issue endpoints omni-tasks uses, recording
every call, for githubkit's real client (OMNI_GITHUB_API_URL points it here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


@dataclass
class GitHubState:
    token: str = "ghs_test"
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)  # number -> issue
    comments: dict[int, list[str]] = field(default_factory=dict)  # number -> bodies
    # A GitHub App: its id and public key; a JWT it signs (RS256) buys an installation token.
    app_id: str | None = None
    app_public_key: bytes | None = None
    installation_id: int = 1


def github_app(state: GitHubState) -> Starlette:
    def refused(request: Request) -> Response | None:
        auth = request.headers.get("authorization", "")
        if auth not in (f"token {state.token}", f"Bearer {state.token}"):
            return JSONResponse({"message": "Bad credentials"}, status_code=401)
        return None

    async def create(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        body = await request.json()
        state.calls.append(("POST", request.url.path, body))
        run_id = len(state.check_runs) + 1
        state.check_runs[run_id] = {"id": run_id, **body, "repo": request.path_params["repo"]}
        return JSONResponse(state.check_runs[run_id], status_code=201)

    async def patch(request: Request, rows: dict[int, dict[str, Any]], key: str) -> Response:
        """PATCH one stored row (a check run or an issue) by its id in the path."""
        if (no := refused(request)) is not None:
            return no
        found = int(request.path_params[key])
        if found not in rows:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        body = await request.json()
        state.calls.append(("PATCH", request.url.path, body))
        rows[found].update(body)
        return JSONResponse(rows[found])

    async def update(request: Request) -> Response:
        return await patch(request, state.check_runs, "run_id")

    async def list_issues(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        q = request.query_params
        wanted = {x for x in q.get("labels", "").split(",") if x}
        shown, per_page, page = (
            q.get("state", "open"),
            int(q.get("per_page", 30)),
            int(q.get("page", 1)),
        )
        found = [
            i
            for i in sorted(state.issues.values(), key=lambda i: -i["number"])
            if wanted <= {label["name"] for label in i["labels"]}
            and (shown == "all" or i["state"] == shown)
        ]
        state.calls.append(("GET", request.url.path, dict(q)))
        return JSONResponse(found[(page - 1) * per_page : page * per_page])

    async def create_issue(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        body = await request.json()
        state.calls.append(("POST", request.url.path, body))
        number = len(state.issues) + 1
        state.issues[number] = {
            "number": number,
            "title": body["title"],
            "body": body.get("body") or "",
            "state": "open",
            "state_reason": None,
            "labels": [{"name": n} for n in body.get("labels") or []],
        }
        return JSONResponse(state.issues[number], status_code=201)

    async def update_issue(request: Request) -> Response:
        return await patch(request, state.issues, "number")

    async def comment(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        number = int(request.path_params["number"])
        if number not in state.issues:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        body = await request.json()
        state.calls.append(("POST", request.url.path, body))
        state.comments.setdefault(number, []).append(body["body"])
        return JSONResponse({"id": len(state.comments[number]), "body": body["body"]}, 201)

    async def installation_token(request: Request) -> Response:
        import jwt

        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        try:
            claims = jwt.decode(bearer, state.app_public_key, algorithms=["RS256"])
        except (jwt.PyJWTError, TypeError, ValueError):
            return JSONResponse({"message": "A JSON web token could not be decoded"}, 401)
        if (
            str(claims.get("iss")) != state.app_id
            or int(request.path_params["installation_id"]) != state.installation_id
        ):
            return JSONResponse({"message": "Not Found"}, status_code=404)
        state.calls.append(("POST", request.url.path, {}))
        return JSONResponse(
            {"token": state.token, "expires_at": "2099-01-01T00:00:00Z"}, status_code=201
        )

    return Starlette(
        routes=[
            Route(
                "/app/installations/{installation_id}/access_tokens",
                installation_token,
                methods=["POST"],
            ),
            Route("/repos/{owner}/{repo}/check-runs", create, methods=["POST"]),
            Route("/repos/{owner}/{repo}/check-runs/{run_id}", update, methods=["PATCH"]),
            Route("/repos/{owner}/{repo}/issues", list_issues, methods=["GET"]),
            Route("/repos/{owner}/{repo}/issues", create_issue, methods=["POST"]),
            Route("/repos/{owner}/{repo}/issues/{number}", update_issue, methods=["PATCH"]),
            Route("/repos/{owner}/{repo}/issues/{number}/comments", comment, methods=["POST"]),
        ]
    )

"""GitHub's webhook for on-demand A/Bs: a pull request labelled `omni-ab` triggers the omni_ab
DAG with the PR's SHAs. The body is read (bounded) and its `X-Hub-Signature-256` HMAC checked
against the webhook secret before anything else; a bad or missing signature is a 401 and
triggers nothing. The trigger form is then checked against the deployment config by the DAG
(`deployment.resolve_ab`): the webhook only picks the repository, PR and commits."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

LABEL = "omni-ab"
MAX_BODY = 1024 * 1024  # GitHub caps payloads at 25 MB; a PR event is a few kB
_SHA = re.compile(r"^[0-9a-f]{40}$")

Trigger = Callable[[dict[str, Any]], str]  # the DAG run's conf -> its run id


def signature_ok(secret: bytes, body: bytes, header: str | None) -> bool:
    """GitHub's `sha256=HEX` HMAC of the raw body, compared in constant time."""
    if not secret or not header or not header.startswith("sha256="):
        return False
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header[len("sha256=") :])


def ab_conf(event: str, payload: Any) -> dict[str, Any] | None:
    """The omni_ab form for a `pull_request` event that labels a PR `omni-ab`; None for every
    other event (it is acknowledged and ignored)."""
    if event != "pull_request" or not isinstance(payload, dict):
        return None
    label = (
        (payload.get("label") or {}).get("name") if isinstance(payload.get("label"), dict) else None
    )
    if payload.get("action") != "labeled" or label != LABEL:
        return None
    pr = payload.get("pull_request")
    repo = (payload.get("repository") or {}).get("full_name")
    if not isinstance(pr, dict) or not isinstance(repo, str):
        return None
    base, head = (pr.get("base") or {}).get("sha"), (pr.get("head") or {}).get("sha")
    number = pr.get("number")
    if not (
        isinstance(base, str) and _SHA.match(base) and isinstance(head, str) and _SHA.match(head)
    ):
        return None
    if not isinstance(number, int) or isinstance(number, bool) or number <= 0:
        return None
    return {"repo": repo, "pr": number, "base_sha": base, "head_sha": head}


def webhook_app(secret: Callable[[], bytes], trigger: Trigger) -> FastAPI:
    """The endpoint (`POST /github`). `secret` is read per request (an Airflow connection can
    change); `trigger` starts the DAG run."""
    app = FastAPI(title="omni-tasks GitHub webhook", docs_url=None, redoc_url=None)

    @app.post("/github")
    async def github(request: Request) -> JSONResponse:
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                return JSONResponse({"error": "payload too large"}, status_code=413)
        if not signature_ok(secret(), body, request.headers.get("x-hub-signature-256")):
            return JSONResponse({"error": "bad signature"}, status_code=401)
        try:
            payload = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return JSONResponse({"error": "not JSON"}, status_code=400)
        conf = ab_conf(request.headers.get("x-github-event", ""), payload)
        if conf is None:
            return JSONResponse({"triggered": None, "ignored": "not an omni-ab label"})
        return JSONResponse({"triggered": trigger(conf)}, status_code=202)

    return app


WEBHOOK_CONN = "omni_github"  # its password is the webhook secret


def airflow_secret() -> bytes:
    """The webhook secret: the Airflow connection `omni_github`'s password, else
    OMNI_GITHUB_WEBHOOK_SECRET; empty (every request refused) when neither is set."""
    from omni_tasks.config import get_settings

    try:
        from airflow.models import Connection

        conn = Connection.get_connection_from_secrets(WEBHOOK_CONN)
        if conn.password:
            return str(conn.password).encode()
    except Exception:  # no such connection (Airflow raises its own NotFound types)
        pass
    s = get_settings().github_webhook_secret
    return s.get_secret_value().encode() if s is not None else b""


def airflow_trigger(conf: dict[str, Any]) -> str:
    """Start an omni_ab DAG run with `conf` (in the API server, as its REST API would)."""
    from airflow.api.common.trigger_dag import trigger_dag
    from airflow.utils.session import create_session
    from airflow.utils.types import DagRunTriggeredByType

    run_id = f"webhook__{conf['repo'].replace('/', '__')}__{conf['pr']}__{conf['head_sha'][:12]}"
    with create_session() as session:
        run = trigger_dag(
            "omni_ab",
            triggered_by=DagRunTriggeredByType.REST_API,
            run_id=run_id,
            conf=conf,
            session=session,
        )
    return run.run_id if run is not None else run_id

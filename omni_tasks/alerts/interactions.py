"""Slack's interactivity endpoint: the Acknowledge and Ignore buttons on alert and group
messages (alerts/blocks.py `buttons`), served by the Airflow plugin at /omni-slack/actions.

Slack signs each request with the app's signing secret (`X-Slack-Signature`, an HMAC of the
timestamp and the raw body; over five minutes old is refused, so a captured request cannot be
replayed later): it is checked before the body is parsed. Only two actions on an alert id are
taken (an allow-list: anything else is acknowledged and ignored), by the Slack user who
clicked, recorded as `slack/NAME`. Triage says what happened in the alert's thread, as the
CLI's verbs do; the button never needs the results DB's credentials in Slack's hands."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from slack_sdk.signature import SignatureVerifier

from omni_tasks.trust.bodies import bounded_body

ACTIONS = {"omni_ack": "ack", "omni_ignore": "ignore"}  # button action_id → triage verb
MAX_BODY = 64 * 1024  # a block_actions payload is a few kB
MAX_ACTIONS = 5
_ID = re.compile(r"^[0-9]{1,12}$")
_TIMESTAMP = re.compile(r"^[0-9]{1,12}$")
_USER = re.compile(r"^[A-Za-z0-9._-]{1,80}$")

# alert id, triage verb, who → what was done (one line)
Apply = Callable[[int, str, str], str]


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def clicked(payload: Any) -> tuple[str, list[tuple[int, str]]]:
    """Who clicked and the (alert id, verb) pairs a `block_actions` payload asks for; an empty
    list for anything else. Raises ValueError for a payload without a usable user."""
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        return "", []
    user = _dig(payload, "user", "username") or _dig(payload, "user", "id")
    if not isinstance(user, str) or not _USER.match(user):
        raise ValueError("no Slack user in the payload")
    asked = []
    actions = payload.get("actions")
    for action in actions[:MAX_ACTIONS] if isinstance(actions, list) else []:
        verb = ACTIONS.get(_dig(action, "action_id"))
        value = _dig(action, "value")
        if verb is not None and isinstance(value, str) and _ID.match(value):
            asked.append((int(value), verb))
    return f"slack/{user}", asked


def interactions_app(signing_secret: Callable[[], str], apply: Apply) -> FastAPI:
    """The endpoint (`POST /actions`). `signing_secret` is read per request (empty: every
    request refused); `apply` performs one triage verb."""
    app = FastAPI(title="omni-tasks Slack actions", docs_url=None, redoc_url=None, openapi_url=None)

    @app.post("/actions")
    async def actions(request: Request) -> JSONResponse:
        body = await bounded_body(request, MAX_BODY)
        if body is None:
            return JSONResponse({"error": "payload too large"}, status_code=413)
        secret = signing_secret()
        ts = request.headers.get("x-slack-request-timestamp", "")
        valid = (
            bool(secret)
            and _TIMESTAMP.match(ts) is not None
            and SignatureVerifier(secret).is_valid(
                body, ts, request.headers.get("x-slack-signature", "")
            )
        )
        if not valid:
            return JSONResponse({"error": "bad or stale signature"}, status_code=401)
        try:
            form = parse_qs(body.decode(), max_num_fields=4)
            who, asked = clicked(json.loads(form["payload"][0]))
        except (KeyError, IndexError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            return JSONResponse({"error": f"not a Slack action: {exc}"}, status_code=400)
        return JSONResponse({"done": [apply(alert_id, verb, who) for alert_id, verb in asked]})

    return app


def settings_secret() -> str:
    """OMNI_SLACK_SIGNING_SECRET ("" when unset)."""
    from omni_tasks.config import get_settings

    secret = get_settings().slack_signing_secret
    return secret.get_secret_value() if secret is not None else ""


def db_apply(alert_id: int, verb: str, who: str) -> str:
    """One triage verb on the results DB; a verb that does not apply is said, not raised."""
    from omni_tasks.alerts.triage import TriageError, triage
    from omni_tasks.store.db import connection

    with connection() as conn:
        try:
            done = triage(conn, alert_id, verb, by=who)
        except TriageError as exc:
            return str(exc)
        conn.commit()
    return f"alert #{done.alert_id} {done.status} ({done.state}) by {who}"

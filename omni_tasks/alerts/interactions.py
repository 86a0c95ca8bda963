"""Slack's interactivity endpoint: the Acknowledge and Ignore buttons on alert and group
messages (alerts/blocks.py `buttons`), served by the Airflow plugin at /omni-slack/actions.

Slack signs each request with the app's signing secret (`X-Slack-Signature`, an HMAC of the
timestamp and the raw body; over five minutes old is refused, so a captured request cannot be
replayed later): it is checked before the body is parsed. Only two actions on an alert id are
taken (an allow-list: anything else is acknowledged and ignored), and only from the people the
deployment config allows (`slack_actions:` Slack user ids and/or channel ids; none listed:
every click refused): anyone else is told so in a message only they see, and nothing changes.
The click is recorded by the Slack user's id (`slack/U0123ABC`, their username beside it only
as a label: a username can be changed, an id cannot). Triage says what happened in the
alert's thread, as the CLI's verbs do; the button never needs the results DB's credentials in
Slack's hands."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qs

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from slack_sdk.signature import SignatureVerifier
from starlette.concurrency import run_in_threadpool

from omni_tasks.trust.bodies import bounded_body, dig

log = logging.getLogger(__name__)

ACTIONS = {"omni_ack": "ack", "omni_ignore": "ignore"}  # button action_id → triage verb
MAX_BODY = 64 * 1024  # a block_actions payload is a few kB
MAX_ACTIONS = 5
_ID = re.compile(r"^[0-9]{1,12}$")  # an alert id, a request timestamp
_SLACK_ID = re.compile(r"^[A-Z0-9]{2,24}$")  # a user (U…, W…) or channel (C…, G…, D…) id
_USER = re.compile(r"^[A-Za-z0-9._-]{1,80}$")  # a username, kept as a label
# Where Slack's response_url points (its own hooks host).
RESPONSE_HOSTS = ("hooks.slack.com",)

# alert id, triage verb, who → what was done (one line)
Apply = Callable[[int, str, str], str]


class Allows(Protocol):
    """An allow-list of who may click (deployment.SlackActions)."""

    def permits(self, user_id: str, channel_id: str | None) -> bool: ...


@dataclass(frozen=True)
class Click:
    """A `block_actions` payload, as far as it is used: who clicked (the Slack user id, and
    their username as a label), where, and the (alert id, verb) pairs it asks for."""

    user_id: str = ""
    username: str | None = None
    channel_id: str | None = None
    response_url: str | None = None
    asked: list[tuple[int, str]] = field(default_factory=list)

    @property
    def who(self) -> str:
        """The audit's name for the clicking user: their id; the username only a label."""
        label = f" ({self.username})" if self.username and self.username != self.user_id else ""
        return f"slack/{self.user_id}{label}"


def _matched(value: Any, pattern: re.Pattern[str]) -> str | None:
    return value if isinstance(value, str) and pattern.match(value) else None


def clicked(payload: Any) -> Click:
    """Who clicked and the (alert id, verb) pairs a `block_actions` payload asks for; none for
    anything else. Raises ValueError for a payload without a Slack user id."""
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        return Click()
    user_id = _matched(dig(payload, "user", "id"), _SLACK_ID)
    if user_id is None:
        raise ValueError("no Slack user id in the payload")
    asked = []
    actions = payload.get("actions")
    for action in actions[:MAX_ACTIONS] if isinstance(actions, list) else []:
        verb = ACTIONS.get(dig(action, "action_id"))
        if verb is not None and (value := _matched(dig(action, "value"), _ID)):
            asked.append((int(value), verb))
    response_url = payload.get("response_url")
    return Click(
        user_id,
        _matched(dig(payload, "user", "username"), _USER),
        _matched(dig(payload, "channel", "id"), _SLACK_ID),
        response_url if isinstance(response_url, str) else None,
        asked,
    )


def refusal(click: Click) -> str:
    return (
        f"You ({click.user_id}) may not triage alerts from Slack here: nothing was changed. "
        "Ask an operator to add your Slack user id (or this channel's id) to `slack_actions` "
        "in the deployment config, or use `omni-tasks alerts`."
    )


def interactions_app(
    signing_secret: Callable[[], str],
    apply: Apply,
    allowed: Callable[[], Allows] | None = None,
) -> FastAPI:
    """The endpoint (`POST /actions`). `signing_secret` is read per request (empty: every
    request refused); `allowed`, the allow-list, too (default: the deployment config's
    `slack_actions:`); `apply` performs one triage verb; a refused user is told through
    Slack's response_url, ephemerally (`respond_ephemeral`)."""
    allowed = allowed or settings_allowed
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
            and _ID.match(ts) is not None
            and SignatureVerifier(secret).is_valid(
                body, ts, request.headers.get("x-slack-signature", "")
            )
        )
        if not valid:
            return JSONResponse({"error": "bad or stale signature"}, status_code=401)
        try:
            form = parse_qs(body.decode(), max_num_fields=4)
            click = clicked(json.loads(form["payload"][0]))
        except (KeyError, IndexError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            return JSONResponse({"error": f"not a Slack action: {exc}"}, status_code=400)
        if not click.asked:
            return JSONResponse({"done": []})
        if not allowed().permits(click.user_id, click.channel_id):
            said = refusal(click)
            if click.response_url:
                await run_in_threadpool(respond_ephemeral, click.response_url, said)
            return JSONResponse({"done": [], "refused": said})  # Slack wants a 200
        return JSONResponse(
            {"done": [apply(alert_id, verb, click.who) for alert_id, verb in click.asked]}
        )

    return app


def settings_secret() -> str:
    """OMNI_SLACK_SIGNING_SECRET ("" when unset)."""
    from omni_tasks.config import get_settings

    secret = get_settings().slack_signing_secret
    return secret.get_secret_value() if secret is not None else ""


def settings_allowed() -> Allows:
    """The deployment config's `slack_actions:` (the Airflow Variable, else
    OMNI_NIGHTLY_CONFIG); unreadable or absent: an empty list, refusing every click."""
    from omni_tasks.deployment.reading import VARIABLE
    from omni_tasks.deployment.sections import SlackActions, slack_actions

    try:
        from airflow.models import Variable

        variable = Variable.get(VARIABLE, default_var=None)
    except Exception:  # no metadata DB reachable: the env var alone
        variable = None
    try:
        return slack_actions(variable)
    except ValueError as exc:  # ConfigError: say why once per click, refuse
        log.warning("Slack actions refused: %s", exc)
        return SlackActions()


def respond_ephemeral(response_url: str, text: str) -> None:
    """A message only the clicking user sees, through the click's response_url: only to
    Slack's hooks host (or the Slack API's own origin, OMNI_SLACK_BASE_URL, in tests)."""
    from omni_tasks.config import get_settings

    url = httpx.URL(response_url)
    api = httpx.URL(get_settings().slack_base_url)
    slack = url.scheme == "https" and url.host in RESPONSE_HOSTS
    if not slack and (url.scheme, url.host, url.port) != (api.scheme, api.host, api.port):
        log.warning("Slack actions: a response_url on %s ignored", url.host[:100])
        return
    body = {"response_type": "ephemeral", "replace_original": False, "text": text}
    try:
        httpx.post(url, json=body, timeout=5.0, follow_redirects=False)
    except httpx.HTTPError as exc:
        log.warning("Slack actions: the refusal was not delivered: %s", exc)


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

"""Slack buttons are authorized (issue 64): a signed click is taken only from a Slack user id
(and/or in a channel) the deployment config's `slack_actions:` lists; anyone else is told so in
a message only they see and nothing changes; the audit names the user by id, not username."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from slack_sdk.signature import SignatureVerifier
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from omni_tasks.alerts.interactions import interactions_app
from omni_tasks.alerts.triage import triage
from omni_tasks.config import get_settings
from omni_tasks.deployment.reading import ConfigError
from omni_tasks.deployment.sections import SlackActions, slack_actions
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.factories import REGRESS, store_night

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


def _click(alert_id: int, user: dict[str, str], channel: str, response_url: str) -> bytes:
    payload = {
        "type": "block_actions",
        "user": user,
        "channel": {"id": channel, "name": "alerts"},
        "response_url": response_url,
        "actions": [{"action_id": "omni_ack", "value": str(alert_id)}],
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


def _signed(body: bytes) -> dict[str, str]:
    ts = str(int(time.time()))
    return {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(timestamp=ts, body=body),
        "Content-Type": "application/x-www-form-urlencoded",
    }


class Hooks:
    """Slack's response_url endpoint: what was posted to it."""

    def __init__(self) -> None:
        self.posted: list[dict[str, Any]] = []

    def app(self) -> Starlette:
        async def hook(request: Request) -> Response:
            self.posted.append(await request.json())
            return JSONResponse({"ok": True})

        return Starlette(routes=[Route("/actions/{rest:path}", hook, methods=["POST"])])


@pytest.fixture
def hooks(monkeypatch: pytest.MonkeyPatch):
    found = Hooks()
    with serve_in_thread(found.app()) as url:
        monkeypatch.setenv("OMNI_SLACK_BASE_URL", f"{url}/api/")  # its origin may answer
        get_settings.cache_clear()
        yield found, f"{url}/actions/T0/1/abc"
    get_settings.cache_clear()


def test_only_listed_users_and_channels_may_click(db, tmp_path: Path, hooks) -> None:
    found, response_url = hooks
    store_night(db, tmp_path, 0, REGRESS)
    alert_id = db.execute("SELECT alert_id FROM omni.alert").fetchone()["alert_id"]
    config = tmp_path / "deploy.yaml"
    config.write_text("version: 1\nslack_actions: {users: [U0ADA], channels: [C0ALERTS]}\n")
    applied: list[tuple[int, str, str]] = []

    def apply(alert: int, verb: str, who: str) -> str:
        applied.append((alert, verb, who))
        done = triage(db, alert, verb, by=who)
        return f"{done.alert_id} {done.status}"

    allowed = lambda: slack_actions(str(config))  # noqa: E731 (the deployment config, read per click)
    # Another user (who took ada's username), ada in another channel, and ada with no list.
    refused = [
        ({"id": "U0EVE", "username": "ada"}, "C0ALERTS", allowed),
        ({"id": "U0ADA", "username": "ada"}, "C0RANDOM", allowed),
        ({"id": "U0ADA", "username": "ada"}, "C0ALERTS", lambda: SlackActions()),
    ]
    for user, channel, allows in refused:
        with serve_in_thread(interactions_app(lambda: SECRET, apply, allows)) as url:
            body = _click(alert_id, user, channel, response_url)
            r = httpx.post(f"{url}/actions", content=body, headers=_signed(body))
        assert r.status_code == 200 and r.json()["done"] == [], r.text
        assert "nothing was changed" in r.json()["refused"]
    assert applied == []
    row = db.execute("SELECT details FROM omni.alert WHERE alert_id = %s", (alert_id,))
    assert row.fetchone()["details"]["triage"] is None
    assert len(found.posted) == 3
    for message in found.posted:
        assert message["response_type"] == "ephemeral" and message["replace_original"] is False
        assert "may not triage" in message["text"]

    with serve_in_thread(interactions_app(lambda: SECRET, apply, allowed)) as url:
        body = _click(alert_id, {"id": "U0ADA", "username": "ada"}, "C0ALERTS", response_url)
        r = httpx.post(f"{url}/actions", content=body, headers=_signed(body))
    assert r.json() == {"done": [f"{alert_id} acknowledged"]}, r.text
    details = db.execute("SELECT details FROM omni.alert WHERE alert_id = %s", (alert_id,))
    (entry,) = details.fetchone()["details"]["triage"]["history"]
    assert entry["by"] == "slack/U0ADA (ada)"  # the id is the audit; the username a label
    assert len(found.posted) == 3  # nothing said to an allowed user


def test_a_click_without_a_user_id_is_refused(db, tmp_path: Path, hooks) -> None:
    """A username alone no longer identifies anyone."""
    _, response_url = hooks

    def apply(alert: int, verb: str, who: str) -> str:
        raise AssertionError("must not be called")

    app = interactions_app(lambda: SECRET, apply, lambda: SlackActions(users=["U0ADA"]))
    with serve_in_thread(app) as url:
        body = _click(1, {"username": "U0ADA"}, "C0ALERTS", response_url)
        r = httpx.post(f"{url}/actions", content=body, headers=_signed(body))
    assert r.status_code == 400 and "user id" in r.text


def test_the_allow_list_is_checked_when_read(tmp_path: Path) -> None:
    config = tmp_path / "deploy.yaml"
    config.write_text("version: 1\nslack_actions: {users: ['<@everyone>']}\n")
    with pytest.raises(ConfigError, match="slack_actions"):
        slack_actions(str(config))
    config.write_text("version: 1\n")
    assert not slack_actions(str(config)).permits("U0ADA", "C0ALERTS")  # none listed: none

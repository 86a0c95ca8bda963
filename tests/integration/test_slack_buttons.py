"""Slack buttons: with the app's signing secret set, an alert carries Acknowledge and Ignore;
a click that Slack signed, by a user the deployment allows, acknowledges the alert in the
results DB as that Slack user (by id) and says so in the thread; an unsigned, stale or foreign
request changes nothing (test_slack_authorization.py: a user the deployment does not allow)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from slack_sdk.signature import SignatureVerifier

from omni_tasks.alerts.interactions import interactions_app
from omni_tasks.alerts.slack import SlackSink, dispatch
from omni_tasks.alerts.triage import TriageError, triage
from omni_tasks.config import get_settings
from omni_tasks.deployment.sections import SlackActions
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.factories import REGRESS, store_night
from tests.fakes.slack_api import SlackState, slack_app

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"  # Slack's documentation's example secret


def _click(alert_id: str, action_id: str = "omni_ack", user: str = "ada") -> bytes:
    """A `block_actions` request body as Slack sends it (form-encoded `payload`)."""
    payload = {
        "type": "block_actions",
        "user": {"id": "U0ADA", "username": user},
        "actions": [{"action_id": action_id, "block_id": f"triage-{alert_id}", "value": alert_id}],
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


def _signed(body: bytes, secret: str = SECRET, age_s: int = 0) -> dict[str, str]:
    ts = str(int(time.time()) - age_s)
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    return {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": signature,
        "Content-Type": "application/x-www-form-urlencoded",
    }


@pytest.fixture
def slack(monkeypatch):
    monkeypatch.setenv("OMNI_SLACK_SIGNING_SECRET", SECRET)
    get_settings.cache_clear()
    state = SlackState()
    with serve_in_thread(slack_app(state)) as url:
        yield state, SlackSink("xoxb-test", "C0ALERTS", f"{url}/api/")
    get_settings.cache_clear()


def test_a_signed_click_acknowledges_as_the_slack_user(db, tmp_path: Path, slack) -> None:
    state, sink = slack
    store_night(db, tmp_path, 0, REGRESS)  # confirmed on its first night
    alert_id = db.execute("SELECT alert_id FROM omni.alert").fetchone()["alert_id"]
    dispatch(db, sink)
    (parent,) = state.top_level()
    (actions,) = [b for b in parent["blocks"] if b["type"] == "actions"]
    assert [(e["action_id"], e["value"]) for e in actions["elements"]] == [
        ("omni_ack", str(alert_id)),
        ("omni_ignore", str(alert_id)),
    ]
    assert "confirm" in actions["elements"][1]  # closing for everyone asks first
    assert f"omni-tasks alerts ack {alert_id}" in json.dumps(parent["blocks"])  # the fallback

    def apply(alert: int, verb: str, who: str) -> str:
        done = triage(db, alert, verb, by=who)
        return f"{done.alert_id} {done.status}"

    app = interactions_app(lambda: SECRET, apply, lambda: SlackActions(users=["U0ADA"]))
    with serve_in_thread(app) as url:
        refused = [
            (_click(str(alert_id)), {}),  # unsigned
            (_click(str(alert_id)), _signed(_click(str(alert_id)), secret="another-app")),
            (_click(str(alert_id)), _signed(_click(str(alert_id)), age_s=600)),  # a replay
        ]
        for body, headers in refused:
            r = httpx.post(f"{url}/actions", content=body, headers=headers)
            assert r.status_code == 401, r.text
        huge = b"payload=" + b"x" * (64 * 1024)  # read no further than the limit, signed or not
        r = httpx.post(f"{url}/actions", content=huge, headers=_signed(huge))
        assert r.status_code == 413, r.text
        row = db.execute("SELECT details FROM omni.alert WHERE alert_id = %s", (alert_id,))
        assert row.fetchone()["details"]["triage"] is None

        # Outside the allow-list: a foreign action id, an id that is not a number.
        for body in (_click(str(alert_id), "omni_drop_table"), _click("1; DROP")):
            r = httpx.post(f"{url}/actions", content=body, headers=_signed(body))
            assert r.status_code == 200 and r.json() == {"done": []}

        body = _click(str(alert_id))
        r = httpx.post(f"{url}/actions", content=body, headers=_signed(body))
        assert r.status_code == 200 and r.json() == {"done": [f"{alert_id} acknowledged"]}

    details = db.execute("SELECT details FROM omni.alert WHERE alert_id = %s", (alert_id,))
    (entry,) = details.fetchone()["details"]["triage"]["history"]
    assert entry["status"] == "acknowledged" and entry["by"] == "slack/U0ADA (ada)"
    dispatch(db, sink)
    said = [m["text"] for m in state.replies(parent["ts"])]
    assert any("slack/U0ADA" in text and "acknowledged" in text.lower() for text in said), said


def test_no_signing_secret_no_buttons_and_every_click_refused(db, tmp_path: Path) -> None:
    get_settings.cache_clear()
    store_night(db, tmp_path, 0, REGRESS)
    payload = db.execute("SELECT payload FROM omni.alert_outbox").fetchone()["payload"]
    assert all(b["type"] != "actions" for b in payload["blocks"])

    def apply(alert: int, verb: str, who: str) -> str:
        raise TriageError("must not be called")

    allowed = lambda: SlackActions(users=["U0ADA"])  # noqa: E731
    with serve_in_thread(interactions_app(lambda: "", apply, allowed)) as url:
        body = _click("1")
        r = httpx.post(f"{url}/actions", content=body, headers=_signed(body))
        assert r.status_code == 401

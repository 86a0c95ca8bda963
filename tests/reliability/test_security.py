"""Secrets stay secret and helpers stay on loopback."""

from __future__ import annotations

import json
import re
from pathlib import Path

from omni_tasks.synthesis.simulator import loopback_socket, serve_in_thread
from tests.airflow_env import airflow_env, dags_test, migrate
from tests.fakes.grafana_api import GrafanaState, grafana_app
from tests.fakes.slack_api import SlackState, slack_app

REPO = Path(__file__).resolve().parents[2]
SLACK_SECRET = "xoxb-PLANTED-slack-secret-7f3a9"
GRAFANA_SECRET = "glsa_PLANTED_grafana_secret_1c2d"


def test_planted_secrets_never_leave_their_headers(db, results_dsn, tmp_path: Path) -> None:
    slack, grafana = SlackState(), GrafanaState()
    slack.fail_next["chat.postMessage"] = [500] * 8  # errors get logged and stored: still clean
    with (
        serve_in_thread(slack_app(slack)) as slack_url,
        serve_in_thread(grafana_app(grafana)) as grafana_url,
    ):
        env = airflow_env(tmp_path / "af", results_dsn, tmp_path / "omni-home")
        env.update(
            OMNI_SLACK_TOKEN=SLACK_SECRET,
            OMNI_SLACK_CHANNEL="C0SEC",
            OMNI_SLACK_BASE_URL=f"{slack_url}/api/",
            OMNI_GRAFANA_URL=grafana_url,
            OMNI_GRAFANA_TOKEN=GRAFANA_SECRET,
        )
        migrate(env)
        conf = {
            "transcript_mode": True,
            "targets": {"main": "simulator:main", "rebase": "simulator:rebase-demo"},
        }
        out = dags_test(env, "omni_nightly", "2026-11-22", json.dumps(conf))
    assert out.returncode == 0, out.stdout[-2000:]
    assert f"Bearer {SLACK_SECRET}" in slack.tokens  # it was used, in the header only
    assert f"Bearer {GRAFANA_SECRET}" in grafana.auth
    places = {"stdout": out.stdout, "stderr": out.stderr}
    for f in (tmp_path / "af").rglob("*.log"):
        places[str(f)] = f.read_text(errors="replace")
    for f in (tmp_path / "omni-home").rglob("*"):
        if f.is_file() and f.suffix in (".html", ".json", ".log", ".txt"):
            places[str(f)] = f.read_text(errors="replace")
    rows = db.execute(
        "SELECT payload::text AS p, coalesce(last_error, '') AS e FROM omni.alert_outbox"
    ).fetchall()
    assert rows, "the confirmed regression queued a message"
    places["outbox rows"] = json.dumps(rows)
    places["slack messages"] = json.dumps(slack.messages)
    places["grafana"] = json.dumps(grafana.dashboards) + json.dumps(grafana.annotations)
    for where, text in places.items():
        assert SLACK_SECRET not in text and GRAFANA_SECRET not in text, where


def test_helpers_bind_to_loopback_only() -> None:
    sock = loopback_socket()
    try:
        assert sock.getsockname()[0] == "127.0.0.1"
    finally:
        sock.close()
    offenders = [
        str(p)
        for p in (REPO / "omni_tasks").rglob("*.py")
        if "0.0.0.0" in p.read_text() or "bind((''" in p.read_text()
    ]
    assert offenders == []
    launcher = (REPO / "omni_tasks/synthesis/server.py").read_text()
    assert re.search(r'"--host",\s*"127\.0\.0\.1"', launcher)

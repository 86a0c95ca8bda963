"""The pictures docs/users/reading-output.md shows, taken from real output with headless
Chromium: a night's HTML report, and a confirmed regression's Slack message (its Block Kit
blocks from the outbox, drawn by tests/slack_html.py). `OMNI_DOCS_IMAGES=1` writes them to
docs/images/ (then commit them)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from pathlib import Path

from typer.testing import CliRunner

from omni_tasks.alerts.slack import LocalSink, dispatch
from omni_tasks.cli import app
from omni_tasks.config import get_settings
from tests.chromium import screenshot
from tests.factories import REGRESS, SAME, store_night
from tests.slack_html import page

DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
MOST_BYTES = 200_000  # a picture in the docs stays small


def _keep(shot: Path) -> None:
    assert 20_000 < shot.stat().st_size < MOST_BYTES, shot.stat().st_size
    if os.environ.get("OMNI_DOCS_IMAGES"):
        shutil.copy(shot, DOCS_IMAGES / shot.name)


def _text(dom: str) -> str:
    """What the rendered page says, tags dropped and whitespace folded."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", dom)).split())


def test_a_confirmed_regression_alert_as_slack_draws_it(db, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OMNI_REPO_URL", "https://github.com/vllm-project/vllm-omni")
    get_settings.cache_clear()
    good, bad = "a1b2c3d4e5" * 4, "f6e5d4c3b2" * 4
    store_night(db, tmp_path, 0, SAME, candidate_commit=good)
    store_night(db, tmp_path, 1, REGRESS, candidate_commit=bad)
    assert dispatch(db, LocalSink(tmp_path / "outbox")).sent == 1
    (sent,) = (tmp_path / "outbox").glob("*.json")
    payload = json.loads(sent.read_text())["payload"]
    message = tmp_path / "alert.html"
    message.write_text(page(payload), encoding="utf-8")

    shot = tmp_path / "alert.png"
    run = screenshot(message, shot, "900,830")
    assert run.returncode == 0, run.stderr
    said = _text(run.stdout)
    header = payload["blocks"][0]["text"]["text"]
    assert header.startswith(":rotating_light: ") and "REGRESSED, confirmed" in header
    assert header.removeprefix(":rotating_light: ") in said
    (alert_id,) = [r["alert_id"] for r in db.execute("SELECT alert_id FROM omni.alert")]
    assert f"Next: Alert {alert_id} · omni-tasks alerts ack {alert_id} --note" in said
    # mrkdwn drawn, not printed: the SHAs as code, the compare view as a link.
    assert f"<code>{bad[:12]}</code>" in run.stdout
    compare = f"https://github.com/vllm-project/vllm-omni/compare/{good}...{bad}"
    assert f'<a href="{compare}">compare</a>' in run.stdout
    assert "*" not in said.split("Next:")[0] and "&lt;" not in run.stdout.split("<body>")[1]
    _keep(shot)


def test_a_regressed_nights_report_as_a_browser_draws_it(db, tmp_path: Path) -> None:
    store_night(db, tmp_path, 0, SAME)
    night = store_night(db, tmp_path, 1, REGRESS)
    report = tmp_path / "report.html"
    out = CliRunner().invoke(app, ["report", "--out", str(report), "--nightly", str(night)])
    assert out.exit_code == 0, out.output

    shot = tmp_path / "report.png"
    run = screenshot(report, shot, "1100,1000")
    assert [line for line in run.stderr.splitlines() if ":CONSOLE" in line] == []
    said = _text(run.stdout)
    assert f"seed_tts_en nightly {night}" in said
    assert "rebase main default REGRESSED yes 71 : 9 80 +5.7 pts [+4.1, +7.4]" in said
    assert 'class="main-svg"' in run.stdout  # plotly drew the charts, not just loaded
    _keep(shot)

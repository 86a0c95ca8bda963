"""Alert groups: one rebase that regresses several series (models × lanes) is one Slack parent
with a line per member and the members' details in its thread; it stays open while any member
is open, closes when the last recovers, and reopens when a new member's range overlaps it.
slack-sdk's real WebClient against the local Slack API, the real lifecycle on Postgres."""

from __future__ import annotations

import datetime as dt
import json

import psycopg
import pytest
from typer.testing import CliRunner

from omni_tasks.alerts.slack import SlackSink, deliver_series, dispatch
from omni_tasks.alerts.triage import triage
from omni_tasks.cli import app
from omni_tasks.config import get_settings
from omni_tasks.reports.html import nightly_report
from omni_tasks.series import Series
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.factories import D0, REGRESS, SAME, store_night
from tests.fakes.slack_api import SlackState, slack_app

QWEN, MINICPM = "Qwen/Qwen3-Omni-30B-A3B-Instruct", "openbmb/MiniCPM-o-4_5"
S1 = Series("seed_tts_en", QWEN, "cuda-h100x2")
S2 = Series("seed_tts_en", MINICPM, "cuda-h100x2")
S3 = Series("seed_tts_en", QWEN, "rocm-mi300")
S4 = Series("seed_tts_en", MINICPM, "rocm-mi300")


@pytest.fixture
def slack():
    state = SlackState()
    with serve_in_thread(slack_app(state)) as url:
        yield state, SlackSink("xoxb-test-0123456789", "C0ALERTS", f"{url}/api/")


def _night(db, tmp_path, i: int, shapes: dict[Series, object]) -> None:
    for series, shape in shapes.items():
        store_night(db, tmp_path, i, shape, candidate_commit=f"{i + 10:04d}abcd", series=series)


def _states(db) -> dict[str, str]:
    rows = db.execute("SELECT alert_key, kind, state FROM omni.alert ORDER BY alert_id").fetchall()
    return {
        r["alert_key"].split("|")[2] + "/" + r["alert_key"].split("|")[1]: r["state"]
        for r in rows
        if r["kind"] == "regression"
    } | {"group": next(r["state"] for r in rows if r["kind"] == "group")}


def test_a_rebase_that_regresses_three_series_is_one_group(db, tmp_path, slack) -> None:
    state, sink = slack
    everyone = (S1, S2, S3, S4)
    _night(db, tmp_path, -1, dict.fromkeys(everyone, SAME))  # the last good night of all four
    # Night 0: the rebase regresses three series on two lanes; S4's server is down (INFRA).
    _night(db, tmp_path, 0, {S1: REGRESS, S2: REGRESS, S3: REGRESS, S4: None})
    dispatch(db, sink)

    groups = db.execute("SELECT alert_id, state FROM omni.alert WHERE kind = 'group'").fetchall()
    assert len(groups) == 1
    group_id = groups[0]["alert_id"]
    parents = [m for m in state.top_level() if "regression" in m["text"]]
    assert len(parents) == 1, [m["text"] for m in state.top_level()]
    parent = parents[0]
    assert "3 regressions in 3 series (2 models, 2 lanes)" in parent["text"]
    assert parent["text"].split()[1] == "rebase" and "0009abcd"[:7] in parent["text"]
    body = "\n".join(b["text"]["text"] for b in parent["blocks"] if b.get("text"))
    for s in (S1, S2, S3):
        assert s.label in body  # one line per member, naming model and lane
    assert body.count("confirmed on one night") == 3
    assert f"omni-tasks alerts ack {group_id}" in body and "omni-tasks bisect 0009abcd" in body
    # Each member's own message (figures, clips, next steps) is in the group's thread.
    thread = state.replies(parent["ts"])
    opened = [m for m in thread if "REGRESSED, confirmed" in m["text"]]
    assert len(opened) == 3
    # Each names the group, the first too: it was alone when planned, and is rewritten with
    # the group as it goes into the group's thread.
    assert all(f"(group {group_id})" in str(m["blocks"]) for m in opened)

    for i in (1, 2, 3):  # S1 and S2 recover; S3 stays regressed
        _night(db, tmp_path, i, {S1: SAME, S2: SAME, S3: REGRESS, S4: None})
    dispatch(db, sink)
    assert _states(db) == {
        f"{S1.lane}/{S1.model}": "resolved",
        f"{S2.lane}/{S2.model}": "resolved",
        f"{S3.lane}/{S3.model}": "open",
        "group": "open",
    }
    assert "recovered" in state.updates[-1]["text"] or any(
        "recovered" in str(u["blocks"]) for u in state.updates if u["ts"] == parent["ts"]
    )

    for i in (4, 5, 6):  # the last member recovers: the group closes
        _night(db, tmp_path, i, {S1: SAME, S2: SAME, S3: SAME, S4: None})
    dispatch(db, sink)
    assert _states(db)["group"] == "resolved"
    group_updates = [u for u in state.updates if u["ts"] == parent["ts"]]
    assert group_updates[-1]["text"].startswith(":white_check_mark: resolved")
    assert any("all 3 members recovered" in m["text"] for m in state.replies(parent["ts"]))

    # Night 7: S4's server is back and regressed; its range (night -1, night 7] holds the
    # group's, so it joins and the group reopens, in the same thread.
    _night(db, tmp_path, 7, {S1: SAME, S2: SAME, S3: SAME, S4: REGRESS})
    dispatch(db, sink)
    assert _states(db)["group"] == "open"
    member = db.execute(
        "SELECT group_id FROM omni.alert WHERE kind = 'regression' AND alert_key LIKE %s",
        (f"%|{S4.lane}|%",),
    ).fetchone()
    assert member["group_id"] == group_id
    assert len([m for m in state.top_level() if "regression" in m["text"]]) == 1
    assert any("reopened: a new member joined" in m["text"] for m in state.replies(parent["ts"]))
    assert "4 regressions in 4 series (2 models, 2 lanes)" in state.updates[-1]["text"]
    events = {r["kind"] for r in db.execute("SELECT kind FROM omni.event")}
    assert {"group_opened", "group_resolved", "group_reopened"} <= events

    # The night's report of any member's series shows the group and every member.
    page = nightly_report(db, S4, D0 + dt.timedelta(days=7), 0.5)
    assert f"Alert group {group_id}" in page and all(s.label in page for s in (S1, S2, S3, S4))

    # `alerts list` lists the group (found through its members' keys) and each member's group.
    cli = CliRunner()
    listed = json.loads(cli.invoke(app, ["alerts", "list", "--json", "--lane", S4.lane]).stdout)
    assert {(r["kind"], r["group_id"]) for r in listed} >= {
        ("group", None),
        ("regression", group_id),
    }
    narrow = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["alerts", "list"])
    assert all(len(line) <= 80 for line in narrow.output.splitlines()), narrow.output
    assert f"group|rebase>main|{D0}" in narrow.output and f" {group_id} " in narrow.output

    # A triage verb on the group acts on every open member.
    triage(db, group_id, "ack", by="alice", note="bisecting the rebase")
    db.commit()
    statuses = db.execute(
        "SELECT kind, details -> 'triage' ->> 'status' AS status FROM omni.alert "
        "WHERE state = 'open' ORDER BY alert_id"
    ).fetchall()
    assert statuses == [
        {"kind": "group", "status": "acknowledged"},
        {"kind": "regression", "status": "acknowledged"},
    ]


def test_the_triage_delay_holds_opening_posts_until_the_group_can_form(
    db, tmp_path, slack, monkeypatch
) -> None:
    state, sink = slack
    monkeypatch.setenv("OMNI_ALERT_TRIAGE_DELAY_S", "1200")
    get_settings.cache_clear()
    _night(db, tmp_path, -1, {S1: SAME, S2: SAME})
    _night(db, tmp_path, 0, {S1: REGRESS})
    report = dispatch(db, sink)  # S1 decided first: its alert waits for the other series
    assert (report.sent, report.waiting) == (0, 1) and state.messages == []
    _night(db, tmp_path, 0, {S2: REGRESS})
    assert dispatch(db, sink).sent == 0
    db.execute("UPDATE omni.alert SET hold_until = now() WHERE hold_until IS NOT NULL")
    db.commit()
    dispatch(db, sink)
    tops = [m for m in state.top_level() if "regression" in m["text"]]
    assert len(tops) == 1 and "2 regressions in 2 series (2 models, 1 lane)" in tops[0]["text"]
    assert len([m for m in state.replies(tops[0]["ts"]) if "REGRESSED" in m["text"]]) == 2


def test_a_series_is_delivered_when_its_own_hold_ends(
    db, results_dsn, tmp_path, slack, monkeypatch
) -> None:
    """A series' delivery (the nightly's per-series sensor) is done once none of its own posts
    is held, whatever another series' outbox holds, and never while another dispatcher holds
    the outbox (the posts it skipped as held would wait for the night's last delivery)."""
    state, sink = slack
    monkeypatch.setenv("OMNI_ALERT_TRIAGE_DELAY_S", "1200")
    get_settings.cache_clear()
    _night(db, tmp_path, -1, {S1: SAME, S2: SAME})
    _night(db, tmp_path, 0, {S1: REGRESS, S2: SAME})
    report, done = deliver_series(db, sink, S1)
    assert (report.sent, report.waiting, done) == (0, 1, False) and state.messages == []
    assert deliver_series(db, sink, S2)[1]  # nothing of its own held: done at once
    db.execute("UPDATE omni.alert SET hold_until = now() WHERE hold_until IS NOT NULL")
    db.commit()
    with psycopg.connect(results_dsn, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(hashtext('omni_alert_dispatch'))")
        report, done = deliver_series(db, sink, S1)
        assert (report.busy, done, state.messages) == (True, False, [])
        other.execute("SELECT pg_advisory_unlock(hashtext('omni_alert_dispatch'))")
    report, done = deliver_series(db, sink, S1)
    assert (report.sent, done) == (1, True)
    assert [m for m in state.top_level() if "REGRESSED" in m["text"]]


def test_regressions_of_different_rebases_are_not_grouped(db, tmp_path, slack) -> None:
    state, sink = slack
    _night(db, tmp_path, -1, {S1: SAME, S2: SAME})
    _night(db, tmp_path, 0, {S1: REGRESS, S2: SAME})
    _night(db, tmp_path, 1, {S1: REGRESS, S2: SAME})
    _night(db, tmp_path, 2, {S1: REGRESS, S2: REGRESS})  # S2's range (1, 2] misses S1's (-1, 0]
    dispatch(db, sink)
    assert db.execute("SELECT count(*) AS n FROM omni.alert WHERE kind = 'group'").fetchone() == {
        "n": 0
    }
    assert len([m for m in state.top_level() if "REGRESSED" in m["text"]]) == 2

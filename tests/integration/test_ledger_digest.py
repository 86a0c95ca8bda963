"""The standing failures where a person meets them, on a planted history (items broken night
after night, one fixed at a known commit, one new this week): the weekly Slack digest through
the outbox and the Slack fake (once per week), the report's section, the Grafana panels' SQL
and the demo's line."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, cast

import pytest

from omni_tasks.alerts.slack import SlackSink, dispatch
from omni_tasks.grafana.dashboards import trend_dashboard
from omni_tasks.jobs.demo import standing_line
from omni_tasks.jobs.ledger_digest import send_digests
from omni_tasks.reports.html import nightly_report
from omni_tasks.store import ledger
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.fakes.grafana_api import expand, panel_queries
from tests.fakes.slack_api import SlackState, slack_app
from tests.integration.test_ledger_issues import D0, H100, store_nights

if TYPE_CHECKING:
    from airflow.sdk import Context

TOKEN = "xoxb-planted-secret-0123456789"
LAST = 20  # nights 0..20: u00 always broken, u01 broken until 13, u02 broken from 14


def planted(n: int, utt: str) -> str:
    broken = utt == "u00" or (utt == "u01" and n < 14) or (utt == "u02" and n >= 14)
    return "over" if broken else "ok"


def _section(page: str) -> str:
    return page.split('id="standing"')[1].split("<h2>")[0]


@pytest.fixture
def history(db):
    store_nights(db, H100, range(LAST + 1), planted)
    return db


def test_the_weekly_digest_goes_out_once_through_the_outbox(history) -> None:
    lines = send_digests(history, [H100], "main", 28, "2026-W43")
    assert lines == [
        f"{H100.label} main: 2 chronic (2 over_generation), 0 flaky; since "
        f"{D0 + dt.timedelta(days=LAST - 7)}: 1 joined, 1 fixed"
    ]
    assert send_digests(history, [H100], "main", 28, "2026-W43") == lines  # queued once
    state = SlackState()
    with serve_in_thread(slack_app(state)) as url:
        report = dispatch(history, SlackSink(TOKEN, "C0DIGEST", f"{url}/api/"))
    assert report.sent == 1
    (posted,) = state.top_level()
    text = str(posted["blocks"])
    assert "Standing failures" in posted["text"] and H100.label in posted["text"]
    assert "over＿generation: 2" in text or "over_generation: 2" in text
    assert "u02" in text.split("New chronic items")[1].split("Fixed items")[0]
    # u01 was broken through night 13 (commit 13cc…) and clean from night 14 (14cc…).
    assert "u01: fixed in 13cccccccccc..14cccccccccc" in text


def test_the_report_section_the_panels_and_the_demo_line(history) -> None:
    night = D0 + dt.timedelta(days=LAST)
    page = nightly_report(history, H100, night, 0.5)
    section = _section(page)
    assert "2 chronic (2 over_generation)" in section
    # Since the last report (the night before): u02 became chronic (7 nights of 7).
    assert "Joined since" in section and "u02 (over_generation" in section
    # u01 is fixed on the first night the ledger says so: that night's report names it, the
    # next night's does not (it was fixed before the last report).
    fixed = next(
        d
        for d in (D0 + dt.timedelta(days=n) for n in range(14, LAST + 1))
        if any(
            i.utt_id == "u01" and i.state == "fixed"
            for i in ledger.load(history, H100, branch="main", nights=28, until=d).items
        )
    )
    said = "u01 (was over_generation; fixed in 13cccccccccc..14cccccccccc)"
    assert said in _section(nightly_report(history, H100, fixed, 0.5))
    assert said not in _section(nightly_report(history, H100, fixed + dt.timedelta(1), 0.5))
    history.commit()
    queries = panel_queries(trend_dashboard())
    variables: dict[str, str | list[str]] = {
        "benchmark": H100.benchmark,
        "model": H100.model,
        "lane": H100.lane,
        "branch": ["main"],
    }
    frm, to = f"{D0}T00:00:00Z", f"{night + dt.timedelta(days=1)}T00:00:00Z"
    by_mode = history.execute(
        expand(queries["Standing failures: chronic items by mode/A"], variables, frm, to)
    ).fetchall()
    last = [r for r in by_mode if r["time"].date() == night]
    assert [(r["metric"], r["items"]) for r in last] == [("main over_generation", 2)]
    current = history.execute(
        expand(queries["Standing failures: the current chronic set/A"], variables, frm, to)
    ).fetchall()
    assert [(r["utt_id"], r["mode"], r["nightly"]) for r in current] == [
        ("u00", "over_generation", night),
        ("u02", "over_generation", night),
    ]
    line = standing_line(history, H100, "main")
    assert line.startswith(f"standing failures on main (21 night(s), {D0} – {night}): 2 chronic")


def test_the_weekly_task_digests_only_the_series_the_config_opts_in(history, monkeypatch) -> None:
    from omni_tasks.dag_support import tasks

    monday = cast("Context", {"logical_date": dt.datetime(2026, 10, 26, 6, tzinfo=dt.UTC)})
    monkeypatch.setenv("AIRFLOW_VAR_OMNI_NIGHTLY_CONFIG", "version: 2\nseries: []\n")
    assert tasks.ledger_digest(monday) == []  # no `ledger_digest:` section: no series opted in
    opted = f"version: 2\nseries: []\nledger_digest: {{series: ['{H100.key}'], nights: 21}}\n"
    monkeypatch.setenv("AIRFLOW_VAR_OMNI_NIGHTLY_CONFIG", opted)
    (line,) = tasks.ledger_digest(monday)
    assert line.startswith(f"{H100.label} main: 2 chronic")
    assert tasks.ledger_digest(monday) == [line]  # a retried task queues nothing twice
    keys = [
        r["idempotency_key"]
        for r in history.execute("SELECT idempotency_key FROM omni.alert_outbox").fetchall()
    ]
    assert keys == [f"ledger-digest|{H100.key}|main|2026-W44"]

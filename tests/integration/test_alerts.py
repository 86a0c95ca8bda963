"""Slack alert lifecycle and delivery: slack-sdk's real WebClient against a local Slack API."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from bench.artifacts import ABShape
from omni_tasks.alerts.slack import LocalSink, SlackSink, dispatch
from omni_tasks.contracts.night import NightQuestion
from omni_tasks.evidence.audio import write_audio
from omni_tasks.gates.policy import load_policy
from omni_tasks.jobs.decide import decide_series
from omni_tasks.series import Series
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.factories import D0, REGRESS, SAME, store_night
from tests.fakes.slack_api import SlackState, slack_app

TOKEN = "xoxb-planted-secret-0123456789"


@pytest.fixture
def slack():
    state = SlackState()
    with serve_in_thread(slack_app(state)) as url:
        yield state, SlackSink(TOKEN, "C0ALERTS", f"{url}/api/")


def test_open_two_updates_resolve_is_one_thread(db, tmp_path: Path, slack) -> None:
    state, sink = slack
    store_night(db, tmp_path, 0, REGRESS)  # p << 1e-4: confirmed on its first night
    # Give the clips audio on both sides so the thread gets the worst ones, side by side.
    rows = db.execute(
        "SELECT a.run_id, a.utt_id, r.branch FROM omni.clip_audio a JOIN omni.run r USING (run_id)"
    ).fetchall()
    for r in rows:
        uri = tmp_path / "omni-home" / "audio" / r["branch"] / f"{r['utt_id']}.wav"
        write_audio(str(uri), np.zeros(2400, np.float32), 24_000)
        db.execute(
            "UPDATE omni.clip_audio SET audio_uri = %s WHERE run_id = %s AND utt_id = %s",
            (str(uri), r["run_id"], r["utt_id"]),
        )
    db.commit()
    db.execute("DELETE FROM omni.alert")  # plan night 0 again, now with audio on record
    db.commit()
    decide_series(
        db, NightQuestion(Series("seed_tts_en"), D0, "main", ("main", "rebase")), load_policy()
    )
    assert dispatch(db, sink).sent == 7  # the post, then three clips × both sides in its thread
    parent = state.top_level()[0]["ts"]
    assert [u["thread_ts"] for u in state.uploads] == [parent] * 6
    assert all(u["bytes"] > 0 and u["done"] for u in state.uploads)
    titles = [u["title"] for u in state.uploads]
    assert [t.split(": ")[1].split(" (")[0] for t in titles] == [
        "baseline main",
        "candidate rebase",
    ] * 3
    assert titles[0].split(":")[0] == titles[1].split(":")[0]  # one clip, both sides
    opened = "\n".join(b["text"]["text"] for b in state.top_level()[0]["blocks"] if b.get("text"))
    assert "> reference:" in opened and "> rebase heard:" in opened and "> main heard:" in opened

    store_night(db, tmp_path, 1, REGRESS)
    store_night(db, tmp_path, 2, REGRESS)
    dispatch(db, sink)
    store_night(db, tmp_path, 3, SAME)  # quiet nights: two do not resolve (they say so)
    store_night(db, tmp_path, 4, SAME)
    dispatch(db, sink)
    assert db.execute("SELECT state FROM omni.alert").fetchone()["state"] == "open"
    store_night(db, tmp_path, 5, SAME)  # the third in a row does: together they rule it out
    dispatch(db, sink)

    assert len(state.top_level()) == 1
    replies = [m["text"] for m in state.replies(parent)]
    assert len(replies) == 5 and "still REGRESSED" in replies[0] and "resolved" in replies[4]
    assert "still open — 1 night(s) without a regression in a row" in replies[2]
    assert [u["ts"] for u in state.updates] == [parent] * 3  # two nights + the resolve
    assert "resolved" in state.updates[-1]["text"]
    assert db.execute("SELECT state, resolved_nightly FROM omni.alert").fetchone() == {
        "state": "resolved",
        "resolved_nightly": D0 + dt.timedelta(days=5),
    }
    kinds = [r["kind"] for r in db.execute("SELECT kind FROM omni.event ORDER BY time")]
    assert kinds == ["regression_opened", "regression_resolved"]
    assert state.tokens == {f"Bearer {TOKEN}"}


def test_replanning_and_redispatching_a_night_posts_nothing_new(db, tmp_path, slack) -> None:
    state, sink = slack
    date = store_night(db, tmp_path, 0, REGRESS)
    dispatch(db, sink)
    decide_series(
        db, NightQuestion(Series("seed_tts_en"), date, "main", ("main", "rebase")), load_policy()
    )
    assert dispatch(db, sink).sent == 0
    assert len(state.messages) == 1


def test_unconfirmed_regression_posts_nothing(db, tmp_path, slack) -> None:
    state, sink = slack
    weak = ABShape(n=1088, stable_broken=80, regressed=32, improved=9)  # REGRESSED, p > 1e-4
    store_night(db, tmp_path, 0, weak)
    verdict = db.execute(
        "SELECT verdict, confirmed FROM omni.gate_decision WHERE candidate_branch = 'rebase'"
    ).fetchone()
    assert verdict == {"verdict": "REGRESSED", "confirmed": False}
    assert dispatch(db, sink).sent == 0 and state.messages == []


def test_infra_nights_neither_resolve_nor_open_a_second_alert(db, tmp_path, slack) -> None:
    state, sink = slack
    store_night(db, tmp_path, 0, REGRESS)
    store_night(db, tmp_path, 1, None)  # rebase missing: INFRA
    store_night(db, tmp_path, 2, SAME)
    store_night(db, tmp_path, 3, None)  # INFRA again: does not count, does not break the streak
    store_night(db, tmp_path, 4, REGRESS)
    dispatch(db, sink)
    alerts = db.execute("SELECT kind, state FROM omni.alert ORDER BY alert_id").fetchall()
    assert [a for a in alerts if a["kind"] == "regression"] == [
        {"kind": "regression", "state": "open"}
    ]
    regression_posts = [m for m in state.top_level() if "REGRESSED" in (m["text"] or "")]
    assert len(regression_posts) == 1
    infra_posts = [m for m in state.top_level() if "INFRA" in (m["text"] or "")]
    assert len(infra_posts) == 2  # night 1 opened one; night 2 resolved it; night 3 opened anew
    cleared = [m["text"] for m in state.messages if "INFRA cleared" in (m["text"] or "")]
    assert len(cleared) == 2 and "decided again (verdict SAME)" in cleared[0]
    assert not any("REGRESSED on" in t for t in cleared)  # a cleared INFRA is not a verdict


def test_rate_limits_and_server_errors_are_retried(db, tmp_path, slack) -> None:
    state, sink = slack
    store_night(db, tmp_path, 0, REGRESS)
    state.fail_next["chat.postMessage"] = [429, 500]
    report = dispatch(db, sink)
    assert report.sent == 1 and len(state.messages) == 1
    assert state.calls.count("chat.postMessage") == 3


def test_killed_between_send_and_record_does_not_double_post(db, tmp_path, slack) -> None:
    state, sink = slack

    class Killed(BaseException):
        pass

    class DiesAfterSending(SlackSink):
        def post(self, message, key):
            super().post(message, key)
            raise Killed  # the process dies before the outbox row is marked sent

    store_night(db, tmp_path, 0, REGRESS)
    with pytest.raises(Killed):
        dispatch(db, DiesAfterSending(TOKEN, "C0ALERTS", sink.client.base_url))
    db.rollback()
    assert db.execute("SELECT state FROM omni.alert_outbox").fetchone()["state"] == "sending"
    report = dispatch(db, sink)
    assert (report.recovered, report.sent) == (1, 0)
    assert len(state.messages) == 1
    assert (
        db.execute("SELECT parent_ts FROM omni.alert").fetchone()["parent_ts"]
        == state.messages[0]["ts"]
    )


def test_failures_keep_the_message_and_never_leak_the_token(db, tmp_path, slack) -> None:
    state, sink = slack
    store_night(db, tmp_path, 0, REGRESS)
    state.fail_next["chat.postMessage"] = [500] * 10
    report = dispatch(db, sink)
    assert report.failed == 1
    row = db.execute("SELECT state, attempts, last_error FROM omni.alert_outbox").fetchone()
    assert row["state"] == "pending" and row["attempts"] == 1
    assert TOKEN not in row["last_error"]
    state.fail_next["chat.postMessage"] = []
    assert dispatch(db, sink).sent == 1


def test_local_outbox_writes_each_message_once(db, tmp_path, capsys) -> None:
    store_night(db, tmp_path, 0, REGRESS)
    sink = LocalSink(tmp_path / "outbox")
    assert dispatch(db, sink).sent == 1
    db.execute("UPDATE omni.alert_outbox SET state = 'sending'")  # pretend the mark was lost
    db.commit()
    assert dispatch(db, sink).recovered == 1
    files = list((tmp_path / "outbox").glob("*.json"))
    assert len(files) == 1
    doc = json.loads(files[0].read_text())
    assert doc["op"] == "post" and doc["payload"]["blocks"][0]["type"] == "header"
    printed = capsys.readouterr().out
    assert "REGRESSED" in printed and "regressed 71 : improved 9" in printed


def test_a_slack_timeout_is_an_unknown_outcome_resolved_by_lookup(db, tmp_path, slack) -> None:
    state, sink = slack
    store_night(db, tmp_path, 0, REGRESS)
    state.delay_next["chat.postMessage"] = [3.0]  # posted, but the answer comes too late
    impatient = SlackSink(TOKEN, "C0ALERTS", sink.client.base_url, retries=0, timeout_s=1)
    assert dispatch(db, impatient).failed == 1
    assert db.execute("SELECT state FROM omni.alert_outbox").fetchone()["state"] == "sending"
    report = dispatch(db, sink)
    assert (report.recovered, report.sent) == (1, 0)
    assert len(state.messages) == 1  # never posted twice


WEAK = ABShape(n=1088, stable_broken=80, regressed=32, improved=9)  # REGRESSED, p > 1e-4


def test_a_backfill_that_unconfirms_the_opening_night_withdraws_the_alert(
    db, tmp_path, slack
) -> None:
    state, sink = slack
    store_night(db, tmp_path, 1, WEAK)
    store_night(db, tmp_path, 3, WEAK)  # consecutive within the 3-day window: confirmed
    dispatch(db, sink)
    assert db.execute("SELECT state FROM omni.alert").fetchone()["state"] == "open"
    parent = state.top_level()[0]["ts"]
    store_night(db, tmp_path, 2, SAME)  # backfilled: night 3 is no longer confirmed
    dispatch(db, sink)
    rows = db.execute(
        "SELECT nightly, confirmed FROM omni.gate_decision "
        "WHERE candidate_branch = 'rebase' ORDER BY nightly"
    ).fetchall()
    assert [r["confirmed"] for r in rows] == [False, False, False]
    assert db.execute("SELECT state FROM omni.alert").fetchone()["state"] == "resolved"
    assert "withdrawn" in state.updates[-1]["text"]
    assert "no longer confirmed" in state.updates[-1]["text"]
    reply = state.replies(parent)[-1]["text"]
    assert "backfill" in reply
    assert "now REGRESSED, not confirmed" in reply and "Holm p_regress" in reply  # and why
    assert len(state.top_level()) == 1
    kinds = sorted(r["kind"] for r in db.execute("SELECT kind FROM omni.event"))
    assert kinds == ["regression_opened", "regression_withdrawn"]


def test_a_backfill_that_confirms_a_later_night_opens_its_alert(db, tmp_path, slack) -> None:
    state, sink = slack
    store_night(db, tmp_path, 2, WEAK)  # alone: unconfirmed, nothing posted
    dispatch(db, sink)
    assert state.messages == []
    store_night(db, tmp_path, 1, WEAK)  # backfilled the night before: night 2 confirms
    dispatch(db, sink)
    alert = db.execute("SELECT state, opened_nightly FROM omni.alert").fetchone()
    assert alert == {"state": "open", "opened_nightly": D0 + dt.timedelta(days=2)}
    assert len(state.top_level()) == 1


def test_nights_weeks_apart_are_not_consecutive(db, tmp_path, slack) -> None:
    state, sink = slack
    store_night(db, tmp_path, 1, WEAK)
    store_night(db, tmp_path, 15, WEAK)
    dispatch(db, sink)
    assert state.messages == []


def test_triage_updates_the_message_keeps_history_and_invalid_holds_until_a_new_commit(
    db, tmp_path, slack
) -> None:
    from typer.testing import CliRunner

    from omni_tasks.cli import app

    state, sink = slack
    cli = CliRunner()
    store_night(db, tmp_path, 0, REGRESS, candidate_commit="bad0001")
    dispatch(db, sink)
    (alert_id,) = [r["alert_id"] for r in db.execute("SELECT alert_id FROM omni.alert")]
    db.commit()  # the CLI works on its own connection
    parent = state.top_level()[0]["ts"]
    bad = cli.invoke(app, ["alerts", "ack", str(alert_id), "--link", "javascript:alert(1)"])
    assert bad.exit_code == 1 and "--link must be an http(s) URL" in bad.output

    ack = cli.invoke(
        app,
        [
            "alerts",
            "ack",
            str(alert_id),
            "--by",
            "alice",
            "--note",
            "bisecting",
            "--link",
            "https://github.com/o/r/issues/7",
        ],
    )
    assert ack.exit_code == 0, ack.output
    dispatch(db, sink)
    status = json.dumps(state.updates[-1]["blocks"])
    assert state.updates[-1]["ts"] == parent and "*Acknowledged* by alice" in status
    assert "bisecting" in status and "https://github.com/o/r/issues/7|linked issue" in status
    assert "Acknowledged by alice" in state.replies(parent)[-1]["text"].replace("*", "")
    # A second ack without a note keeps the first one's note and link on the message, under
    # the name of the person who wrote it.
    assert cli.invoke(app, ["alerts", "ack", str(alert_id), "--by", "carol"]).exit_code == 0
    dispatch(db, sink)
    status = json.dumps(state.updates[-1]["blocks"])
    assert "*Acknowledged* by carol" in status and "bisecting (noted by alice)" in status
    assert "https://github.com/o/r/issues/7|linked issue" in status

    store_night(db, tmp_path, 1, REGRESS, candidate_commit="bad0001")  # updates continue
    dispatch(db, sink)
    db.commit()
    assert "*Acknowledged* by carol" in json.dumps(state.updates[-1]["blocks"])

    invalid = cli.invoke(
        app, ["alerts", "invalid", str(alert_id), "--by", "bob", "--note", "runner had a bad GPU"]
    )
    assert invalid.exit_code == 0, invalid.output
    dispatch(db, sink)
    assert "*Invalid* by bob" in json.dumps(state.updates[-1]["blocks"])
    row = db.execute("SELECT state, details FROM omni.alert").fetchone()
    assert row["state"] == "resolved"
    history = row["details"]["triage"]["history"]
    assert [(h["status"], h["by"]) for h in history] == [
        ("acknowledged", "alice"),
        ("acknowledged", "carol"),
        ("invalid", "bob"),
    ]
    assert all(h["at"] for h in history)

    store_night(db, tmp_path, 2, REGRESS, candidate_commit="bad0001")  # same commit: held
    assert db.execute("SELECT count(*) AS n FROM omni.alert").fetchone()["n"] == 1
    store_night(db, tmp_path, 3, REGRESS, candidate_commit="new0002")  # a new commit: opens
    assert db.execute("SELECT count(*) AS n FROM omni.alert").fetchone()["n"] == 2
    db.commit()
    again = cli.invoke(app, ["alerts", "reopen", str(alert_id)])
    assert again.exit_code == 1 and "another open alert" in again.output
    kinds = {r["kind"] for r in db.execute("SELECT kind FROM omni.event")}
    assert {"alert_acknowledged", "alert_invalid"} <= kinds


def test_the_alert_names_the_commit_range_with_a_compare_link(
    db, tmp_path, slack, monkeypatch
) -> None:
    from omni_tasks.config import get_settings

    monkeypatch.setenv("OMNI_REPO_URL", "https://github.com/vllm-project/vllm-omni")
    get_settings.cache_clear()
    state, sink = slack
    good, bad = "a1" * 20, "b2" * 20
    store_night(db, tmp_path, 0, SAME, candidate_commit=good)
    store_night(db, tmp_path, 1, REGRESS, candidate_commit=bad)
    dispatch(db, sink)
    get_settings.cache_clear()
    (post,) = state.top_level()
    text = "\n".join(b["text"]["text"] for b in post["blocks"] if b.get("text"))
    night0, night1 = D0, D0 + dt.timedelta(days=1)
    assert f"last good `{good[:12]}` ({night0}) → first bad `{bad[:12]}` ({night1})" in text
    assert f"/compare/{good}...{bad}|compare>" in text


def test_alerts_list_filters_by_status_benchmark_branch_and_night(db, tmp_path) -> None:
    from typer.testing import CliRunner

    from omni_tasks.cli import app

    store_night(db, tmp_path, 0, REGRESS)  # opens a regression alert on rebase
    store_night(db, tmp_path, 1, None)  # rebase missing: an INFRA alert
    db.commit()
    cli = CliRunner()

    def keys(*args: str) -> list[str]:
        out = cli.invoke(app, ["alerts", "list", "--json", *args])
        assert out.exit_code == 0, out.output
        return sorted(r["alert_key"] for r in json.loads(out.stdout))

    everything = keys()
    assert len(everything) == 2
    assert (
        keys("--benchmark", "seed_tts_en", "--branch", "rebase", "--status", "open") == everything
    )
    assert keys("--branch", "main") == [] and keys("--benchmark", "daily_omni") == []
    assert keys("--status", "resolved") == []
    assert keys("--since", str(D0 + dt.timedelta(days=1))) == [
        k for k in everything if "infra" in k
    ]
    bad = cli.invoke(app, ["alerts", "list", "--status", "closed"])
    assert bad.exit_code == 1 and "open or resolved" in bad.output
    # At 80 columns every alert's id (what triage commands take) and state are shown, and the
    # key is shortened readably; --wide shows the whole key.
    ids = [
        str(r["alert_id"]) for r in json.loads(cli.invoke(app, ["alerts", "list", "--json"]).stdout)
    ]
    narrow = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["alerts", "list"])
    assert narrow.exit_code == 0, narrow.output
    assert all(len(line) <= 80 for line in narrow.output.splitlines()), narrow.output
    header = next(line for line in narrow.output.splitlines() if " id " in f" {line} ")
    assert "state" in header and "key" in header
    rows = [
        line.split("│")[1].strip() for line in narrow.output.splitlines() if line.count("│") > 2
    ]
    assert sorted(r for r in rows if r.isdigit()) == sorted(ids)
    assert "seed_tts_en|Qwen3-Omni-30…|default|rebase>main|tail" in narrow.output
    wide = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["alerts", "list", "--wide"])
    assert all(k in wide.output for k in everything)


def test_a_task_failure_links_its_log_and_names_the_try(db, monkeypatch) -> None:
    """The first failed try of a series' night opens one INFRA alert (its id and what to run
    next in the message); every later try, of any of its tasks, replies in its thread."""
    from omni_tasks.alerts.infra import FailedTry, task_failed
    from omni_tasks.config import get_settings

    monkeypatch.setenv("OMNI_AIRFLOW_URL", "https://airflow.example")
    get_settings.cache_clear()
    run_id = "scheduled__2026-11-30T02:00:00+00:00"
    night = dt.date(2026, 11, 30)
    lane = Series("daily_omni", "openbmb/MiniCPM-o-4_5", "rocm-mi300")
    other = Series("daily_omni", "openbmb/MiniCPM-o-4_5", "cuda-h100x2")
    tries = [(lane, 0, 1), (lane, 1, 1), (lane, 0, 2), (lane, 0, 2), (other, 0, 1)]
    ids = [
        task_failed(db, FailedTry(s, "omni_nightly", "run_branch", run_id, night, n, "boom", i))
        for s, i, n in tries  # the fourth is the third again (a callback run twice)
    ]
    get_settings.cache_clear()
    assert ids[:4] == [ids[0]] * 4 and ids[4] != ids[0]  # one alert per series and night
    rows = db.execute(
        "SELECT idempotency_key, alert_id, kind, payload FROM omni.alert_outbox ORDER BY message_id"
    ).fetchall()
    assert [(r["alert_id"], r["kind"]) for r in rows] == [
        (ids[0], "post"),
        (ids[0], "reply"),
        (ids[0], "reply"),
        (ids[4], "post"),
    ]
    # Keyed by the failing task's series: another lane's failure is another alert.
    assert all(r["idempotency_key"].startswith(f"{lane.key}|task|") for r in rows[:3])
    opening = json.dumps(rows[0]["payload"])
    assert f"*Alert {ids[0]}*" in opening
    assert (
        f"`omni-tasks runs list --benchmark daily_omni --model {lane.model} --lane rocm-mi300 "
        "--nightly 2026-11-30`" in opening
    )
    text = json.dumps(rows[1]["payload"])
    assert f"`{run_id}`" in text and "map index `1`" in text
    assert lane.label in json.loads(opening)["text"]
    assert (
        "https://airflow.example/dags/omni_nightly/runs/scheduled__2026-11-30T02%3A00%3A00"
        "%2B00%3A00/tasks/run_branch/mapped/1?try_number=1|Task log" in text
    )
    kinds = db.execute("SELECT DISTINCT kind FROM omni.alert").fetchall()
    assert [k["kind"] for k in kinds] == ["infra"]


def test_duplicate_and_downstream_close_an_alert_and_name_its_owner(db, tmp_path, slack) -> None:
    from typer.testing import CliRunner

    from omni_tasks.alerts.triage import TriageError, triage
    from omni_tasks.cli import app

    state, sink = slack
    store_night(db, tmp_path, 0, REGRESS, candidate_commit="bad0001")  # a regression alert
    store_night(db, tmp_path, 1, None)  # rebase missing: an INFRA alert
    dispatch(db, sink)
    ids = {r["kind"]: r["alert_id"] for r in db.execute("SELECT alert_id, kind FROM omni.alert")}
    regression, other = ids["regression"], ids["infra"]
    db.commit()
    cli = CliRunner()
    for args, message in (
        (["duplicate", str(regression), "--of", str(regression)], "of itself"),
        (["duplicate", str(regression), "--of", "999"], "no alert #999"),
    ):
        out = cli.invoke(app, ["alerts", *args])
        assert out.exit_code == 1 and message in out.output, out.output
    with pytest.raises(TriageError, match="--of ALERT goes with duplicate and downstream"):
        triage(db, regression, "ack", by="x", of=other)
    out = cli.invoke(
        app, ["alerts", "duplicate", str(regression), "--of", str(other), "--by", "dee"]
    )
    assert out.exit_code == 0, out.output
    dispatch(db, sink)
    assert f"*Duplicate of alert #{other}* by dee" in json.dumps(state.updates[-1]["blocks"])
    row = db.execute("SELECT state FROM omni.alert WHERE alert_id = %s", (regression,)).fetchone()
    assert row["state"] == "resolved"
    store_night(db, tmp_path, 2, REGRESS, candidate_commit="bad0001")  # same commit: held
    assert (
        db.execute("SELECT count(*) AS n FROM omni.alert WHERE kind = 'regression'").fetchone()["n"]
        == 1
    )
    db.commit()
    assert cli.invoke(app, ["alerts", "reopen", str(regression)]).exit_code == 0
    out = cli.invoke(app, ["alerts", "downstream", str(regression), "--of", str(other)])
    assert out.exit_code == 0, out.output
    history = db.execute(
        "SELECT details FROM omni.alert WHERE alert_id = %s", (regression,)
    ).fetchone()["details"]["triage"]["history"]
    assert [(h["status"], h.get("of")) for h in history] == [
        ("duplicate", other),
        ("reopened", None),
        ("downstream", other),
    ]


def test_a_night_that_cannot_rule_the_regression_out_keeps_the_alert_open(
    db, tmp_path: Path, slack
) -> None:
    """Quiet nights pooled must rule a regression of min_effect out: a small step (Δ +1.8
    pts, not REGRESSED) among them keeps the alert open past three nights, and the thread says
    why; once three nights in a row together rule it out (two SAME with one small) it
    resolves."""
    state, sink = slack
    small = ABShape(n=1088, stable_broken=80, regressed=30, improved=10)  # Δ +1.8 pts
    store_night(db, tmp_path, 0, REGRESS)
    for i in (1, 2, 3):
        store_night(db, tmp_path, i, small)
    dispatch(db, sink)
    verdicts = [
        r["verdict"]
        for r in db.execute("SELECT verdict FROM omni.gate_decision ORDER BY nightly").fetchall()
    ]
    assert "REGRESSED" not in verdicts[1:]
    assert db.execute("SELECT state FROM omni.alert").fetchone()["state"] == "open"
    parent = state.top_level()[0]["ts"]
    held = [m["text"] for m in state.replies(parent) if "still open" in m["text"]]
    assert len(held) == 3 and "3 night(s) without a regression in a row" in held[-1]
    assert "rule out a regression of +2.0 pts" in held[-1] and "pooled" in held[-1]
    store_night(db, tmp_path, 4, SAME)
    dispatch(db, sink)
    assert db.execute("SELECT state FROM omni.alert").fetchone()["state"] == "open"
    store_night(db, tmp_path, 5, SAME)  # (small, SAME, SAME) pooled: below +2 pts
    dispatch(db, sink)
    assert db.execute("SELECT state, resolved_nightly FROM omni.alert").fetchone() == {
        "state": "resolved",
        "resolved_nightly": D0 + dt.timedelta(days=5),
    }


def test_a_small_suite_alert_resolves_once_its_quiet_nights_rule_out_what_it_can_detect(
    db, tmp_path, slack
) -> None:
    """300 items (a Daily-Omni-sized series) at ψ = .1: three quiet nights cannot tell 2
    points from noise, so the series is gated wider (analysis/resolution.py: the floor is
    (z(.975) + z(.98)) standard errors of three nights, ≈ 4.4 points), not held to 2 points
    (asking for 2 kept most A/A alerts open for weeks). A step of 4 points that is not
    REGRESSED on any night keeps it open; three quiet nights resolve it, and the thread says
    which effect they ruled out and why it is wider than min_effect."""
    state_, sink = slack
    step = ABShape(n=300, stable_broken=30, regressed=35, improved=5)
    below = ABShape(n=300, stable_broken=30, regressed=21, improved=9)  # +4 pts, p ≈ .02
    quiet = ABShape(n=300, stable_broken=30, regressed=15, improved=15)
    # The floor: z(.975) + z(.98) standard errors of three quiet nights pooled, at their noise
    # discordance (twice the smaller count, 45 of 900, plus its A/A shortfall √(2·90/π)).
    psi = (90 + math.sqrt(2 * 90 / math.pi)) / 900
    floor = (norm.ppf(0.975) + norm.ppf(0.98)) * math.sqrt(psi / 900)
    assert round(floor * 100, 1) == 4.4
    for i in (0, 1):
        store_night(db, tmp_path, i, step)

    def state() -> str:
        return str(
            db.execute("SELECT state FROM omni.alert WHERE kind = 'regression'").fetchone()["state"]
        )

    assert state() == "open"
    for i in range(2, 5):
        store_night(db, tmp_path, i, below)
    below_verdicts = db.execute(
        "SELECT verdict FROM omni.gate_decision WHERE nightly > %s", (D0 + dt.timedelta(days=1),)
    ).fetchall()
    assert "REGRESSED" not in {r["verdict"] for r in below_verdicts}
    assert state() == "open"  # pooled, +4 pts: the bound is above what one night detects
    store_night(db, tmp_path, 5, step)  # REGRESSED again: a new quiet streak starts after it
    for i in range(6, 8):
        store_night(db, tmp_path, i, quiet)
    assert state() == "open"  # two quiet nights are not three
    store_night(db, tmp_path, 8, quiet)
    assert state() == "resolved"
    dispatch(db, sink)
    parent = state_.top_level()[0]["ts"]
    texts = [m["text"] for m in state_.replies(parent)]
    assert any("rule out a regression of +" in t and "wider than min_effect" in t for t in texts)
    assert "3 nights in a row without a regression rule out one of +4.4 pts" in texts[-1]
    assert "at 300 items a night" in texts[-1]


def test_link_keeps_an_alert_open_and_ignore_closes_it_until_a_new_commit(
    db, tmp_path, slack
) -> None:
    """Skia Perf's verbs: link an existing issue (the alert stays open, its message links the
    issue), ignore (it closes like invalid: the key stays quiet until a new commit)."""
    from typer.testing import CliRunner

    from omni_tasks.cli import app

    state, sink = slack
    cli = CliRunner()
    store_night(db, tmp_path, 0, REGRESS, candidate_commit="bad0001")
    dispatch(db, sink)
    (alert_id,) = [r["alert_id"] for r in db.execute("SELECT alert_id FROM omni.alert")]
    db.commit()
    missing = cli.invoke(app, ["alerts", "link", str(alert_id)])
    assert missing.exit_code == 2 and "--issue" in missing.output
    issue = "https://github.com/vllm-project/vllm-omni/issues/9"
    linked = cli.invoke(app, ["alerts", "link", str(alert_id), "--issue", issue, "--by", "bob"])
    assert linked.exit_code == 0, linked.output
    dispatch(db, sink)
    status = json.dumps(state.updates[-1]["blocks"])
    assert "*Linked* by bob" in status and f"{issue}|linked issue" in status
    assert db.execute("SELECT state FROM omni.alert").fetchone()["state"] == "open"

    ignored = cli.invoke(
        app, ["alerts", "ignore", str(alert_id), "--by", "bob", "--note", "known lane flake"]
    )
    assert ignored.exit_code == 0, ignored.output
    dispatch(db, sink)
    assert "*Ignored* by bob" in json.dumps(state.updates[-1]["blocks"])
    assert db.execute("SELECT state FROM omni.alert").fetchone()["state"] == "resolved"
    store_night(db, tmp_path, 1, REGRESS, candidate_commit="bad0001")  # same commit: quiet
    assert db.execute("SELECT count(*) AS n FROM omni.alert").fetchone()["n"] == 1
    store_night(db, tmp_path, 2, REGRESS, candidate_commit="new0002")  # a new commit: opens
    assert db.execute("SELECT count(*) AS n FROM omni.alert").fetchone()["n"] == 2
    db.commit()
    kinds = {r["kind"] for r in db.execute("SELECT kind FROM omni.event")}
    assert {"alert_linked", "alert_ignored"} <= kinds
